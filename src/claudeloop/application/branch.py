"""`diff`, `rewind` and `merge`: a run's branch (--worktree, --checkpoint) reviewed,
turns undone, and merged back into the branch the run came from, on the `RunBranches`
port (the repository and the run's directory; the composition root fills it); and the
run `merge --resolve` starts when the merge conflicts (`resolving_run`)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from claudeloop.application.errors import UsageError
from claudeloop.application.events import BranchRewound, plan_history
from claudeloop.application.launching import NewRun
from claudeloop.application.prompts import resolve_task, rewound_prompt
from claudeloop.application.records import RunRecord
from claudeloop.domain.plan import WorkPlan, open_items_at, plan_after_rewind


@dataclass(frozen=True, slots=True)
class Merged:
    """A merge of a run's branch: `sha` the merge's commit (None: it did not apply and
    was undone), `conflicts` the files that conflicted."""

    sha: str | None
    conflicts: tuple[str, ...] = ()


class RunBranches(Protocol):
    """A project's runs and their branches, as `diff`, `rewind` and `merge` need them."""

    def record(self, cwd: Path, run_id: str | None) -> RunRecord:
        """The run's record (the live or newest one when `run_id` is None)."""
        ...

    def held(self, cwd: Path, run_id: str) -> AbstractContextManager[None]:
        """The run's lock, held for the block: no driver sends a turn meanwhile (one
        line, exit 2, when a driver holds it)."""
        ...

    def diff(self, work_dir: Path, run_id: str, turn: int | None, *, stat: bool) -> str:
        """The patch (or diffstat) of the run's commits, `turn`'s alone; "" for none."""
        ...

    def rewind(self, work_dir: Path, run_id: str, turn: int, *, own: bool) -> tuple[str, list[int]]:
        """The branch reset to `turn`'s commit: the commit it is on, the turns undone."""
        ...

    def events(self, cwd: Path, run_id: str) -> list[dict[str, Any]]:
        """The run's events, as events.jsonl holds them."""
        ...

    def plan_file(self, path: Path) -> WorkPlan | None:
        """The plan file as it is now (None: none, or unreadable)."""
        ...

    def save(self, cwd: Path, record: RunRecord) -> None: ...

    def tell(self, cwd: Path, run_id: str, event: BranchRewound) -> None:
        """`event` appended to the run's events (the lock is held)."""
        ...

    def repository_top(self, cwd: Path) -> Path | None: ...

    def merge(self, repository: Path, branch: str, into: str) -> Merged: ...

    def facts(self, work_dir: Path, run_id: str) -> dict[str, object]:
        """The branch, the run's commits on it and their diffstat, as `status` shows
        them (OSError: the worktree is gone)."""
        ...


def committing_run(runs: RunBranches, cwd: Path, run_id: str | None) -> RunRecord:
    """The run, which must commit (a branch of its own, or --checkpoint's)."""
    record = runs.record(cwd, run_id)
    if not record.spec.checkpoint:
        raise UsageError(
            f"run {record.run_id} commits nothing (it was started without --worktree or "
            "--checkpoint): it has no branch of its own to show, rewind or merge"
        )
    return record


def show_diff(
    runs: RunBranches, cwd: Path, run_id: str | None, turn: int | None, *, stat: bool
) -> str:
    """`diff`: what the run's commits changed (`turn`'s alone)."""
    record = committing_run(runs, cwd, run_id)
    shown = runs.diff(record.spec.work_dir, record.run_id, turn, stat=stat)
    if not shown:
        which = f"turn {turn}" if turn is not None else "any turn"
        raise UsageError(
            f"run {record.run_id} has no commit of {which} (a turn that changed nothing "
            "makes none); `claudeloop status` lists its commits"
        )
    return shown


@dataclass(frozen=True, slots=True)
class Rewound:
    run_id: str
    sha: str
    undone: tuple[int, ...]


def rewind_run(
    runs: RunBranches, cwd: Path, run_id: str | None, to_turn: int, reason: str | None
) -> Rewound:
    """`rewind`: the branch reset to `to_turn`, the plan's checkmarks of the undone turns
    taken back, and the next turn told what was undone (`RunRecord.rewound`)."""
    chosen = committing_run(runs, cwd, run_id)
    with runs.held(cwd, chosen.run_id):
        record = runs.record(cwd, chosen.run_id)  # as it is now the lock is ours
        sha, undone = runs.rewind(
            record.spec.work_dir, record.run_id, to_turn, own=record.spec.worktree is not None
        )
        if undone:
            note = rewound_prompt(to_turn, tuple(undone), reason)
            settled = max(record.checkpointed_turn, record.answered_turn)
            plan = record.plan
            if plan is not None:  # the checkmarks of the undone turns go too
                path = record.spec.plan_path
                plan = plan_after_rewind(
                    plan,
                    open_then=open_items_at(plan_history(runs.events(cwd, record.run_id)), to_turn),
                    file_then=runs.plan_file(path) if path is not None else None,
                )
            runs.save(cwd, replace(record, rewound=note, checkpointed_turn=settled, plan=plan))
            runs.tell(
                cwd,
                record.run_id,
                BranchRewound(to_turn=to_turn, sha=sha, undone=tuple(undone), reason=reason),
            )
    return Rewound(record.run_id, sha, tuple(undone))


@dataclass(frozen=True, slots=True)
class MergeAsked:
    """What `merge` found: the run, its branch, the branch it came from, and how the
    merge went."""

    record: RunRecord
    branch: str
    base: str
    merged: Merged


def merge_run(runs: RunBranches, cwd: Path, run_id: str | None) -> MergeAsked:
    """`merge`: the run's branch merged into the branch its worktree was made from (a
    merge that conflicts is undone; `merged.conflicts` names the files)."""
    record = committing_run(runs, cwd, run_id)
    base = record.spec.base_branch
    if record.spec.worktree is None or base is None:
        raise UsageError(
            f"run {record.run_id} committed on the branch it ran on (--checkpoint, or a "
            "worktree of a detached HEAD): there is no branch to merge it into"
        )
    top = runs.repository_top(record.spec.cwd)
    if top is None:
        raise UsageError(f"{record.spec.cwd} is no longer in a git repository")
    branch = f"claudeloop/{record.run_id}"
    return MergeAsked(record, branch, base, runs.merge(top, branch, base))


@dataclass(frozen=True, slots=True)
class Resolving:
    """`merge --resolve` of a merge that conflicted: `run`, the run to start, whose task
    is to resolve `conflicts`, in a worktree of its own made from `base` with `branch`
    merged in, its conflicts left in the files."""

    branch: str
    base: str
    conflicts: tuple[str, ...]
    run: NewRun


def resolving_run(asked: MergeAsked, *, run_id_used: Callable[[Path, str], bool]) -> Resolving:
    """The run that resolves a conflicted merge: verified by the merged run's own
    --verify checks, on its profile, permission mode and model; named after it
    (`RUN-resolve`, else `RUN-resolve-2`, ... the first no run of its directory uses).
    Its first commit concludes the merge, and `claudeloop merge` of it then applies
    cleanly."""
    if asked.merged.sha is not None:
        raise ValueError(f"{asked.branch} merged into {asked.base}: nothing to resolve")
    record, conflicts = asked.record, asked.merged.conflicts
    spec = record.spec
    flags: dict[str, object] = {
        "worktree": True,
        "verify": tuple(check.text for check in spec.verify.checks),  # as click gives it
        "profile": spec.profile,
        "permission_mode": spec.permission_mode,
    }
    if spec.model is not None:
        flags["model"] = spec.model
    wanted = f"{record.run_id}-resolve"
    chosen, number = wanted, 1
    while run_id_used(spec.cwd, chosen):
        number += 1
        chosen = f"{wanted}-{number}"
    run = NewRun(
        cwd=spec.cwd,
        task=resolve_task(asked.branch, asked.base, conflicts),
        plan_path=None,
        run_id=chosen,
        flags=flags,
        merging=asked.branch,
    )
    return Resolving(asked.branch, asked.base, conflicts, run)
