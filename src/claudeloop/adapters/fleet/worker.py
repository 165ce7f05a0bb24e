"""A worker: an application of the queue's engine (DBOS) that takes runs from the
fleet's queue and drives each with the unchanged claudeloop command line, as a child
process in the run's directory.

The first time a run is taken its child is `claudeloop run ... --run-id ID`; when the
run directory already holds a record (a worker died or was stopped mid-run) it is
`claudeloop resume --run-id ID`, which keeps the run's Claude session, ledger and probe
instant. The child's exit code is the workflow's result.

Stopping (SIGTERM or SIGINT): no new child starts, every running child gets SIGTERM
(claudeloop stops, cutting a turn in flight off for the resume, and exits 143) and the
worker exits 130 without recording those runs as ended. They stay pending under this
worker's executor id: DBOS recovers them when a worker with that id starts again (the
id is stable per machine and state directory), and another worker takes them over at
once (the stopping worker ends its lease).

The worker is split by concern, each a module of its own: the child runs
(children.py), the engine's copy of a run's record (record_sync.py), the heartbeat and
lease (heartbeat.py), and the queue's engine (queue_engine.py, the port; DBOS in
dbos_app.py, the one module that imports it); this one holds them together until the
worker is stopped.

Leases (adapters/fleet/leases.py): the worker heart-beats in the engine's database;
a worker whose heartbeat is older than its own lease has its runs taken over by a live
one, which asks the queue's engine to hand the runs that worker had taken back to the
queue. While a child runs, the worker stores its record
and transcript in the engine each time they change, under the run's epoch, and at once
at each save of the child, which waits for it (RecordSync); a worker that drives a run
another worker took over finds its epoch stale and is fenced, and a worker taken over
starts again in place with a new life.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from claudeloop.adapters.fleet.children import Drivers, child_environment
from claudeloop.adapters.fleet.engine import Engine, engine_error
from claudeloop.adapters.fleet.forks import ForkServer
from claudeloop.adapters.fleet.heartbeat import Heartbeat, answer_within
from claudeloop.adapters.fleet.lease_file import stop_tree
from claudeloop.adapters.fleet.leases import Leases
from claudeloop.adapters.fleet.queue import Order, init_schema
from claudeloop.adapters.fleet.queue_engine import QueueEngine, queue_engine
from claudeloop.adapters.fleet.worker_settings import (
    FAILED_EXIT,
    POLL_SECONDS,
    STOPPED_EXIT,
    WorkerSettings,
)
from claudeloop.adapters.private_file import make_private_directory
from claudeloop.adapters.shared_capacity.board_link import BoardRelay
from claudeloop.application.errors import FleetUnavailable

__all__ = ["Drivers", "WorkerLock", "WorkerRunning", "WorkerSettings", "exit_now", "serve"]
WORKER_APPLICATION = "claudeloop worker"
# How often a worker asks the engine what was asked of its runs (cancelled, a stop, a
# request): each ask is a commit on the server, and each waits for a safe point anyway.
_ASK_SECONDS = 1.0


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
        make_private_directory(self.path.parent)
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


def _terminal_sent_it_to_all() -> bool:
    """Whether a Ctrl-C came from the terminal, which sends it to its whole foreground
    process group, the children included: sending them another would be a second
    Ctrl-C, which ends a turn at once instead of at a safe point."""
    try:
        return sys.stdin.isatty() and os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return False


def serve(settings: WorkerSettings, say: Callable[[str], None]) -> int:
    """Take runs until SIGTERM or SIGINT; returns the exit code (130 when stopped)."""
    WorkerLock(settings.state_directory, settings.executor_id).acquire()  # held to the end
    # Its connections say whose they are (pg_stat_activity's application_name).
    settings = replace(settings, engine=replace(settings.engine, application=WORKER_APPLICATION))
    init_schema(settings.engine)
    leases = Leases(settings.engine)
    heartbeat = Heartbeat(
        settings,
        Leases(settings.engine, answer_within=answer_within(settings), sharing=leases),
        say,
    )
    try:
        heartbeat.start()  # before DBOS recovers this worker's own runs: they claim under it
    except Exception as error:
        raise FleetUnavailable(
            f"engine {settings.engine.masked_url}: {engine_error(error)}"
        ) from None
    engine = queue_engine(settings.engine)
    # Its runs forked ready from a process with their environment, not the worker's.
    forks = ForkServer(child_environment(os.environ))
    drivers = Drivers(
        say,
        child_environment(os.environ),
        settings,
        leases,
        _board_relay(settings.engine),
        per_account=engine.per_account,
        forks=forks,
    )
    pool = leases.pool if settings.engine.kind == "postgresql" else None

    def drive(run_id: str, order: dict[str, Any]) -> int:
        """The run driven; its end said in claudeloop's queue (failed: it raised)."""
        try:
            code = drivers.drive(run_id, Order.from_json(order))
        except Exception:
            with contextlib.suppress(Exception):  # the database away: the engine has it
                leases.ended(run_id, settings.executor_id, None)
            raise
        with contextlib.suppress(Exception):
            leases.ended(run_id, settings.executor_id, code)
        return code

    engine.configure(settings, pool, drive)

    def on_signal(number: int, _frame: FrameType | None) -> None:
        if drivers.stopping.is_set():
            say("second signal: ending the runs at once")
        else:
            say(f"{signal.Signals(number).name}: taking no new run, stopping the running ones")
        drivers.stop(forward=not (number == signal.SIGINT and _terminal_sent_it_to_all()))

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    engine.launch(settings)
    say(
        f"worker {settings.executor_id}: taking runs from {settings.engine.masked_url} "
        f"({settings.slots} at once, {settings.per_account} per account, "
        f"lease {settings.lease_seconds:g} s); stop with Ctrl-C or SIGTERM"
    )

    try:
        return _until_stopped(settings, drivers, heartbeat, leases, say, engine=engine)
    finally:
        forks.close()


def _board_relay(engine: Engine) -> BoardRelay | None:
    """On PostgreSQL, the fleet's capacity board this worker serves its runs: one
    connection (a session that also listens) instead of one or two of each run's."""
    if engine.kind != "postgresql":
        return None
    from claudeloop.adapters.shared_capacity.postgres_board import PostgresBoards

    return BoardRelay(PostgresBoards(engine.connect_url))


def _until_stopped(
    settings: WorkerSettings,
    drivers: Drivers,
    heartbeat: Heartbeat,
    leases: Leases,
    say: Callable[[str], None],
    *,
    engine: QueueEngine,
) -> int:
    """Take over the dead and pass cancellations on, while the heartbeat beats on its own
    thread, until stopped; a worker taken over starts again in place."""
    stop_beating = threading.Event()
    threading.Thread(
        target=heartbeat.keep_beating, args=(stop_beating,), name="fleet-heartbeat", daemon=True
    ).start()
    tick = heartbeat.tick
    next_ask = time.monotonic()
    # What the engine is asked is one statement for all the runs, never one per run:
    # which are cancelled, what stops and wind-downs and requests were asked.
    while not drivers.stopping.wait(tick):
        if heartbeat.fenced.is_set():
            _start_again(settings, drivers, engine, say)
        heartbeat.take_over(engine.hand_back)
        running = drivers.running()
        if running and time.monotonic() >= next_ask:
            next_ask = time.monotonic() + _ASK_SECONDS
            try:
                asked = leases.asked(settings.executor_id, running)
            except Exception:  # the database away for a moment: ask again next time
                continue
            for run_id in asked.cancelled:
                drivers.cancel(run_id)
            with contextlib.suppress(Exception):  # the database away: ask again next time
                drivers.deliver(asked.commands, leases.delivered)
                drivers.deliver_requests(asked.requests, leases.request_delivered)
    while drivers.running():  # each child stops at its safe point, a turn may be long
        if heartbeat.fenced.is_set():  # the children kept their lease until then
            say(f"worker {settings.executor_id}: another worker took over its runs")
            for child in drivers.running_children():
                stop_tree(child)
            break
        time.sleep(tick)
    stop_beating.set()
    if not heartbeat.fenced.is_set():
        with contextlib.suppress(Exception):  # no engine: the lease runs out on its own
            leases.let_go(settings.executor_id)
    say("worker stopped; another worker takes over its unfinished runs, or this one started again")
    return STOPPED_EXIT


def _start_again(
    settings: WorkerSettings, drivers: Drivers, engine: QueueEngine, say: Callable[[str], None]
) -> NoReturn:
    """Taken over (this worker was cut off past its lease: its network, a pause): its
    runs are another worker's. Their children stop (they ended on their own at the
    lease), and once the taker has handed them back to the queue (the engine no longer
    counts them as this worker's; a lease at most), the worker starts again in place, the same
    process with a new life: a service ends when it is told to, not when it is cut off."""
    me = settings.executor_id
    say(f"worker {me}: another worker took over its runs; fenced, leaving them and starting again")
    held = drivers.running()
    for child in drivers.running_children():
        stop_tree(child)

    def still_mine(run_id: str) -> bool:
        try:
            return engine.held_by(run_id, me)
        except Exception:  # the database away again: the taker has not been seen to
            return True

    deadline = time.monotonic() + settings.lease_seconds
    while held and time.monotonic() < deadline:
        held = [run_id for run_id in held if still_mine(run_id)]
        time.sleep(POLL_SECONDS)
    sys.stdout.flush()
    sys.stderr.flush()
    # Every thread and connection of this life ends with the exec; the worker lock's
    # descriptor is not inherited, so the new life takes it again.
    try:
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
    except OSError as error:  # its interpreter gone (an upgrade under it): end instead
        say(f"worker {me}: cannot start again ({error.strerror}); start it again by hand")
        exit_now(FAILED_EXIT)
    raise AssertionError("unreachable")  # pragma: no cover


def exit_now(code: int) -> None:
    """End the process without letting the engine finish the runs held for hand-back."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
