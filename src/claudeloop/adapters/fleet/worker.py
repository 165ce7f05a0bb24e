"""A worker: a DBOS application that takes runs from the fleet's queue and drives each
with the unchanged claudeloop command line, as a child process in the run's directory.

The first time a run is taken its child is `claudeloop run ... --run-id ID`; when the
run directory already holds a record (a worker died or was stopped mid-run) it is
`claudeloop resume --run-id ID`, which keeps the run's Claude session, ledger and probe
instant. The child's exit code is the workflow's result.

Stopping (SIGTERM or SIGINT): no new child starts, every running child gets SIGTERM
(claudeloop stops at a safe point and exits 130) and the worker exits 130 without
recording those runs as ended. They stay pending under this worker's executor id:
DBOS recovers them when a worker with that id starts again (the id is stable per
machine and state directory), and another worker takes them over at once (the
stopping worker ends its lease).

Leases (adapters/fleet/leases.py): the worker heart-beats in the engine's database;
a worker whose heartbeat is older than its own lease has its runs taken over by a live
one, which asks DBOS to recover that executor's pending workflows (what DBOS's admin
API does for another executor's id). While a child runs, the worker stores its record
and transcript in the engine each time they change, under the run's epoch, and at once
at each save of the child, which waits for it (EngineCopy); a worker that drives a run
another worker took over finds its epoch stale and is fenced, and a worker taken over
starts again in place with a new life.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, TypeVar

from claudeloop.adapters.fleet import repo, travel
from claudeloop.adapters.fleet.engine import ENGINE_VARIABLE, Engine
from claudeloop.adapters.fleet.lease_file import (
    FENCED_EXIT,
    REFUSED,
    STORED,
    descendants,
    lease_holds,
    write_lease,
)
from claudeloop.adapters.fleet.leases import EVENTS, TRANSCRIPT, Fenced, Leases
from claudeloop.adapters.fleet.queue import (
    APPLICATION,
    APPLICATION_VERSION,
    QUEUE,
    WORKFLOW,
    FleetUnavailable,
    Order,
    engine_error,
    init_schema,
    quiet_dbos,
)
from claudeloop.adapters.fleet.repo import RepoFailed
from claudeloop.adapters.private_file import make_private_directory
from claudeloop.adapters.run_directory.control import steer_from_json
from claudeloop.adapters.run_directory.layout import RunDirectory, runs_root
from claudeloop.adapters.run_directory.lock import live_driver
from claudeloop.adapters.shared_capacity.board_link import BoardRelay
from claudeloop.application.fleet_seat import SEAT_VARIABLES, FleetSeat
from claudeloop.domain.loop import ControlCommand

T = TypeVar("T")
STOPPED_EXIT = 130
USAGE_EXIT = 2
FAILED_EXIT = 1
DEFAULT_LEASE_SECONDS = 30.0
WORKER_APPLICATION = "claudeloop worker"
# The child trusts its lease for less than the engine counts it, so it has stopped
# before any other worker may take its run over; heartbeats come often enough that
# one held up by the database (a busy SQLite file) does not end the children's lease.
_CHILD_SHARE = 0.9
_BEATS_PER_LEASE = 6
_CANCEL_POLL_SECONDS = 0.5
# How often a worker asks the engine what was asked of its runs (cancelled, a stop, a
# request): each ask is a commit on the server, and each waits for a safe point anyway.
_ASK_SECONDS = 1.0
# How often DBOS looks in the queue for a run to start (its default is each second):
# each look is two or three commits (the queue's settings, its accounts, a dequeue), a
# worker's largest cost while it waits, and a run queued starts this much later at most.
_QUEUE_POLL_SECONDS = 2.0
# Within a turn (its transcript growing) a run's copy in the engine is stored at most
# this often; each save of the run's record is stored at once.
_STORE_EVERY_SECONDS = 5.0
_TAIL_BYTES = 64
# The heartbeat's statements end after this (or a sixth of the lease, if longer): a beat
# held up is a beat missed, and the next one comes soon.
_HEART_ANSWER_SECONDS = 2.0
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


@dataclass(frozen=True)
class WorkerSettings:
    engine: Engine
    slots: int
    per_account: int
    executor_id: str
    state_directory: Path
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    work_root: Path | None = None  # where runs queued with a checkout name are

    @property
    def lease_file(self) -> Path:
        return self.state_directory / "workers" / f"{self.executor_id}.lease"


def record_exists(cwd: Path, run_id: str) -> bool:
    """Whether the run's directory holds a record a child can resume."""
    return (runs_root(cwd) / run_id / "state.json").is_file()


def run_cwd(order: Order, work_root: Path | None, clones: Path | None = None) -> Path | None:
    """Where the run is driven: its --cwd, its checkout under this worker's work root
    (None: this worker has none), or the clone of its --repo in `clones`."""
    if order.repo is not None:
        return clones
    cwd = Path(order.cwd)
    if cwd.is_absolute():
        return cwd
    return work_root / cwd if work_root is not None else None


def child_command(run_id: str, order: Order, cwd: Path) -> list[str]:
    if record_exists(cwd, run_id):
        action = ["resume", "--run-id", run_id]
    else:
        _set_aside_unstarted(cwd, run_id)
        action = ["run", *order.arguments, "--run-id", run_id]
        if order.repo is not None:
            # The run commits each answered turn on its branch; the worker pushes it.
            action.append("--checkpoint")
    return [sys.executable, "-m", "claudeloop", *action, "--cwd", str(cwd), "--quiet"]


def _set_aside_unstarted(cwd: Path, run_id: str) -> None:
    """A worker killed between `run` making the run directory and its first record
    leaves a directory without one: no turn was sent, but `run --run-id` would refuse
    the id. It moves to .claudeloop/unstarted/, out of the runs' list, not deleted."""
    directory = RunDirectory(runs_root(cwd) / run_id)
    if not directory.path.is_dir() or live_driver(directory.lock_path) is not None:
        return
    aside = cwd / ".claudeloop" / "unstarted"
    make_private_directory(aside)
    number = 1
    while (aside / f"{run_id}-{number}").exists():
        number += 1
    directory.path.rename(aside / f"{run_id}-{number}")


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The worker's environment without the engine URL: its password must not reach the
    agent (whose shell could print it into a transcript), and a run never connects to
    the engine (on PostgreSQL its capacity board is reached through its worker, the
    link its seat names). A seat the worker's own environment told is no child's."""
    hidden = (ENGINE_VARIABLE, *SEAT_VARIABLES)
    return {name: value for name, value in environ.items() if name not in hidden}


class Drivers:
    """The children this worker runs, and whether it is stopping."""

    def __init__(
        self,
        say: Callable[[str], None],
        environ: Mapping[str, str],
        settings: WorkerSettings,
        leases: Leases,
        boards: BoardRelay | None = None,
    ) -> None:
        """`boards`: the fleet's capacity board this worker serves its runs on
        PostgreSQL (None: each run shares its machine's file)."""
        self._say = say
        self._settings = settings
        self._leases = leases
        self._boards = boards
        self._child_env = {**environ, **FleetSeat(lease=settings.lease_file).environment()}
        self._lock = threading.Lock()
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.places: dict[str, Path] = {}  # each running run's directory
        self.cancelled: set[str] = set()
        self.stopping = threading.Event()

    def drive(self, run_id: str, order: Order) -> int:
        """Run the child to its end; returns its exit code. While stopping, never
        returns: the run must stay unfinished for the next worker to resume. Fenced
        (another worker took the run over), never returns either: the run's result is
        the other worker's to record."""
        clones = (self._settings.work_root or self._settings.state_directory) / "clones"
        cwd = run_cwd(order, self._settings.work_root, clones / run_id)
        if cwd is None:
            self._say(f"run {run_id}: queued as checkout {order.cwd}; start with --work-root")
            return USAGE_EXIT
        epoch = self._claim(run_id)
        if order.repo is not None:
            try:
                repo.prepare(order.repo, order.branch, run_id, cwd)
            except RepoFailed as failed:
                self._say(f"run {run_id}: {failed}")
                return FAILED_EXIT
        self._restore(run_id, cwd)
        while True:
            code = self._drive_child(run_id, order, cwd, epoch)
            if code != FENCED_EXIT:
                break
            # The child's lease ran out (this worker was cut off): go on only if no
            # other worker took the run meanwhile.
            if self.stopping.is_set():
                self._say(f"run {run_id}: stopped; a worker will resume it")
                self._hold()
            if not self._still_holds(run_id, epoch):
                self._say(f"run {run_id}: taken over by another worker; leaving it")
                self._hold()
            while not lease_holds(self._settings.lease_file):  # renewed by the next beat
                time.sleep(_CANCEL_POLL_SECONDS)
            self._say(f"run {run_id}: its lease lapsed but no worker took it; resuming it")
        if run_id not in self.cancelled and (
            self.stopping.is_set()
            or (code == STOPPED_EXIT and self.stopping.wait(_SIGNAL_GRACE_SECONDS))
        ):
            self._say(f"run {run_id}: stopped at a safe point; a worker will resume it")
            self._hold()
        if not self._still_holds(run_id, epoch):
            self._say(f"run {run_id}: taken over by another worker; leaving it")
            self._hold()
        self._say(f"run {run_id}: exit {code}")
        return code

    def _drive_child(self, run_id: str, order: Order, cwd: Path, epoch: int) -> int:
        command = child_command(run_id, order, cwd)
        # The link the child's saves are stored in the engine through (lease_file.py),
        # and on PostgreSQL the one its capacity board is reached through (board_link.py).
        ours, theirs = socket.socketpair()
        board_ours, board_theirs = socket.socketpair() if self._boards else (None, None)
        seat = FleetSeat(
            sync=theirs.fileno(), board=board_theirs.fileno() if board_theirs else None
        )
        passed = tuple(end.fileno() for end in (theirs, board_theirs) if end is not None)
        env = {**self._child_env, **seat.environment()}
        with self._lock, theirs, board_theirs or contextlib.nullcontext():
            child = None
            if not self.stopping.is_set():
                try:
                    child = subprocess.Popen(
                        command,
                        cwd=cwd,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        pass_fds=passed,
                    )
                except OSError as error:  # its directory is gone, or not on this machine
                    _close(ours, board_ours)
                    self._say(f"run {run_id}: cannot start in {cwd}: {error.strerror}")
                    return USAGE_EXIT
                self.children[run_id] = child
                self.places[run_id] = runs_root(cwd) / run_id
        if child is None:
            _close(ours, board_ours)
            self._hold()
        if self._boards is not None and board_ours is not None:
            self._boards.serve(board_ours, run_id)
        self._say(f"run {run_id}: {command[3]} in {cwd} (pid {child.pid})")
        copy = EngineCopy(
            self._leases,
            self._settings.executor_id,
            self._child_env,
            self._say,
            run_id=run_id,
            cwd=cwd,
            epoch=epoch,
            child=child,
        )
        threading.Thread(
            target=copy.answer_saves, args=(ours,), name=f"saves-{run_id}", daemon=True
        ).start()
        pushed = self._progress(cwd, run_id)
        while True:
            try:
                code = child.wait(timeout=_CANCEL_POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                if not copy.sync():
                    self._hold()
                if order.repo is not None and self._progress(cwd, run_id) != pushed:
                    pushed = self._push(run_id, cwd)
        if not copy.compact():
            self._hold()
        if order.repo is not None and code != FENCED_EXIT:
            self._push(run_id, cwd)
        with self._lock:
            self.children.pop(run_id, None)
            self.places.pop(run_id, None)
        return code

    def _turns(self, cwd: Path, run_id: str) -> object:
        state = travel.read_state(runs_root(cwd) / run_id)
        inner = state.get("state") if state else None
        return inner.get("turns") if isinstance(inner, dict) else None

    def _progress(self, cwd: Path, run_id: str) -> object:
        """What a push follows: the turns answered and the last one committed (a run
        that commits its turns itself commits just after the turn is saved)."""
        state = travel.read_state(runs_root(cwd) / run_id)
        committed = state.get("checkpointed_turn") if state else None
        return (self._turns(cwd, run_id), committed)

    def _push(self, run_id: str, cwd: Path) -> object:
        """Commit and push the working tree after a turn (work in progress); returns
        what it covers. A push that fails is said and tried after the next turn."""
        progress = self._progress(cwd, run_id)
        turns = self._turns(cwd, run_id)
        state = travel.read_state(runs_root(cwd) / run_id)
        spec = state.get("spec") if state else None
        # A run that commits its turns itself (--checkpoint) is only pushed.
        commits = isinstance(spec, dict) and spec.get("checkpoint") is True
        try:
            repo.push(
                cwd, run_id, f"claudeloop: run {run_id}, after turn {turns}", commit=not commits
            )
        except RepoFailed as failed:
            self._say(f"run {run_id}: {failed}")
        return progress

    def _claim(self, run_id: str) -> int:
        try:
            return self._retried(
                run_id, lambda: self._leases.claim(run_id, self._settings.executor_id)
            )
        except Fenced:
            self._hold()

    def _still_holds(self, run_id: str, epoch: int) -> bool:
        return self._retried(run_id, lambda: self._leases.holds(run_id, epoch))

    def _retried(self, run_id: str, ask: Callable[[], T]) -> T:
        """`ask` the engine until it answers (the database away for a moment)."""
        while True:
            try:
                return ask()
            except Fenced:
                raise
            except Exception as error:  # SQLAlchemy's errors, of either driver
                self._say(
                    f"run {run_id}: cannot reach the engine ({engine_error(error)}); retrying"
                )
                time.sleep(_CANCEL_POLL_SECONDS * 4)

    def _restore(self, run_id: str, cwd: Path) -> None:
        """The run's record and transcript from the engine, when another worker stored
        them last (or this machine has no record): a takeover."""
        stored = self._retried(run_id, lambda: self._leases.stored(run_id))
        if stored is None or stored.record is None:
            return
        if stored.saved_by == self._settings.executor_id and record_exists(cwd, run_id):
            return  # this machine's record is at least as new
        directory = runs_root(cwd) / run_id
        here = travel.ledger_of(travel.read_state(directory))
        there = travel.ledger_of(travel.state_in(stored.record))
        if here is not None and there is not None and here.is_ahead_of(there):
            # A save this machine made whose store in the engine its worker did not live
            # to make: that turn was answered and paid for, and is not sent again.
            self._say(
                f"run {run_id}: this machine's record is newer than the engine's; going on from it"
            )
            return
        travel.unpack_record(stored.record, directory)
        was = travel.relocate(directory, cwd)
        session = travel.session_of(travel.read_state(directory))
        if stored.transcript is not None and session is not None:
            path = travel.transcript_path(self._child_env, cwd, session)
            moved = (was, cwd) if was is not None else None
            travel.unpack_transcript(stored.transcript, path, moved)
        self._say(f"run {run_id}: taken over from {stored.saved_by} ({stored.phase})")

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

    def deliver(self, asked: list[tuple[str, str]], delivered: Callable[[str, str], None]) -> None:
        """Write each command asked through the engine (`stop --engine`) into its run's
        control file, as a local `claudeloop stop` does; the run reads it at its next
        safe point. A run whose child has not started yet gets it once it has."""
        for run_id, asked_for in asked:
            with self._lock:
                place = self.places.get(run_id)
            if place is None:
                continue
            try:
                command = ControlCommand(asked_for)
            except ValueError:  # a command of a newer claudeloop: not this one's to say
                delivered(run_id, asked_for)
                continue
            try:
                RunDirectory(place).send(command)
            except OSError as error:
                self._say(f"run {run_id}: cannot pass {asked_for} on: {error.strerror}")
                continue
            delivered(run_id, asked_for)
            self._say(f"run {run_id}: asked to {asked_for} through the engine")

    def deliver_requests(
        self, asked: list[tuple[int, str, str]], delivered: Callable[[int], None]
    ) -> None:
        """Write each request asked through the engine (`probe-now --engine`, `raise`,
        `note`) into its run's control file, numbered as a local one is."""
        for request_id, run_id, text in asked:
            with self._lock:
                place = self.places.get(run_id)
            if place is None:
                continue
            steer = steer_from_json(text)
            if steer is None:  # a request of a newer claudeloop: not this one's to say
                delivered(request_id)
                continue
            try:
                RunDirectory(place).send(steer)
            except OSError as error:
                self._say(f"run {run_id}: cannot pass a request on: {error.strerror}")
                continue
            delivered(request_id)
            self._say(f"run {run_id}: passed a request on through the engine")

    def running(self) -> list[str]:
        with self._lock:
            return list(self.children)

    def running_children(self) -> list[int]:
        with self._lock:
            return [child.pid for child in self.children.values()]


def _close(*ends: socket.socket | None) -> None:
    for end in ends:
        if end is not None:
            end.close()


class EngineCopy:
    """The engine's copy of one run's record and transcript, kept by the worker that
    drives the run: stored at once each time the child saves its record, the child
    waiting for the answer before that save counts (lease_file.py), and within a turn,
    as the transcript grows, at most every few seconds. A successor starts from this
    copy, so whenever the worker dies the copy holds every turn the runner said
    finished.

    What changed travels, not everything again: events.jsonl and the transcript only
    grow, so a store sends the bytes they grew by (chunks) and the state.json on its
    own. The first store of a drive (a takeover's, a restart's), one after the session
    changed or a file shrank, and the last, when the child ends, store them whole (a
    compaction: the chunks go)."""

    def __init__(
        self,
        leases: Leases,
        executor_id: str,
        environ: Mapping[str, str],
        say: Callable[[str], None],
        *,
        run_id: str,
        cwd: Path,
        epoch: int,
        child: subprocess.Popen[bytes],
    ) -> None:
        self._leases = leases
        self._executor_id = executor_id
        self._environ = environ
        self._say = say
        self._run_id = run_id
        self._directory = runs_root(cwd) / run_id
        self._cwd = cwd
        self._epoch = epoch
        self._child = child
        # One store at a time: a copy read before a newer one must not land after it.
        self._lock = threading.Lock()
        self._stored: tuple[object, ...] = ()
        self._stored_at = -_STORE_EVERY_SECONDS  # monotonic
        # The bytes of each append-only file the engine holds (None: store them whole).
        self._sent: dict[str, int] | None = None
        # The last bytes stored of each: a file rewritten rather than grown (the same
        # size or more, other bytes) no longer ends there, and is stored whole.
        self._tails: dict[str, bytes] = {}
        self._session: str | None = None

    def _fingerprint(self) -> tuple[object, ...]:
        return travel.fingerprint([*self._paths(travel.read_state(self._directory))])

    def _paths(self, state: Mapping[str, object] | None) -> list[Path]:
        session = travel.session_of(state)
        paths = [self._directory / name for name in travel.RECORD_FILES]
        if session is not None:
            paths.append(travel.transcript_path(self._environ, self._cwd, session))
        return paths

    def _store(self) -> None:
        """Under the lock: the files as they are now into the engine, what they grew by
        or whole (Fenced when the epoch is stale; the engine's errors as they come)."""
        try:
            state_bytes = (self._directory / "state.json").read_bytes()
            state = json.loads(state_bytes)
        except (OSError, ValueError):
            return
        if not isinstance(state, dict):
            return
        paths = self._paths(state)
        # Marked before it is read: a write in between is stored again next time.
        now = travel.fingerprint(paths)
        session = travel.session_of(state)
        transcript = (
            paths[len(travel.RECORD_FILES)] if len(paths) > len(travel.RECORD_FILES) else None
        )
        events = paths[1]
        sent = self._sent
        if sent is not None and session == self._session:
            events_grew = _grown_since(events, sent[EVENTS], self._tails.get(EVENTS, b""))
            transcript_grew = _grown_since(
                transcript, sent[TRANSCRIPT], self._tails.get(TRANSCRIPT, b"")
            )
            if events_grew is not None and transcript_grew is not None:
                grew = (events_grew, transcript_grew)
                chunks = [
                    (file, sent[file], data)
                    for file, data in zip((EVENTS, TRANSCRIPT), grew, strict=True)
                    if data
                ]
                self._leases.append(
                    self._run_id,
                    self._epoch,
                    self._executor_id,
                    phase=travel.phase_of(state),
                    state=gzip.compress(state_bytes),
                    summary=travel.summary_of(state),
                    chunks=chunks,
                )
                self._sent = {
                    EVENTS: sent[EVENTS] + len(grew[0]),
                    TRANSCRIPT: sent[TRANSCRIPT] + len(grew[1]),
                }
                for file, data in zip((EVENTS, TRANSCRIPT), grew, strict=True):
                    self._tails[file] = (self._tails.get(file, b"") + data)[-_TAIL_BYTES:]
                self._stored, self._stored_at = now, time.monotonic()
                return
        events_bytes = _read(events) or b""
        transcript_bytes = _read(transcript) if transcript is not None else None
        self._leases.store(
            self._run_id,
            self._epoch,
            self._executor_id,
            phase=travel.phase_of(state),
            record=travel.pack_files({"state.json": state_bytes, "events.jsonl": events_bytes}),
            transcript=gzip.compress(transcript_bytes) if transcript_bytes is not None else None,
            summary=travel.summary_of(state),
        )
        # Without a transcript file the engine's stays as it was: whole next time.
        whole = transcript_bytes is not None or transcript is None
        self._sent = (
            {EVENTS: len(events_bytes), TRANSCRIPT: len(transcript_bytes or b"")} if whole else None
        )
        self._tails = {
            EVENTS: events_bytes[-_TAIL_BYTES:],
            TRANSCRIPT: (transcript_bytes or b"")[-_TAIL_BYTES:],
        }
        self._session = session
        self._stored, self._stored_at = now, time.monotonic()

    def sync(self) -> bool:
        """Store what changed since the last store, unless the last was a moment ago
        (the engine away: next time); False when the epoch is stale: the child is
        stopped and the caller holds."""
        with self._lock:
            if self._fingerprint() == self._stored:
                return True
            if time.monotonic() - self._stored_at < _STORE_EVERY_SECONDS:
                return True
            try:
                self._store()
            except Fenced:
                self._fenced()
                return False
            except Exception:  # the database away for a moment: store it next time
                return True
        return True

    def compact(self) -> bool:
        """The child ended: its files stored whole, the chunks gone (the engine away:
        the chunks stay, and read the same); False when the epoch is stale."""
        with self._lock:
            self._sent = None
            try:
                self._store()
            except Fenced:
                self._fenced()
                return False
            except Exception:  # the database away: what was stored reads the same
                return True
        return True

    def _fenced(self) -> None:
        self._say(f"run {self._run_id}: taken over by another worker; stopping its child")
        if self._child.poll() is None:  # once reaped, its pid may be another process's
            stop_tree(self._child.pid)

    def stored(self) -> bool:
        """Store the record now, whatever its fingerprint says (two saves within one
        tick of the file system's clock look alike), trying until the engine takes it.
        False: the epoch is stale, or the child ended meanwhile."""
        while True:
            with self._lock:
                try:
                    self._store()
                    return True
                except Fenced:
                    self._fenced()
                    return False
                except Exception as error:  # SQLAlchemy's errors, of either driver
                    self._say(
                        f"run {self._run_id}: cannot reach the engine "
                        f"({engine_error(error)}); retrying"
                    )
            # The child waits meanwhile; its lease, not renewed while the engine is away,
            # ends it in time.
            if self._child.poll() is not None:
                return False
            time.sleep(_CANCEL_POLL_SECONDS * 4)

    def answer_saves(self, link: socket.socket) -> None:
        """Each save the child tells of, stored; answered once the engine holds it."""
        with link:
            while True:
                try:
                    if not link.recv(1):  # the child ended
                        return
                    link.sendall(STORED if self.stored() else REFUSED)
                except OSError:
                    return


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _grown_since(path: Path | None, byte: int, tail: bytes) -> bytes | None:
    """What an append-only file holds past `byte`, where it ends with `tail` (b"":
    nothing yet, or no such file while none was stored); None when it shrank, went, or
    no longer holds `tail` just before `byte` (rewritten): it is stored whole."""
    if path is None:
        return b"" if byte == 0 else None
    try:
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size < byte:
                return None
            file.seek(byte - len(tail))
            if file.read(len(tail)) != tail:
                return None
            return file.read()
    except FileNotFoundError:
        return b"" if byte == 0 else None
    except OSError:
        return None


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


def stop_tree(pid: int) -> None:
    """SIGKILL a child and everything under it (its Claude CLI and the CLI's tools)."""
    for each in [*descendants(pid), pid]:
        with contextlib.suppress(OSError):
            os.kill(each, signal.SIGKILL)


class Heart:
    """The worker's heartbeat: renews its lease in the engine and the file its
    children read, and takes over the runs of workers whose lease ran out.

    It beats on a thread of its own, through a connection of its own that gives up
    within seconds: the worker's main loop asks DBOS, which waits out a database away
    with a backoff of its own (up to a minute), and a heartbeat held up behind it would
    make a live worker look dead. A worker back from a time it could not reach the
    engine judges no one by the heartbeats that could not be written meanwhile: it
    takes over a worker only once it has itself reached the engine without a break for
    that worker's whole lease."""

    def __init__(
        self,
        settings: WorkerSettings,
        leases: Leases,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ):
        self._settings = settings
        self._leases = leases
        self._say = say
        self._clock = clock
        self._next_beat = 0.0
        self._up_since: float | None = None  # the first beat since the engine was last away
        self._last_beat: float | None = None  # the last beat that reached the engine
        self._next_look = 0.0  # when to look for dead workers next
        self.fenced = threading.Event()  # another worker took this one over

    @property
    def lease_ms(self) -> int:
        return int(self._settings.lease_seconds * 1000)

    @property
    def _interval(self) -> float:
        return self._settings.lease_seconds / _BEATS_PER_LEASE

    @property
    def tick(self) -> float:
        return min(_CANCEL_POLL_SECONDS, self._interval)

    def start(self) -> None:
        """A new life: a fresh heartbeat with this worker's lease, taken over by no one."""
        self._leases.start(self._settings.executor_id, self.lease_ms)
        write_lease(self._settings.lease_file, time.time() + self._child_lease)
        now = self._clock()
        self._up_since = self._last_beat = now
        self._next_beat = now + self._interval
        self.fenced.clear()

    @property
    def _child_lease(self) -> float:
        return self._settings.lease_seconds * _CHILD_SHARE

    def beat(self) -> bool:
        """Heartbeat when one is due; False when this worker was taken over."""
        if self._clock() < self._next_beat:
            return True
        sent = time.time()
        try:
            alive = self._leases.beat(self._settings.executor_id)
        except Exception:  # the database away: the children's lease runs out on its own
            self._up_since = None
            return True
        if alive:
            now = self._clock()
            if self._up_since is None or self._broken(now):
                self._up_since = now
            self._last_beat = now
            write_lease(self._settings.lease_file, sent + self._child_lease)
            self._next_beat = now + self._interval
        return alive

    def _broken(self, now: float) -> bool:
        """Whether the engine went unheard long enough to miss beats of others (this
        worker paused, a beat that hung)."""
        return self._last_beat is None or now - self._last_beat > self._settings.lease_seconds / 2

    def up_for_ms(self) -> int:
        """How long this worker has reached the engine without a break, in ms."""
        now = self._clock()
        if self._up_since is None or self._broken(now):
            return 0
        return int((now - self._up_since) * 1000)

    def keep_beating(self, stopped: threading.Event) -> None:
        """The heartbeat's thread, until `stopped`; sets `fenced` when taken over."""
        while not stopped.wait(self.tick):
            if not self.fenced.is_set() and not self.beat():
                self.fenced.set()

    def take_over(self, recover: Callable[[list[str]], int]) -> None:
        """Take the runs of each worker whose lease ran out, when this worker wins it.
        The engine is asked once a heartbeat interval, not at every tick: a lease runs
        out a whole lease after a worker's last beat, and a sixth of it later is soon."""
        me = self._settings.executor_id
        up_for = self.up_for_ms()
        if up_for == 0 or self.fenced.is_set():
            return
        now = self._clock()
        if now < self._next_look:
            return
        self._next_look = now + self._interval
        try:
            for dead in self._leases.dead(me, up_for):
                executors = self._leases.take_over(dead, me, up_for)
                if executors is not None:
                    count = recover(executors)
                    self._say(f"worker {dead} stopped heart-beating: taking over {count} run(s)")
        except Exception:  # the database away for a moment: look again next time
            return


def serve(settings: WorkerSettings, say: Callable[[str], None]) -> int:
    """Take runs until SIGTERM or SIGINT; returns the exit code (130 when stopped)."""
    from dbos import DBOS, DBOSConfig

    WorkerLock(settings.state_directory, settings.executor_id).acquire()  # held to the end
    # Its connections say whose they are (pg_stat_activity's application_name).
    settings = replace(settings, engine=replace(settings.engine, application=WORKER_APPLICATION))
    init_schema(settings.engine)
    leases = Leases(settings.engine)
    heart_answer = max(_HEART_ANSWER_SECONDS, settings.lease_seconds / _BEATS_PER_LEASE)
    heart = Heart(
        settings, Leases(settings.engine, answer_within=heart_answer, sharing=leases), say
    )
    try:
        heart.start()  # before DBOS recovers this worker's own runs: they claim under it
    except Exception as error:
        raise FleetUnavailable(f"engine {settings.engine.shown}: {engine_error(error)}") from None
    drivers = Drivers(
        say, child_environment(os.environ), settings, leases, _board_relay(settings.engine)
    )
    config: DBOSConfig = {
        "name": APPLICATION,
        "system_database_url": settings.engine.connect_url,
        "executor_id": settings.executor_id,
        "application_version": APPLICATION_VERSION,
        "log_level": "ERROR",
    }
    if settings.engine.kind == "postgresql":
        # DBOS holds no connection of its own: its queue and its workflows' steps take
        # turns on the leases' pool with the stores and the heartbeat, and it has no
        # LISTEN. A worker waits on no DBOS event, notification or stream, so nothing
        # polls in its stead. (The schema was made with DBOS's default, LISTEN/NOTIFY,
        # by init_schema: its triggers notify no one.)
        config["system_database_engine"] = leases.pool
        config["use_listen_notify"] = False
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
                polling_interval_sec=_QUEUE_POLL_SECONDS,
                on_conflict="always_update",
            )
        except Exception as error:
            raise FleetUnavailable(
                f"engine {settings.engine.shown}: {engine_error(error)}"
            ) from None
    say(
        f"worker {settings.executor_id}: taking runs from {settings.engine.shown} "
        f"({settings.slots} at once, {settings.per_account} per account, "
        f"lease {settings.lease_seconds:g} s); stop with Ctrl-C or SIGTERM"
    )

    return _until_stopped(settings, drivers, heart, leases, say)


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
    heart: Heart,
    leases: Leases,
    say: Callable[[str], None],
) -> int:
    """Take over the dead and pass cancellations on, while the heart beats on its own
    thread, until stopped; a worker taken over starts again in place."""
    from dbos import DBOS

    def recover(executors: list[str]) -> int:
        return len(DBOS._recover_pending_workflows(executors))

    stop_beating = threading.Event()
    threading.Thread(
        target=heart.keep_beating, args=(stop_beating,), name="fleet-heart", daemon=True
    ).start()
    tick = heart.tick
    next_ask = time.monotonic()
    # What the engine is asked is one statement for all the runs, never one per run:
    # which are cancelled, what stops and wind-downs and requests were asked.
    while not drivers.stopping.wait(tick):
        if heart.fenced.is_set():
            _start_again(settings, drivers, say)
        heart.take_over(recover)
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
        if heart.fenced.is_set():  # the children kept their lease until then
            say(f"worker {settings.executor_id}: another worker took over its runs")
            for child in drivers.running_children():
                stop_tree(child)
            break
        time.sleep(tick)
    stop_beating.set()
    if not heart.fenced.is_set():
        with contextlib.suppress(Exception):  # no engine: the lease runs out on its own
            leases.let_go(settings.executor_id)
    say("worker stopped; another worker takes over its unfinished runs, or this one started again")
    return STOPPED_EXIT


def _start_again(
    settings: WorkerSettings, drivers: Drivers, say: Callable[[str], None]
) -> NoReturn:
    """Taken over (this worker was cut off past its lease: its network, a pause): its
    runs are another worker's. Their children stop (they ended on their own at the
    lease), and once the taker has handed them back to the queue (DBOS no longer counts
    them as this worker's; a lease at most), the worker starts again in place, the same
    process with a new life: a service ends when it is told to, not when it is cut off."""
    from dbos import DBOS

    me = settings.executor_id
    say(f"worker {me}: another worker took over its runs; fenced, leaving them and starting again")
    held = drivers.running()
    for child in drivers.running_children():
        stop_tree(child)

    def still_mine(run_id: str) -> bool:
        try:
            status = DBOS.get_workflow_status(run_id)
        except Exception:  # the database away again: the taker has not been seen to
            return True
        return status is not None and status.status == "PENDING" and status.executor_id == me

    deadline = time.monotonic() + settings.lease_seconds
    while held and time.monotonic() < deadline:
        held = [run_id for run_id in held if still_mine(run_id)]
        time.sleep(_CANCEL_POLL_SECONDS)
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
    """End the process without letting DBOS finish the workflows held for hand-back."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
