"""A commit per answered turn: the runner commits after the turn's record is saved, once
the turn is settled, and reconciles with the branch after a crash."""

from __future__ import annotations

import pytest

from claudeloop.application.records import RunRecord
from claudeloop.domain.loop import Outcome
from tests.application.fakes import FakeBranch, rejected_turn, verdict_turn
from tests.application.test_runner import OK, WINDOW_REJECTED, Harness, drive, harness, record
from tests.application.test_runner_verification import verified


class Killed(BaseException):
    """The driver's process ended here (kill -9)."""


def three_turns() -> Harness:
    return harness(
        [
            verdict_turn(remaining=("b", "c"), summary="wrote a", session_id="s-1"),
            verdict_turn(remaining=("c",), summary="wrote b", session_id="s-1"),
            verdict_turn(complete=True, summary="wrote c", session_id="s-1"),
        ]
    )


def committing(h: Harness, branch: FakeBranch | None = None) -> FakeBranch:
    branch = branch or FakeBranch()
    h.runner.checkpoints = branch
    return branch


def test_each_answered_turn_is_one_commit_whose_trailers_say_the_run_turn_and_cost() -> None:
    h = three_turns()
    branch = committing(h)
    final = drive(h, record())
    assert final.state.outcome is Outcome.DONE
    assert [turn for turn, _ in branch.commits] == [1, 2, 3]
    first = branch.commits[0][1]
    assert first.splitlines()[0] == "wrote a"
    assert "Claudeloop-Run: run-1\nClaudeloop-Turn: 1\nClaudeloop-Cost: $0.0100" in first
    assert final.answered_turn == final.checkpointed_turn == 3
    committed = h.events.of("turn.committed")
    assert [(e["turn"], e["files_changed"], e["branch"]) for e in committed] == [
        (1, 1, "claudeloop/run-1"),
        (2, 1, "claudeloop/run-1"),
        (3, 1, "claudeloop/run-1"),
    ]
    types = h.events.types()
    # Each commit is said after its turn, and the last before the run ends.
    assert types.index("turn.committed") > types.index("turn.finished")
    assert types[-2:] == ["turn.committed", "run.finished"]


def test_a_turn_that_changed_nothing_makes_no_commit_and_is_never_committed_later() -> None:
    h = three_turns()
    branch = committing(h, FakeBranch(changed=[("a.txt",), (), ("c.txt",)]))
    final = drive(h, record())
    assert [turn for turn, _ in branch.commits] == [1, 3]
    assert [e["turn"] for e in h.events.of("turn.committed")] == [1, 3]
    assert final.checkpointed_turn == 3


def test_a_file_holding_a_secret_is_left_out_with_a_warning() -> None:
    h = harness([verdict_turn(complete=True, summary="done")])
    branch = committing(h, FakeBranch(changed=[("a.txt", ".env")], secret=(".env",)))
    drive(h, record())
    refused = h.events.of("commit.refused")
    assert [(e["turn"], e["files"]) for e in refused] == [(1, [".env"])]
    assert "secret" in refused[0]["reason"]
    assert h.events.of("turn.committed")[0]["files_changed"] == 1
    assert len(branch.commits) == 1


def test_only_secrets_changed_makes_no_commit_but_the_warning() -> None:
    h = harness([verdict_turn(complete=True, summary="done")])
    branch = committing(h, FakeBranch(changed=[(".env",)], secret=(".env",)))
    drive(h, record())
    assert branch.commits == []
    assert h.events.of("turn.committed") == []
    assert len(h.events.of("commit.refused")) == 1


def test_a_refused_turn_is_not_committed() -> None:
    h = harness(
        [rejected_turn(WINDOW_REJECTED), verdict_turn(complete=True, summary="done")],
        probes=[OK],
    )
    branch = committing(h)
    final = drive(h, record())
    assert final.state.outcome is Outcome.DONE
    # The second attempt is the one answered: the commit names it.
    assert [turn for turn, _ in branch.commits] == [2]


def test_the_checks_of_the_round_after_a_done_are_trailers_of_its_commit() -> None:
    h = harness(
        [
            verdict_turn(complete=True, summary="all written", session_id="s-1"),
            verdict_turn(complete=True, summary="fixed", session_id="s-1"),
        ]
    )
    rec, _, _ = verified(h, checks=("make test",), endings={"make test": [1, 0]})
    branch = committing(h)
    drive(h, rec)
    assert [turn for turn, _ in branch.commits] == [1, 2]
    assert "Claudeloop-Check: failed make test" in branch.commits[0][1]
    assert "Claudeloop-Check: passed make test" in branch.commits[1][1]


def kill_run(h: Harness, rec: RunRecord, branch: FakeBranch) -> RunRecord:
    with pytest.raises(Killed):
        drive(h, rec)
    return h.store.last


def killed_before_commit(times: list[int]) -> object:
    def kill() -> None:
        times[0] -= 1
        if times[0] == 0:
            raise Killed

    return kill


def test_killed_before_the_commit_the_resume_commits_the_turn_before_the_next() -> None:
    h = three_turns()
    times = [2]  # the second commit never happens
    branch = committing(h, FakeBranch(before_commit=killed_before_commit(times)))  # type: ignore[arg-type]
    saved = kill_run(h, record(), branch)
    assert (saved.answered_turn, saved.checkpointed_turn) == (2, 1)
    assert [turn for turn, _ in branch.commits] == [1]
    served = len(h.gateway.prompts)
    prompts_at_commit: list[int] = []
    branch.before_commit = lambda: prompts_at_commit.append(len(h.gateway.prompts))
    final = drive(h, saved, resumed=True)
    assert [turn for turn, _ in branch.commits] == [1, 2, 3]
    # Turn 2's commit came first: no prompt was sent before it.
    assert prompts_at_commit == [served, served + 1]
    assert final.checkpointed_turn == 3


def test_killed_after_the_commit_the_resume_adopts_it_and_never_commits_twice() -> None:
    h = three_turns()
    times = [2]
    branch = FakeBranch()
    branch.after_commit = killed_before_commit(times)  # type: ignore[assignment]
    committing(h, branch)
    saved = kill_run(h, record(), branch)
    assert (saved.answered_turn, saved.checkpointed_turn) == (2, 1)
    assert [turn for turn, _ in branch.commits] == [1, 2]
    branch.after_commit = None
    final = drive(h, saved, resumed=True)
    assert [turn for turn, _ in branch.commits] == [1, 2, 3]
    assert final.checkpointed_turn == 3
    assert [e["turn"] for e in h.events.of("turn.committed")] == [1, 3]


def test_a_run_without_checkpoints_records_no_turn_numbers() -> None:
    h = three_turns()
    final = drive(h, record())
    assert (final.answered_turn, final.checkpointed_turn) == (0, 0)
