"""The child runs: each run a worker takes is driven by the unchanged claudeloop command
line, as a child process in the run's directory, started and watched here.

The first time a run is taken its child is `claudeloop run ... --run-id ID`; when the
run directory already holds a record (a worker died or was stopped mid-run) it is
`claudeloop resume --run-id ID`, which keeps the run's Claude session, ledger and probe
instant. The child's exit code is the run's result. While a child runs, the engine's
copy of its record is kept (record_sync.py), and what was asked of it through the
engine (a cancel, a stop, a request) is written into its control file.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NoReturn, TypeVar

from claudeloop.adapters.fleet import repo, run_archive
from claudeloop.adapters.fleet.engine import ENGINE_VARIABLE, engine_error
from claudeloop.adapters.fleet.forks import Child, ForkServer
from claudeloop.adapters.fleet.lease_file import FENCED_EXIT, lease_holds
from claudeloop.adapters.fleet.leases import Cancelled, Fenced, Leases, NoRoom
from claudeloop.adapters.fleet.queue import Order
from claudeloop.adapters.fleet.record_sync import RecordSync
from claudeloop.adapters.fleet.repo import RepoFailed
from claudeloop.adapters.fleet.worker_settings import (
    FAILED_EXIT,
    POLL_SECONDS,
    SIGNALLED_EXITS,
    STOPPED_EXIT,
    USAGE_EXIT,
    WorkerSettings,
)
from claudeloop.adapters.private_file import make_private_directory
from claudeloop.adapters.run_directory.control import steer_from_json
from claudeloop.adapters.run_directory.layout import RunDirectory, runs_root
from claudeloop.adapters.run_directory.lock import live_driver
from claudeloop.adapters.shared_capacity.board_link import BoardRelay
from claudeloop.application.fleet_seat import SEAT_VARIABLES, FleetSeat
from claudeloop.domain.loop import ControlCommand

T = TypeVar("T")
# A child that exits by a signal (130, 143) may have had the terminal's or the
# supervisor's too: give the
# worker's own handler this long to say the worker is stopping, so the run is handed
# back rather than recorded as stopped.
_SIGNAL_GRACE_SECONDS = 1.0


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
        *,
        per_account: Callable[[], int | None] | None = None,
        forks: ForkServer | None = None,
    ) -> None:
        """`boards`: the fleet's capacity board this worker serves its runs on
        PostgreSQL (None: each run shares its machine's file). `per_account`: the
        queue's limit of one account's runs at once, as set now (None: this worker's
        own setting). `forks`: where its runs are forked from, ready (forks.py; None,
        or a run it cannot fork: started afresh)."""
        self._say = say
        self._settings = settings
        self._leases = leases
        self._boards = boards
        self._per_account = per_account or (lambda: settings.per_account)
        self._forks = forks
        self._child_env = {**environ, **FleetSeat(lease=settings.lease_file).environment()}
        self._lock = threading.Lock()
        self.children: dict[str, Child] = {}
        self.places: dict[str, Path] = {}  # each running run's directory
        self.claimed: set[str] = set()  # the runs this life of the worker claimed
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
        try:
            epoch = self._claim(run_id, order)
        except Cancelled:
            self._say(f"run {run_id}: cancelled before it started")
            return STOPPED_EXIT
        try:
            return self._drive_claimed(run_id, order, cwd, epoch)
        finally:
            with self._lock:
                self.claimed.discard(run_id)

    def _drive_claimed(self, run_id: str, order: Order, cwd: Path, epoch: int) -> int:
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
                time.sleep(POLL_SECONDS)
            self._say(f"run {run_id}: its lease lapsed but no worker took it; resuming it")
        if run_id not in self.cancelled and (
            self.stopping.is_set()
            or (code in SIGNALLED_EXITS and self.stopping.wait(_SIGNAL_GRACE_SECONDS))
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
        told = {name: int(fd) for name, fd in seat.environment().items()}  # forked
        with self._lock, theirs, board_theirs or contextlib.nullcontext():
            child: Child | None = None
            if not self.stopping.is_set():
                try:
                    if self._forks is not None:
                        child = self._forks.start(command, env=env, cwd=cwd, told=told)
                    if child is None:
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
        copy = RecordSync(
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
                code = child.wait(timeout=POLL_SECONDS)
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
        state = run_archive.read_state(runs_root(cwd) / run_id)
        inner = state.get("state") if state else None
        return inner.get("turns") if isinstance(inner, dict) else None

    def _progress(self, cwd: Path, run_id: str) -> object:
        """What a push follows: the turns answered and the last one committed (a run
        that commits its turns itself commits just after the turn is saved)."""
        state = run_archive.read_state(runs_root(cwd) / run_id)
        committed = state.get("checkpointed_turn") if state else None
        return (self._turns(cwd, run_id), committed)

    def _push(self, run_id: str, cwd: Path) -> object:
        """Commit and push the working tree after a turn (work in progress); returns
        what it covers. A push that fails is said and tried after the next turn."""
        progress = self._progress(cwd, run_id)
        turns = self._turns(cwd, run_id)
        state = run_archive.read_state(runs_root(cwd) / run_id)
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

    def _claim(self, run_id: str, order: Order) -> int:
        """The run this worker's from now (its epoch), once its account has room for it
        (`--per-account`, counted across the fleet); Cancelled when it was cancelled."""
        me = self._settings.executor_id
        data = json.dumps(order.to_json())
        told = False
        while True:
            try:
                epoch = self._retried(
                    run_id,
                    lambda: self._leases.claim(
                        run_id,
                        me,
                        data,
                        order.account,
                        per_account=self._per_account(),
                        driving=self._claimed(),
                    ),
                )
            except Fenced:
                self._hold()
            except NoRoom as full:
                if not told:
                    self._say(
                        f"run {run_id}: waits for a slot of account {order.account!r}"
                        f" ({full.running} of its runs running)"
                    )
                    told = True
                if self.stopping.wait(POLL_SECONDS):
                    self._hold()  # not started: the next worker takes it from the queue
                continue
            with self._lock:
                self.claimed.add(run_id)
            return epoch

    def _claimed(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self.claimed)

    def _still_holds(self, run_id: str, epoch: int) -> bool:
        return self._retried(run_id, lambda: self._leases.holds(run_id, epoch))

    def _retried(self, run_id: str, ask: Callable[[], T]) -> T:
        """`ask` the engine until it answers (the database away for a moment)."""
        while True:
            try:
                return ask()
            except (Fenced, Cancelled, NoRoom):
                raise
            except Exception as error:  # SQLAlchemy's errors, of either driver
                self._say(
                    f"run {run_id}: cannot reach the engine ({engine_error(error)}); retrying"
                )
                time.sleep(POLL_SECONDS * 4)

    def _restore(self, run_id: str, cwd: Path) -> None:
        """The run's record and transcript from the engine, when another worker stored
        them last (or this machine has no record): a takeover."""
        stored = self._retried(run_id, lambda: self._leases.stored(run_id))
        if stored is None or stored.record is None:
            return
        if stored.saved_by == self._settings.executor_id and record_exists(cwd, run_id):
            return  # this machine's record is at least as new
        directory = runs_root(cwd) / run_id
        here = run_archive.ledger_of(run_archive.read_state(directory))
        there = run_archive.ledger_of(run_archive.state_in(stored.record))
        if here is not None and there is not None and here.is_ahead_of(there):
            # A save this machine made whose store in the engine its worker did not live
            # to make: that turn was answered and paid for, and is not sent again.
            self._say(
                f"run {run_id}: this machine's record is newer than the engine's; going on from it"
            )
            return
        run_archive.unpack_record(stored.record, directory)
        was = run_archive.relocate(directory, cwd)
        session = run_archive.session_of(run_archive.read_state(directory))
        if stored.transcript is not None and session is not None:
            path = run_archive.transcript_path(self._child_env, cwd, session)
            moved = (was, cwd) if was is not None else None
            run_archive.unpack_transcript(stored.transcript, path, moved)
        self._say(f"run {run_id}: taken over from {stored.saved_by} ({stored.phase})")

    def _hold(self) -> NoReturn:
        # The thread of a run being handed back waits here until the process exits.
        while True:
            threading.Event().wait()

    def stop(self, *, forward: bool) -> None:
        """Take no new run; bring the running ones to a safe point (a second time: end
        them at once, as a second Ctrl-C does). `forward`: send the children the stop,
        unless the signal reached them already: SIGTERM, and the second time SIGINT (a
        run of a worker takes a SIGTERM after the first for the same stop, which a
        signal to the worker's whole process group delivers twice: adapters/interrupts.py)."""
        with self._lock:
            again = self.stopping.is_set()
            self.stopping.set()
            if forward:
                for child in self.children.values():
                    _signal(child, signal.SIGINT if again else signal.SIGTERM)

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


def _signal(child: Child, which: signal.Signals) -> None:
    if child.poll() is None:
        child.send_signal(which)
