"""A worker: a DBOS application that takes runs from the fleet's queue and drives each
with the unchanged claudeloop command line, as a child process in the run's directory.

The first time a run is taken its child is `claudeloop run ... --run-id ID`; when the
run directory already holds a record (a worker died or was stopped mid-run) it is
`claudeloop resume --run-id ID`, which keeps the run's Claude session, ledger and probe
instant. The child's exit code is the workflow's result.

Stopping (SIGTERM or SIGINT): no new child starts, every running child gets SIGTERM
(claudeloop stops at a safe point and exits 130) and the worker exits 130 without
recording those runs as ended. They stay pending under this worker's executor id, and
DBOS recovers them when a worker with that id starts again: the id is stable per
machine and state directory.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from claudeloop.adapters.fleet.engine import ENGINE_VARIABLE, Engine
from claudeloop.adapters.fleet.queue import (
    APPLICATION,
    APPLICATION_VERSION,
    QUEUE,
    WORKFLOW,
    FleetUnavailable,
    Order,
    init_schema,
    quiet_dbos,
    said,
)
from claudeloop.adapters.run_directory.layout import RunDirectory, runs_root
from claudeloop.adapters.run_directory.lock import live_driver
from claudeloop.adapters.shared_capacity.board import FLEET_BOARD_VARIABLE

STOPPED_EXIT = 130
USAGE_EXIT = 2
_CANCEL_POLL_SECONDS = 0.5
# A child that exits 130 on its own may have had the terminal's Ctrl-C too: give the
# worker's own handler this long to say the worker is stopping, so the run is handed
# back rather than recorded as stopped.
_SIGNAL_GRACE_SECONDS = 1.0


class WorkerRunning(RuntimeError):
    """A worker of the same name is running on this machine: both would recover the
    same runs and drive each twice."""

    def __init__(self, executor_id: str, pid: int | None) -> None:
        super().__init__(f"a worker named {executor_id} is already running (pid {pid or '?'})")
        self.pid = pid


class WorkerLock:
    """One live worker per executor id: an flock the kernel drops when the worker dies,
    however it dies."""

    def __init__(self, state_directory: Path, executor_id: str) -> None:
        self.path = state_directory / "workers" / f"{executor_id}.lock"
        self.executor_id = executor_id
        self._descriptor: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(descriptor, 32).decode(errors="replace").strip()
            os.close(descriptor)
            pid = int(holder) if holder.isdigit() else None
            raise WorkerRunning(self.executor_id, pid) from None
        os.ftruncate(descriptor, 0)
        os.write(descriptor, str(os.getpid()).encode())
        self._descriptor = descriptor

    def release(self) -> None:
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is not None:
            os.close(descriptor)


@dataclass(frozen=True)
class WorkerSettings:
    engine: Engine
    slots: int
    per_account: int
    executor_id: str
    state_directory: Path


def record_exists(cwd: Path, run_id: str) -> bool:
    """Whether the run's directory holds a record a child can resume."""
    return (runs_root(cwd) / run_id / "state.json").is_file()


def child_command(run_id: str, order: Order) -> list[str]:
    cwd = Path(order.cwd)
    if record_exists(cwd, run_id):
        action = ["resume", "--run-id", run_id]
    else:
        _set_aside_unstarted(cwd, run_id)
        action = ["run", *order.arguments, "--run-id", run_id]
    return [sys.executable, "-m", "claudeloop", *action, "--cwd", str(cwd), "--quiet"]


def _set_aside_unstarted(cwd: Path, run_id: str) -> None:
    """A worker killed between `run` making the run directory and its first record
    leaves a directory without one: no turn was sent, but `run --run-id` would refuse
    the id. It moves to .claudeloop/unstarted/, out of the runs' list, not deleted."""
    directory = RunDirectory(runs_root(cwd) / run_id)
    if not directory.path.is_dir() or live_driver(directory.lock_path) is not None:
        return
    aside = cwd / ".claudeloop" / "unstarted"
    aside.mkdir(parents=True, exist_ok=True, mode=0o700)
    number = 1
    while (aside / f"{run_id}-{number}").exists():
        number += 1
    directory.path.rename(aside / f"{run_id}-{number}")


def child_environment(environ: Mapping[str, str], engine: Engine | None = None) -> dict[str, str]:
    """The worker's environment without the engine URL: its password must not reach the
    agent (whose shell could print it into a transcript). On PostgreSQL the runs share
    capacity through the engine's board: FLEET_BOARD_VARIABLE names it for the run,
    which takes it out of its environment before it starts the CLI."""
    hidden = (ENGINE_VARIABLE, FLEET_BOARD_VARIABLE)
    child = {name: value for name, value in environ.items() if name not in hidden}
    if engine is not None and engine.kind == "postgresql":
        child[FLEET_BOARD_VARIABLE] = engine.url
    return child


class Drivers:
    """The children this worker runs, and whether it is stopping."""

    def __init__(self, say: Callable[[str], None], environ: Mapping[str, str]) -> None:
        self._say = say
        self._environ = dict(environ)
        self._lock = threading.Lock()
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.cancelled: set[str] = set()
        self.stopping = threading.Event()

    def drive(self, run_id: str, order: Order) -> int:
        """Run the child to its end; returns its exit code. While stopping, never
        returns: the run must stay unfinished for the next worker to resume."""
        command = child_command(run_id, order)
        with self._lock:
            child = None
            if not self.stopping.is_set():
                try:
                    child = subprocess.Popen(
                        command, cwd=order.cwd, env=self._environ, stdin=subprocess.DEVNULL
                    )
                except OSError as error:  # its directory is gone, or not on this machine
                    self._say(f"run {run_id}: cannot start in {order.cwd}: {error.strerror}")
                    return USAGE_EXIT
                self.children[run_id] = child
        if child is None:
            self._hold()
        self._say(f"run {run_id}: {command[3]} in {order.cwd} (pid {child.pid})")
        code = child.wait()
        with self._lock:
            self.children.pop(run_id, None)
        if run_id not in self.cancelled and (
            self.stopping.is_set()
            or (code == STOPPED_EXIT and self.stopping.wait(_SIGNAL_GRACE_SECONDS))
        ):
            self._say(f"run {run_id}: stopped at a safe point; a worker will resume it")
            self._hold()
        self._say(f"run {run_id}: exit {code}")
        return code

    def _hold(self) -> NoReturn:
        # The thread of a run being handed back waits here until the process exits.
        while True:
            threading.Event().wait()

    def stop(self, *, forward: bool) -> None:
        """Take no new run; bring the running ones to a safe point (a second time: end
        them at once, as a second Ctrl-C does). `forward`: send the children SIGTERM,
        unless the signal reached them already."""
        with self._lock:
            self.stopping.set()
            if forward:
                for child in self.children.values():
                    _signal(child, signal.SIGTERM)

    def cancel(self, run_id: str) -> None:
        with self._lock:
            child = self.children.get(run_id)
            if child is not None and run_id not in self.cancelled:
                self.cancelled.add(run_id)
                self._say(f"run {run_id}: cancelled; stopping it at a safe point")
                _signal(child, signal.SIGTERM)

    def running(self) -> list[str]:
        with self._lock:
            return list(self.children)


def _terminal_sent_it_to_all() -> bool:
    """Whether a Ctrl-C came from the terminal, which sends it to its whole foreground
    process group, the children included: sending them another would be a second
    Ctrl-C, which ends a turn at once instead of at a safe point."""
    try:
        return sys.stdin.isatty() and os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return False


def _signal(child: subprocess.Popen[bytes], which: signal.Signals) -> None:
    if child.poll() is None:
        child.send_signal(which)


def serve(settings: WorkerSettings, say: Callable[[str], None]) -> int:
    """Take runs until SIGTERM or SIGINT; returns the exit code (130 when stopped)."""
    from dbos import DBOS, DBOSConfig

    WorkerLock(settings.state_directory, settings.executor_id).acquire()  # held to the end
    init_schema(settings.engine)
    drivers = Drivers(say, child_environment(os.environ, settings.engine))
    config: DBOSConfig = {
        "name": APPLICATION,
        "system_database_url": settings.engine.url,
        "executor_id": settings.executor_id,
        "application_version": APPLICATION_VERSION,
        "log_level": "ERROR",
    }
    DBOS(config=config)

    @DBOS.step(name="claudeloop.drive")
    def drive(order: dict[str, Any]) -> int:
        run_id = DBOS.workflow_id
        assert run_id is not None
        return drivers.drive(run_id, Order.from_json(order))

    # No dead-letter after N recoveries (DBOS's default is 100): a run is handed back
    # each time its worker stops, night after night, and it cannot crash the worker
    # that recovers it (it runs in a child process).
    @DBOS.workflow(name=WORKFLOW, max_recovery_attempts=None)
    def run(order: dict[str, Any]) -> int:
        return drive(order)

    def on_signal(number: int, _frame: FrameType | None) -> None:
        if drivers.stopping.is_set():
            say("second signal: ending the runs at once")
        else:
            say(f"{signal.Signals(number).name}: taking no new run, stopping the running ones")
        drivers.stop(forward=not (number == signal.SIGINT and _terminal_sent_it_to_all()))

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with quiet_dbos():
        try:
            DBOS.launch()
            DBOS.register_queue(
                QUEUE,
                worker_concurrency=settings.slots,
                partition_concurrency=settings.per_account,
                on_conflict="always_update",
            )
        except Exception as error:
            raise FleetUnavailable(f"engine {settings.engine.shown}: {said(error)}") from None
    say(
        f"worker {settings.executor_id}: taking runs from {settings.engine.shown} "
        f"({settings.slots} at once, {settings.per_account} per account); "
        "stop with Ctrl-C or SIGTERM"
    )
    while not drivers.stopping.wait(_CANCEL_POLL_SECONDS):
        for run_id in drivers.running():
            try:
                status = DBOS.get_workflow_status(run_id)
            except Exception:  # the database away for a moment: ask again next time
                continue
            if status is not None and status.status == "CANCELLED":
                drivers.cancel(run_id)
    while drivers.running():  # each child stops at its safe point
        time.sleep(_CANCEL_POLL_SECONDS)
    say("worker stopped; its unfinished runs resume when a worker starts again here")
    return STOPPED_EXIT


def exit_now(code: int) -> None:
    """End the process without letting DBOS finish the workflows held for hand-back."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
