"""`diff`, `rewind` and `merge` as use cases on the `RunBranches` port, with a branch in
memory that behaves: commits by turn, a lock, a repository with a current branch.
(tests/e2e/test_worktrees.py drives the real git through the command line.)"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from claudeloop.application.branch import (
    Merged,
    merge_run,
    resolving_run,
    rewind_run,
    show_diff,
)
from claudeloop.application.errors import UsageError
from claudeloop.application.events import BranchRewound, event_fields
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.loop import RunState
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.verification import parse_checks
from tests.application.fakes import START

CWD = Path("/src/app")
TREE = Path("/state/worktrees/r1")


def committing(run_id: str = "r1", *, worktree: bool = True) -> RunRecord:
    spec = RunSpec(
        cwd=CWD,
        task="t",
        checkpoint=True,
        worktree=TREE if worktree else None,
        base_branch="main" if worktree else None,
        plan_path=CWD / "PLAN.md",
    )
    plan = WorkPlan.parse("- [x] one\n- [x] two\n- [ ] three\n")
    return RunRecord(
        run_id=run_id, spec=spec, state=RunState(), started_at=START, plan=plan, answered_turn=3
    )


@dataclass
class MemoryBranches:
    records: dict[str, RunRecord] = field(default_factory=dict)
    commits: list[int] = field(default_factory=lambda: [1, 2, 3])
    lines: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    told: list[BranchRewound] = field(default_factory=list)
    locked: bool = False
    driven: bool = False
    current: str = "main"
    conflicting: tuple[str, ...] = ()

    def record(self, cwd: Path, run_id: str | None) -> RunRecord:
        chosen = run_id or next(iter(self.records))
        if chosen not in self.records:
            raise UsageError(f"--run-id {chosen}: no such run in {cwd}")
        return self.records[chosen]

    @contextmanager
    def held(self, cwd: Path, run_id: str) -> Iterator[None]:
        if self.driven:
            raise UsageError(f"run {run_id} is already being driven by process 7")
        self.locked = True
        try:
            yield
        finally:
            self.locked = False

    def diff(self, work_dir: Path, run_id: str, turn: int | None, *, stat: bool) -> str:
        shown = [n for n in self.commits if turn is None or n == turn]
        return "".join(f"{'stat' if stat else 'patch'} of turn {n}\n" for n in shown)

    def rewind(self, work_dir: Path, run_id: str, turn: int, *, own: bool) -> tuple[str, list[int]]:
        assert self.locked
        undone = [n for n in self.commits if n > turn]
        self.commits = [n for n in self.commits if n <= turn]
        return "ab" * 20, undone

    def events(self, cwd: Path, run_id: str) -> list[dict[str, Any]]:
        return self.lines.get(run_id, [])

    def plan_file(self, path: Path) -> WorkPlan | None:
        return None

    def save(self, cwd: Path, record: RunRecord) -> None:
        assert self.locked
        self.records[record.run_id] = record

    def tell(self, cwd: Path, run_id: str, event: BranchRewound) -> None:
        assert self.locked
        self.told.append(event)

    def repository_top(self, cwd: Path) -> Path | None:
        return cwd

    def merge(self, repository: Path, branch: str, into: str) -> Merged:
        assert into == self.current
        if self.conflicting:
            return Merged(sha=None, conflicts=self.conflicting)
        return Merged(sha="cd" * 20)

    def facts(self, work_dir: Path, run_id: str) -> dict[str, object]:
        return {"branch": f"claudeloop/{run_id}", "commits": self.commits, "diffstat": ""}


def plan_said(turn: int, still_open: list[str]) -> list[dict[str, Any]]:
    from claudeloop.application.events import PlanUpdated, TurnStarted

    started, updated = (
        TurnStarted(turn=turn, session_id="s"),
        PlanUpdated(done=3 - len(still_open), total=3, open=tuple(still_open)),
    )
    return [
        {**event_fields(started), "type": started.type},
        {**event_fields(updated), "type": updated.type},
    ]


def test_a_rewind_undoes_the_later_turns_their_checkmarks_and_tells_the_next_turn() -> None:
    runs = MemoryBranches({"r1": committing()})
    runs.lines["r1"] = plan_said(1, ["two", "three"]) + plan_said(2, ["three"])
    done = rewind_run(runs, CWD, None, 1, "wrong approach")
    assert (done.run_id, done.undone) == ("r1", (2, 3))
    saved = runs.records["r1"]
    assert saved.rewound is not None
    assert "wrong approach" in saved.rewound
    assert saved.plan is not None
    assert [item.done for item in saved.plan.items] == [True, False, False]
    assert saved.checkpointed_turn == 3
    assert runs.told == [
        BranchRewound(to_turn=1, sha="ab" * 20, undone=(2, 3), reason="wrong approach")
    ]
    assert not runs.locked


def test_a_rewind_with_nothing_after_the_turn_changes_nothing() -> None:
    runs = MemoryBranches({"r1": committing()})
    done = rewind_run(runs, CWD, "r1", 3, None)
    assert done.undone == ()
    assert runs.records["r1"] == committing()
    assert runs.told == []


def test_a_driven_run_is_not_rewound() -> None:
    runs = MemoryBranches({"r1": committing()}, driven=True)
    with pytest.raises(UsageError, match="already being driven"):
        rewind_run(runs, CWD, "r1", 1, None)
    assert runs.commits == [1, 2, 3]


def test_a_run_that_commits_nothing_has_no_branch_to_show() -> None:
    plain = replace(committing(), spec=replace(committing().spec, checkpoint=False))
    runs = MemoryBranches({"r1": plain})
    for ask in (
        lambda: show_diff(runs, CWD, None, None, stat=False),
        lambda: rewind_run(runs, CWD, None, 1, None),
        lambda: merge_run(runs, CWD, None),
    ):
        with pytest.raises(UsageError, match="commits nothing"):
            ask()


def test_a_diff_of_a_turn_without_a_commit_says_where_to_look() -> None:
    runs = MemoryBranches({"r1": committing()})
    assert show_diff(runs, CWD, "r1", 2, stat=True) == "stat of turn 2\n"
    with pytest.raises(UsageError, match="has no commit of turn 9"):
        show_diff(runs, CWD, "r1", 9, stat=False)


def test_a_merge_goes_into_the_branch_the_worktree_came_from_or_names_the_conflicts() -> None:
    runs = MemoryBranches({"r1": committing()})
    asked = merge_run(runs, CWD, "r1")
    assert (asked.branch, asked.base, asked.merged.sha) == ("claudeloop/r1", "main", "cd" * 20)
    runs.conflicting = ("a.py",)
    assert merge_run(runs, CWD, "r1").merged == Merged(sha=None, conflicts=("a.py",))


def test_a_checkpointed_run_has_no_branch_to_merge_into() -> None:
    runs = MemoryBranches({"r1": committing(worktree=False)})
    with pytest.raises(UsageError, match="no branch to merge it into"):
        merge_run(runs, CWD, "r1")


def test_a_conflicted_merge_is_resolved_by_a_run_in_a_worktree_checked_as_the_run_was() -> None:
    record = committing()
    spec = replace(
        record.spec,
        profile="local",
        permission_mode="acceptEdits",
        model="opus",
        verify=replace(record.spec.verify, checks=parse_checks(["make test", "ruff check"])),
    )
    runs = MemoryBranches({"r1": replace(record, spec=spec)}, conflicting=("a.py", "b.py"))
    resolving = resolving_run(merge_run(runs, CWD, "r1"), run_id_used=lambda cwd, run_id: False)
    assert (resolving.branch, resolving.base, resolving.conflicts) == (
        "claudeloop/r1",
        "main",
        ("a.py", "b.py"),
    )
    run = resolving.run
    assert (run.cwd, run.run_id, run.plan_path, run.merging) == (
        CWD,
        "r1-resolve",
        None,
        "claudeloop/r1",
    )
    assert dict(run.flags) == {
        "worktree": True,
        "verify": ("make test", "ruff check"),
        "profile": "local",
        "permission_mode": "acceptEdits",
        "model": "opus",
    }
    assert "claudeloop/r1 is being merged into main" in run.task
    assert "- a.py\n- b.py" in run.task


def test_the_resolving_run_takes_the_first_name_its_directory_has_not_used() -> None:
    runs = MemoryBranches({"r1": committing()}, conflicting=("a.py",))
    used = {(CWD, "r1-resolve"), (CWD, "r1-resolve-2")}
    resolving = resolving_run(
        merge_run(runs, CWD, "r1"), run_id_used=lambda cwd, run_id: (cwd, run_id) in used
    )
    assert resolving.run.run_id == "r1-resolve-3"
    assert "model" not in resolving.run.flags  # the run's own default, as it had


def test_a_clean_merge_has_nothing_to_resolve() -> None:
    asked = merge_run(MemoryBranches({"r1": committing()}), CWD, "r1")
    with pytest.raises(ValueError, match="nothing to resolve"):
        resolving_run(asked, run_id_used=lambda cwd, run_id: False)
