"""A run's work as its dashboard page shows it (application/run_work.py), on the
`RunBranches` port with a branch in memory: each turn's files, then its diff, the
verdicts of that turn's last round of checks, masked; and what the merge and rewind
buttons say before they act. (tests/e2e/test_dashboard_phone.py drives the real git
through a browser.)"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from claudeloop.application.records import RunSpec
from claudeloop.application.run_work import (
    PATCH_CHARS,
    TURNS_SHOWN,
    CheckVerdict,
    merge_said,
    rewind_said,
    run_work,
)
from tests.application.test_branch import CWD, MemoryBranches, committing


@dataclass
class GitLikeBranches(MemoryBranches):
    """The branch's commits as git's facts give them, and a diff as `--stat --patch`."""

    patch_of_3: str = "+step 3\n"

    def facts(self, work_dir: Path, run_id: str) -> dict[str, object]:
        return {
            "branch": f"claudeloop/{run_id}",
            "commits": [
                {"turn": n, "sha": f"{n}" * 40, "subject": f"Wrote step{n}.txt."}
                for n in self.commits
            ],
            "diffstat": "",
        }

    def diff(self, work_dir: Path, run_id: str, turn: int | None, *, stat: bool) -> str:
        assert turn is not None
        assert not stat
        body = self.patch_of_3 if turn == 3 else f"+step {turn}\n"
        return (
            f" step{turn}.txt | 1 +\n 1 file changed, 1 insertion(+)\n\n"
            f"diff --git a/step{turn}.txt b/step{turn}.txt\n{body}"
        )


def _checks(turn: int, *verdicts: tuple[str, bool]) -> list[dict[str, Any]]:
    return [
        {"type": "verify.finished", "turn": turn, "command": command, "passed": passed}
        for command, passed in verdicts
    ]


def _no_mask(event: dict[str, Any]) -> dict[str, Any]:
    return event


def test_each_turn_shows_its_files_then_its_diff_and_its_last_round_of_checks() -> None:
    runs = GitLikeBranches({"r1": committing()})
    runs.lines["r1"] = (
        _checks(3, ("pytest", False), ("ruff", True))
        + _checks(3, ("pytest", True), ("ruff", True))  # the Done's second round
        + _checks(2, ("pytest", False))
    )
    work = run_work(runs, CWD, "r1", mask=_no_mask)
    assert work is not None
    assert (work.branch, work.base, work.mergeable) == ("claudeloop/r1", "main", True)
    assert [turn.turn for turn in work.turns] == [1, 2, 3]
    last = work.turns[-1]
    assert last.files == " step3.txt | 1 +\n 1 file changed, 1 insertion(+)"
    assert last.patch == "diff --git a/step3.txt b/step3.txt\n+step 3\n"
    assert last.checks == (CheckVerdict("pytest", True), CheckVerdict("ruff", True))
    assert work.turns[1].checks == (CheckVerdict("pytest", False),)
    assert work.turns[0].checks == ()


def test_a_long_diff_is_cut_and_a_secret_in_it_is_masked() -> None:
    runs = GitLikeBranches({"r1": committing()}, patch_of_3="+token sk-secret\n" * 10_000)

    def mask(event: dict[str, Any]) -> dict[str, Any]:
        return {
            k: v.replace("sk-secret", "***") if isinstance(v, str) else v for k, v in event.items()
        }

    work = run_work(runs, CWD, "r1", mask=mask)
    assert work is not None
    last = work.turns[-1]
    assert last.cut
    assert len(last.patch) <= PATCH_CHARS
    assert "sk-secret" not in last.patch
    assert "+token ***" in last.patch


def test_a_run_that_commits_nothing_has_no_work_and_one_on_its_own_branch_no_merge() -> None:
    plain = replace(committing(), spec=RunSpec(cwd=CWD, task="t"))
    assert run_work(GitLikeBranches({"r1": plain}), CWD, "r1", mask=_no_mask) is None
    checkpointed = GitLikeBranches({"r1": committing(worktree=False)})
    work = run_work(checkpointed, CWD, "r1", mask=_no_mask)
    assert work is not None
    assert work.base is None
    assert not work.mergeable


def test_the_buttons_say_what_they_will_do_before_they_do_it() -> None:
    work = run_work(GitLikeBranches({"r1": committing()}), CWD, "r1", mask=_no_mask)
    assert work is not None
    merge = merge_said(work)
    assert "Merge claudeloop/r1 into main: the commits of turns 1, 2, 3 land on main" in merge
    assert "conflicts is undone and main is left as it is" in merge
    rewind = rewind_said(work, 1)
    assert "the commits of turns 2, 3 are dropped from claudeloop/r1" in rewind
    assert "claudeloop rewind r1 --to-turn 1" in rewind
    assert "where the run began" in rewind_said(work, 0)
    assert "nothing is undone" in rewind_said(work, 3)


def test_a_long_run_shows_its_last_turns_and_counts_the_earlier_ones() -> None:
    runs = GitLikeBranches({"r1": committing()}, commits=list(range(1, TURNS_SHOWN + 11)))
    work = run_work(runs, CWD, "r1", mask=_no_mask)
    assert work is not None
    assert [turn.turn for turn in work.turns] == list(range(11, TURNS_SHOWN + 11))
    assert work.earlier == 10
    assert "the commits of turns 10 earlier and 11, 12," in merge_said(work)
