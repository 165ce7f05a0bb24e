"""Which run a command means: by --run-id, by the Claude session it used, the one a live
driver is driving, or the newest; each refusal is one line naming what was asked."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path

import claudeloop
from claudeloop.adapters.redaction import Redactor
from claudeloop.adapters.run_directory.codec import (
    FORMAT_VERSION,
    CorruptRecordError,
    NewerRecordError,
)
from claudeloop.adapters.run_directory.layout import (
    EventLog,
    RunDirectory,
    list_runs,
    run_id_problem,
    runs_root,
)
from claudeloop.adapters.run_directory.live import newest_live
from claudeloop.adapters.run_directory.lock import DriverLock, RunLocked, acquire, live_driver
from claudeloop.adapters.system_clock import SystemClock
from claudeloop.application.errors import NoRun, UsageError
from claudeloop.application.events import RunFinished
from claudeloop.application.records import RunRecord


def checked_run_id(run_id: str) -> str:
    """`run_id`, or a one-line error: a run id names one directory under runs/, so
    `../x`, `/abs` or `a/b` would read or write somewhere else."""
    problem = run_id_problem(run_id)
    if problem is not None:
        shown = repr(run_id if len(run_id) <= 60 else run_id[:60] + "...")
        raise UsageError(f"--run-id {shown} {problem}")
    return run_id


def find_run(cwd: Path, run_id: str | None, session_id: str | None) -> RunDirectory:
    """The run named by `run_id`, else the one that used `session_id`, else the newest."""
    if run_id is not None:
        directory = RunDirectory(runs_root(cwd) / checked_run_id(run_id))
        if not directory.path.is_dir():
            raise UsageError(f"--run-id {run_id}: no such run in {runs_root(cwd)}")
        return directory
    runs = list_runs(cwd)
    if session_id is not None:
        for directory in runs:
            try:
                record = directory.load()
                if session_id in (record.session_id, *record.lost_sessions):
                    return directory
            except (OSError, CorruptRecordError):
                continue
        raise UsageError(f"--session-id {session_id}: no run of {cwd} used that session")
    if not runs:
        raise NoRun(f"no claudeloop run in {cwd}; start one with `claudeloop run PLAN`")
    return runs[0]


def live_run(cwd: Path) -> tuple[RunDirectory, int] | None:
    """The newest run of `cwd` a live driver is driving, and the driver's pid."""
    live = newest_live(cwd)
    return (RunDirectory(live[0]), live[1]) if live is not None else None


def watched_run(cwd: Path, run_id: str | None) -> RunDirectory:
    """What status, logs, stop and wind-down act on: the --run-id run; without one, the
    run a live driver is driving (the newest, if several are), else the newest run."""
    if run_id is None:
        live = live_run(cwd)
        if live is not None:
            return live[0]
    return find_run(cwd, run_id, None)


def load_record(directory: RunDirectory) -> RunRecord:
    try:
        return directory.load()
    except FileNotFoundError:
        raise UsageError(
            f"{directory.state_path}: missing; the run never started a turn "
            "(start a new one with `claudeloop run`)"
        ) from None
    except NewerRecordError as error:
        raise UsageError(
            f"{directory.state_path}: written by a newer claudeloop (record format "
            f"{error.written}; this one, {claudeloop.__version__}, reads format {FORMAT_VERSION}); "
            "upgrade claudeloop to go on with this run"
        ) from None
    except CorruptRecordError as error:
        raise UsageError(f"{directory.state_path}: unreadable ({error})") from None
    except OSError as error:
        raise UsageError(f"{directory.state_path}: cannot be read ({error.strerror})") from None


def write_missing_summary(
    directory: RunDirectory, record: RunRecord, *, locked: bool = False
) -> None:
    """summary.md of a run that ended without one (killed after its last save), written
    when the run is next looked at; nothing if it cannot be written. `locked`: the caller
    holds the run's lock, so no driver is about to write it."""
    if not record.state.phase.terminal or directory.summary_path.exists():
        return
    if not locked and live_driver(directory.lock_path) is not None:
        return  # its driver is about to write it
    with contextlib.suppress(OSError):
        replace(directory, redactor=Redactor.from_environment()).write_summary(record)


def tell_missing_end(directory: RunDirectory, record: RunRecord) -> None:
    """run.finished of a run that ended without saying so (stopped between its last
    save and that event: a kill, a fleet worker's lease that lapsed), told by a resume
    that holds the run's lock and finds it ended; nothing if the log cannot be written."""
    outcome = record.state.outcome
    if outcome is None:
        return
    last = None
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for event in directory.read_events():
            last = event.get("type")
    if last == RunFinished.type:
        return
    with contextlib.suppress(OSError):
        log = EventLog(directory, SystemClock(), Redactor.from_environment())
        try:
            log.emit(
                RunFinished(
                    outcome=outcome, exit_code=record.state.exit_code, reason=record.state.reason
                )
            )
        finally:
            log.close()


def take_lock(directory: RunDirectory) -> DriverLock:
    """The run's lock, or one line saying why not (a live driver, a planted link)."""
    try:
        return acquire(directory.lock_path)
    except RunLocked as locked:
        raise UsageError(
            f"run {directory.run_id} is already being driven by process {locked.pid}; "
            "use `claudeloop status` to watch it or `claudeloop stop` to end it"
        ) from None
    except OSError as error:
        raise UsageError(
            f"{directory.lock_path}: cannot be locked ({error.strerror or error}); "
            "claudeloop locks only a regular file of its own there"
        ) from None
