"""A session whose transcript Claude Code could not save is never resumed: the runner
hands the next turn to a new session, ends the run at a second loss, and keeps the loss
in the record for a resume after a crash or after the run ended."""

from __future__ import annotations

from dataclasses import replace

from claudeloop.application.summary import result_object, summary_markdown
from claudeloop.domain.budget import Budget
from claudeloop.domain.loop import Outcome, Phase, reopen
from tests.application.fakes import rejected_turn, verdict_turn
from tests.application.test_runner import WINDOW_REJECTED, drive, harness, record


def test_a_turn_whose_session_lost_its_writes_hands_the_next_to_a_new_session() -> None:
    h = harness(
        [
            verdict_turn(remaining=("write b",), session_id="s-1"),
            replace(verdict_turn(remaining=("write c",), session_id="s-1"), writes_lost=("s-1",)),
            verdict_turn(complete=True, summary="all done", session_id="s-2"),
        ]
    )
    final = drive(h, record(task="Build the three files."))
    assert final.state.outcome is Outcome.DONE
    # The third turn is no resume of s-1: a new session, told the task again.
    assert h.gateway.sessions == [None, "s-1", None]
    handoff = h.gateway.prompts[2]
    assert "Build the three files." in handoff
    assert "could not save its conversation" in handoff
    assert "- write c" in handoff
    assert final.lost_sessions == ("s-1",)
    assert final.session_id == "s-2"
    (lost,) = h.events.of("session.writes_lost")
    assert (lost["session_id"], lost["action"]) == ("s-1", "new_session")
    # Said after the turn it came with, before the next turn starts.
    assert h.events.types()[4:7] == ["turn.finished", "session.writes_lost", "turn.started"]
    # Saved before it is said: the record a crash would resume from already lets s-1 go.
    at_loss = next(saved for saved in h.store.saved if saved.lost_sessions)
    assert at_loss.session_id is None


def test_a_second_loss_in_a_row_ends_the_run_failed_with_the_reason() -> None:
    h = harness(
        [
            replace(verdict_turn(remaining=("b",), session_id="s-1"), writes_lost=("s-1",)),
            replace(verdict_turn(remaining=("c",), session_id="s-2"), writes_lost=("s-2",)),
            verdict_turn(complete=True, session_id="s-3"),
        ]
    )
    final = drive(h, record())
    assert final.state.outcome is Outcome.FAILED
    assert final.state.outcome.exit_code == 1
    assert "could not save the transcript of 2 sessions" in (final.state.reason or "")
    assert h.gateway.sessions == [None, None]  # no third turn, and s-1 never resumed
    assert final.lost_sessions == ("s-1", "s-2")
    assert [e["action"] for e in h.events.of("session.writes_lost")] == ["new_session", "stop"]
    assert h.events.of("run.finished")[0]["exit_code"] == 1


def test_a_loss_heard_as_the_run_ends_is_saved_so_a_later_resume_starts_a_new_session() -> None:
    h = harness([verdict_turn(remaining=("b",), session_id="s-1")])
    h.gateway.lost_at_close = ("s-1",)
    capped = drive(h, record(budget=Budget(max_turns=1)))
    assert capped.state.outcome is Outcome.BUDGET_EXHAUSTED
    assert (capped.session_id, capped.lost_sessions) == (None, ("s-1",))
    assert h.store.last == capped
    types = h.events.types()
    assert types[-2:] == ["session.writes_lost", "run.finished"]
    assert "Lost transcripts: s-1" in summary_markdown(capped)
    assert result_object(capped)["lost_sessions"] == ["s-1"]

    # `claudeloop resume`, with a cap raised: the first turn is a new session's, handed off.
    raised = replace(
        capped,
        spec=replace(capped.spec, budget=Budget(max_turns=3)),
        state=reopen(
            replace(capped.state, ledger=replace(capped.state.ledger, budget=Budget(max_turns=3)))
        ),
    )
    again = harness([verdict_turn(complete=True, session_id="s-2")])
    final = drive(again, raised, resumed=True)
    assert final.state.outcome is Outcome.DONE
    assert again.gateway.sessions == [None]
    assert "could not save its conversation" in again.gateway.prompts[0]


def test_a_resume_after_a_crash_never_resumes_a_session_let_go_of() -> None:
    crashed = replace(
        record(),
        state=replace(record().state, phase=Phase.RUNNING),
        lost_sessions=("s-1",),
        turn_in_flight=None,
    )
    crashed = replace(
        crashed, state=replace(crashed.state, ledger=crashed.state.ledger.spend_turn(0.1))
    )
    h = harness([verdict_turn(complete=True, session_id="s-2")])
    final = drive(h, crashed, resumed=True)
    assert h.gateway.sessions == [None]
    assert "could not save its conversation" in h.gateway.prompts[0]
    assert final.state.outcome is Outcome.DONE


def test_a_failed_turn_whose_session_lost_its_writes_keeps_the_loss() -> None:
    failed = replace(rejected_turn(WINDOW_REJECTED), failure="Claude Code crashed", session_id=None)
    h = harness(
        [verdict_turn(remaining=("b",), session_id="s-1"), replace(failed, writes_lost=("s-1",))]
    )
    final = drive(h, record())
    assert final.state.outcome is Outcome.FAILED
    assert (final.session_id, final.lost_sessions) == (None, ("s-1",))
    assert [e["action"] for e in h.events.of("session.writes_lost")] == ["new_session"]


def test_a_loss_of_another_session_is_kept_and_the_run_stays_on_its_own() -> None:
    h = harness(
        [
            replace(verdict_turn(remaining=("b",), session_id="s-1"), writes_lost=("s-0",)),
            verdict_turn(complete=True, session_id="s-1"),
        ]
    )
    final = drive(h, record())
    assert h.gateway.sessions == [None, "s-1"]
    assert final.lost_sessions == ("s-0",)
    assert h.events.of("session.writes_lost") == []
