"""The run directories of a working directory as `run` and `resume` make, find, lock and
read them: this module's functions are the `RunDirectories` of application/launching.py.
And a run's directory made ready for its driver, once the run is wired.

Each function imports what it uses when it is called: the order of a start refuses a
bad setting before the run directories are read, and such a refusal pays only for
what it read."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from claudeloop.application.errors import UsageError

if TYPE_CHECKING:
    from claudeloop.adapters.redaction import Redactor
    from claudeloop.adapters.run_directory.layout import EventLog, RunDirectory
    from claudeloop.adapters.run_directory.lock import DriverLock
    from claudeloop.application.launching import RunLock
    from claudeloop.application.ports import Clock
    from claudeloop.application.records import RunRecord, RunSpec


def refuse_beside_a_live_run(cwd: Path) -> None:
    from claudeloop.adapters.run_directory import live

    live.refuse_beside_a_live_run(cwd)


def why_no_runs_root(cwd: Path) -> str | None:
    from claudeloop.adapters.run_directory import writable

    return writable.why_no_runs_root(cwd)


def why_not_writable(path: Path) -> str | None:
    from claudeloop.adapters.run_directory import writable

    return writable.why_not_writable(path)


def new_record(spec: RunSpec, run_id: str | None) -> RunRecord:
    from claudeloop.adapters.run_directory.layout import new_run_id
    from claudeloop.adapters.system_clock import SystemClock
    from claudeloop.application.records import RunRecord
    from claudeloop.domain.budget import BudgetLedger
    from claudeloop.domain.loop import RunState

    now = SystemClock().now()
    state = RunState(ledger=BudgetLedger(budget=spec.budget))
    return RunRecord(run_id=run_id or new_run_id(now), spec=spec, state=state, started_at=now)


def create(record: RunRecord) -> RunDirectory:
    """The run's directory, with its record in it at once: a run killed during the slow
    start of the CLI is one `resume` can continue."""
    from claudeloop.adapters.run_directory.layout import RunDirectory

    try:
        directory = RunDirectory.create(record.spec.cwd, record.run_id)
    except FileExistsError:
        raise UsageError(
            f"run id {record.run_id!r} is already used in {record.spec.cwd}; "
            "pick another --run-id or resume it"
        ) from None
    except OSError as error:
        raise UsageError(f"cannot make the run's directory: {error}") from None
    try:
        directory.save(record)
    except OSError as error:
        with contextlib.suppress(OSError):
            directory.path.rmdir()  # no run without a record, for resume to refuse
        raise UsageError(f"cannot save the run's record: {error}") from None
    return directory


def find(cwd: Path, run_id: str | None, session_id: str | None) -> RunDirectory:
    from claudeloop.adapters.run_directory.finding import find_run
    from claudeloop.adapters.run_directory.layout import keep_out_of_git

    directory = find_run(cwd, run_id, session_id)
    keep_out_of_git(directory.path.parent.parent.parent)  # a folder made before
    return directory


def lock(directory: RunDirectory) -> DriverLock:
    from claudeloop.adapters.run_directory.finding import take_lock

    return take_lock(directory)


def load(directory: RunDirectory) -> RunRecord:
    from claudeloop.adapters.run_directory.finding import load_record

    return load_record(directory)


def write_missing_summary(directory: RunDirectory, record: RunRecord) -> None:
    from claudeloop.adapters.run_directory import finding

    finding.write_missing_summary(directory, record, locked=True)


def tell_missing_end(directory: RunDirectory, record: RunRecord) -> None:
    from claudeloop.adapters.run_directory import finding

    finding.tell_missing_end(directory, record)


def run_id_used(cwd: Path, run_id: str) -> bool:
    """Whether `cwd` has a run of that id already (its directory, or its branch)."""
    from claudeloop.adapters.git_checkpoint import branch_exists, repository_top, run_branch
    from claudeloop.adapters.run_directory.layout import runs_root

    if (runs_root(cwd) / run_id).exists():
        return True
    top = repository_top(cwd)
    return top is not None and branch_exists(top, run_branch(run_id))


def ready_to_drive(
    directory: RunDirectory, record: RunRecord, lock: RunLock, *, redactor: Redactor, clock: Clock
) -> tuple[RunDirectory, EventLog]:
    """The run's directory ready for its driver, who holds `lock`: the run's worktree
    where it was (made again when it was removed), what a kill mid-write left removed,
    every file written from here masking the run's secrets, and its event log open. The
    lock is released when it cannot be made ready."""
    from claudeloop.adapters.git_checkpoint import restore_worktree
    from claudeloop.adapters.run_directory.layout import EventLog

    try:
        if record.spec.worktree is not None:
            restore_worktree(record.spec.worktree, record.run_id, repository=record.spec.cwd)
        directory.clear_control()
        remove_temporaries(directory, record.spec)
        directory = replace(directory, redactor=redactor)
        try:
            log = EventLog(directory, clock, redactor)
        except OSError as error:
            raise UsageError(
                f"{directory.events_path}: cannot be written ({error.strerror or error}); "
                "claudeloop writes only a regular file of its own there"
            ) from None
    except BaseException:
        lock.release()
        raise
    return directory, log


def remove_temporaries(directory: RunDirectory, spec: RunSpec) -> None:
    """What a kill mid-write left: state.json's at once (the lock is ours, so no one else
    writes it), the control inbox's and the plan's once a minute old (a `stop`, another
    run on the same plan may be writing them now)."""
    from claudeloop.adapters.atomic_file import remove_leftovers

    remove_leftovers(directory.state_path, unmarked=True)
    remove_leftovers(directory.control_path, older_than=60, unmarked=True)
    if spec.plan_path is not None:
        remove_leftovers(spec.plan_path, older_than=60)
