"""A fleet's capacity board as its runs reach it: through their worker, never the
database. The worker holds the board for every run it drives (postgres_board.
PostgresBoards: one session, which also LISTENs) and hands each child one end of a socket
pair (the seat's `board` names its descriptor, application/fleet_seat.py); the run
holds no connection of its own and never sees the engine's URL or its password. Fifty
runs of a worker cost the database what one does.

One JSON line each way per request, each with its number: the calls of several threads
share a run's link (a wait for news left running in its thread while the loop reads or
probes), and a thread of the run hands each answer to its caller. The probe right a
run holds is its worker's to keep for it: given up by a message, or when the run's end
of the link closes, however the run ended (as PostgreSQL frees a lock whose connection
ends).

Never fatal, like every board: a worker that is gone or does not answer reads as no
record and no news, and a publication or a probe lock then raises OSError. This end
(`LinkedCapacityBoard`) is the standard library's alone: `claudeloop run` must not
load a database driver. The worker's end (`BoardRelay`) serves them from its
`PostgresBoards`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from claudeloop.adapters.shared_capacity.record import (
    LOCK_PATIENCE_SECONDS,
    BoardBusy,
    process_alive,
    sighting_from_json,
    sighting_to_json,
    signals_from_dict,
    signals_to_dict,
    this_host,
)
from claudeloop.application.ports import Sighting, Source, Standing
from claudeloop.domain.signals import TurnSignals

if TYPE_CHECKING:  # the worker's end only: a run never loads psycopg
    from claudeloop.adapters.shared_capacity.postgres_board import PostgresBoards

# How long a run waits for its worker's answer, beyond what the request itself waits
# (a lock's patience, a wait for news): a worker that says nothing in that time is
# taken for gone, for this request.
ANSWER_SECONDS = 10.0
# A publication goes round again when the record moved between the run's look and the
# worker's write: while its patience lasts, and at least this many rounds (patience 0 is
# one attempt at the lock, not one round), then it gives up as on a busy lock. Another
# writer publishing back to back wins round after round: a writer waits for it as for a
# held lock, its patience long.
_PUBLISH_ROUNDS = 20
_BACK_OFF_SECONDS = 0.005  # a round's wait, at most, times the rounds lost so far (to 20)
# How long a release waits for the worker to say it is done: the lock is freed anyway
# when the run's link ends.
_RELEASE_SECONDS = 2.0
# The worker looks at the waits' deadlines this often between two announcements.
_LISTEN_SECONDS = 0.5


class BoardLink:
    """The run's end of the socket pair to its worker: numbered requests, answers
    handed to their callers by a thread of its own (started at the first request)."""

    def __init__(self, descriptor: int) -> None:
        os.set_inheritable(descriptor, False)  # the Claude CLI and its tools get none
        self._socket = socket.socket(fileno=descriptor)
        self._sending = threading.Lock()
        self._lock = threading.Lock()
        self._callers: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._numbers = itertools.count(1)
        self._reader: threading.Thread | None = None
        self._gone = False

    def ask(self, request: dict[str, Any], within: float) -> dict[str, Any] | None:
        """The worker's answer to `request`; None when it is gone or does not answer
        within `within` seconds."""
        number = next(self._numbers)
        answer: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=1)
        with self._lock:
            if self._gone:
                return None
            self._callers[number] = answer
            if self._reader is None:
                self._reader = threading.Thread(target=self._read, name="board-link", daemon=True)
                self._reader.start()
        try:
            if not self.tell({**request, "id": number}):
                return None
            try:
                got = answer.get(timeout=within)
            except queue.Empty:
                return None
            return got if "id" in got else None  # the link's end: no answer
        finally:
            with self._lock:
                self._callers.pop(number, None)

    def tell(self, message: dict[str, Any]) -> bool:
        """Send `message`; False when the worker is gone."""
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        with self._sending:
            try:
                self._socket.sendall(data)
            except OSError:
                return False
        return True

    def _read(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            for message in _messages(self._socket):
                with self._lock:
                    caller = self._callers.get(message.get("id", 0))
                if caller is not None:
                    with contextlib.suppress(queue.Full):
                        caller.put_nowait(message)
        with self._lock:
            self._gone = True
            callers = list(self._callers.values())
        for caller in callers:
            with contextlib.suppress(queue.Full):
                caller.put_nowait({})


_LINKS: dict[int, BoardLink] = {}
_LINKS_LOCK = threading.Lock()


def linked_board(descriptor: int, account: str) -> LinkedCapacityBoard:
    """The board of `account` through the link `descriptor` names: one link per
    process, shared by the boards of every account it uses (a limit policy's detour
    spends another)."""
    with _LINKS_LOCK:
        link = _LINKS.get(descriptor)
        if link is None:
            link = _LINKS[descriptor] = BoardLink(descriptor)
    return LinkedCapacityBoard(link, account)


class LinkedProbeLock:
    """The probe right, held for this run by its worker until released."""

    def __init__(self, link: BoardLink, account: str) -> None:
        self._link: BoardLink | None = link
        self._account = account

    def release(self) -> None:
        """Given up once the worker says so (another run may take it the moment after),
        or, the worker not answering, when this run's link ends."""
        link, self._link = self._link, None
        if link is not None:
            link.ask({"op": "probe_release", "account": self._account}, _RELEASE_SECONDS)


class LinkedCapacityBoard:
    """The `CapacityBoard` port of one account (`account_key`, never a credential),
    through the run's link to its worker."""

    def __init__(self, link: BoardLink, account: str) -> None:
        self._link = link
        self.account = account

    def read(self) -> Sighting | None:
        answer = self._link.ask({"op": "read", "account": self.account}, ANSWER_SECONDS)
        return _sighting_in(answer, "sighting")

    def publish(
        self,
        *,
        signals: TurnSignals,
        standing: Standing,
        source: Source,
        writer: str,
        now: datetime,  # noqa: ARG002 (the database's clock stamps the record)
        run_id: str | None = None,
        unless: Callable[[Sighting | None], bool] = lambda _current: False,
        patience: float = LOCK_PATIENCE_SECONDS,
    ) -> Sighting | None:
        # `unless` is this run's to judge: the worker writes only over the record it was
        # judged on (its number), and answers with the one it found when it moved.
        current = self.read()
        request = {
            "op": "publish",
            "account": self.account,
            "signals": signals_to_dict(signals),
            "standing": standing,
            "source": source,
            "writer": writer,
            "run_id": run_id,
            "pid": os.getpid(),
            "host": this_host(),
        }
        deadline = time.monotonic() + patience
        round_ = 0
        while True:
            if unless(current):
                return None
            left = max(0.0, deadline - time.monotonic())
            if round_ >= _PUBLISH_ROUNDS and left == 0:
                raise BoardBusy(
                    f"capacity board: the record of {self.account} changed under each of "
                    f"{round_} attempts to write it, for over {patience:g}s"
                )
            if round_:
                # Out of step with the writer that got in first each time: a faster one
                # would otherwise win every round.
                time.sleep(random.uniform(0, _BACK_OFF_SECONDS * min(round_, _PUBLISH_ROUNDS)))
            expected = current.seq if current is not None else 0
            asked = {**request, "expect": expected, "patience": left}
            answer = self._link.ask(asked, left + ANSWER_SECONDS)
            _raise_for(answer)
            assert answer is not None  # _raise_for said so
            if "moved" not in answer:
                return _sighting_in(answer, "sighting")
            current = _sighting_in(answer, "moved")
            round_ += 1

    def writer_alive(self, sighting: Sighting) -> bool | None:
        """Whether its writer still runs, told only of a process of this machine: of
        another machine's (or a record of old, that names none) nothing is known here."""
        if sighting.host is None or sighting.host != this_host():
            return None
        return process_alive(sighting.pid)

    def try_probe_lock(self) -> LinkedProbeLock | None:
        answer = self._link.ask({"op": "probe_lock", "account": self.account}, ANSWER_SECONDS)
        _raise_for(answer)
        assert answer is not None  # _raise_for said so
        return LinkedProbeLock(self._link, self.account) if answer.get("held") is True else None

    def wait_for_news(self, after_seq: int, timeout: float) -> Sighting | None:
        """The first record newer than `after_seq`, as soon as one is published (from
        any machine: the worker LISTENs for all its runs), or None after `timeout`."""
        request = {"op": "wait", "account": self.account, "after": after_seq, "timeout": timeout}
        return _sighting_in(self._link.ask(request, timeout + ANSWER_SECONDS), "sighting")

    def close(self) -> None:
        return  # the link is the process's, shared by its boards; it ends with it


def _raise_for(answer: dict[str, Any] | None) -> None:
    """OSError for an answer that says the board could not do it, or for none."""
    if answer is None:
        raise OSError("capacity board: this run's worker does not answer")
    if "busy" in answer:
        raise BoardBusy(str(answer["busy"]))
    if "error" in answer:
        raise OSError(str(answer["error"]))


def _sighting_in(answer: dict[str, Any] | None, key: str) -> Sighting | None:
    text = answer.get(key) if answer is not None else None
    return sighting_from_json(text) if isinstance(text, str) else None


def _messages(connection: socket.socket) -> Iterator[dict[str, Any]]:
    """The JSON objects `connection` sends, a line each, until it closes."""
    with connection.makefile("rb") as lines:
        for line in lines:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                yield message


# The worker's end ---------------------------------------------------------------------


class _Run:
    """The worker's end of one run's link."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self._sending = threading.Lock()

    def answer(self, number: object, **fields: object) -> None:
        if not isinstance(number, int):
            return  # a message that wants no answer
        data = json.dumps({"id": number, **fields}, separators=(",", ":")).encode() + b"\n"
        with self._sending, contextlib.suppress(OSError):  # the run gone: no one to tell
            self.connection.sendall(data)


@dataclass(eq=False)
class _Wait:
    run: _Run
    number: object
    account: str
    after: int
    deadline: float  # monotonic
    answered: bool = False


class BoardRelay:
    """The worker's end of its runs' links: each request answered from `boards`, and
    the runs' waits for news ended by the one LISTEN of the worker, which also keeps
    what is read fresh: between two publications the runs' looks cost the database
    nothing."""

    def __init__(self, boards: PostgresBoards) -> None:
        self._boards = boards
        self._lock = threading.Lock()
        self._waits: list[_Wait] = []
        self._listener: threading.Thread | None = None
        self._closed = threading.Event()
        # Each account's record as the LISTEN keeps it known: read once, then told of
        # each publication (its number), so the runs' reads and waits cost the database
        # nothing until one is announced. Kept only while the LISTEN is known to hear
        # (`_hearing`); `_era` changes with that and whenever a kept record is dropped,
        # and a read begun in another era is not kept (it may predate what was told).
        self._known: dict[str, Sighting | None] = {}
        self._hearing = False
        self._era = 0

    def serve(self, connection: socket.socket, name: str) -> None:
        """Answer the run at the other end of `connection` until it closes."""
        threading.Thread(
            target=self._answer, args=(_Run(connection),), name=f"board-{name}", daemon=True
        ).start()

    def close(self) -> None:
        self._closed.set()
        self._boards.close()

    def _answer(self, run: _Run) -> None:
        try:
            with contextlib.suppress(OSError, ValueError):
                for message in _messages(run.connection):
                    self._handle(run, message)
        finally:
            # However the run ended, what it held is given up and its waits end.
            self._boards.release_probe_locks(run)
            with self._lock:
                self._waits = [wait for wait in self._waits if wait.run is not run]
            run.connection.close()

    def _handle(self, run: _Run, message: dict[str, Any]) -> None:
        number = message.get("id")
        account = str(message.get("account"))
        try:
            match message.get("op"):
                case "read":
                    self._start_listening()
                    run.answer(number, sighting=_text(self._record(account)))
                case "publish":
                    self._publish(run, number, account, message)
                case "probe_lock":
                    run.answer(number, held=self._boards.try_probe_lock(account, run))
                case "probe_release":
                    self._boards.release_probe_locks(run, account)
                    run.answer(number, released=True)
                case "wait":
                    after, timeout = int(message["after"]), float(message["timeout"])
                    self._wait(_Wait(run, number, account, after, time.monotonic() + timeout))
                case other:
                    run.answer(number, error=f"capacity board: no request {other!r} here")
        except BoardBusy as busy:
            self._deaf()  # the session was ended, its LISTEN with it
            run.answer(number, busy=str(busy))
        except OSError as error:
            self._deaf()
            run.answer(number, error=str(error))
        except (ValueError, TypeError, KeyError):  # a newer claudeloop's, or no request
            run.answer(number, error="capacity board: a request this worker cannot read")

    def _publish(self, run: _Run, number: object, account: str, message: dict[str, Any]) -> None:
        expected = int(message["expect"])
        era = self._era_now()  # what is written is kept only if the LISTEN heard all along
        found: list[Sighting | None] = []

        def moved(current: Sighting | None) -> bool:
            if (current.seq if current is not None else 0) == expected:
                return False
            found.append(current)
            return True

        written = self._boards.publish(
            account,
            signals=signals_from_dict(message["signals"]),
            standing=message["standing"],
            source=message["source"],
            writer=str(message["writer"]),
            run_id=None if message.get("run_id") is None else str(message["run_id"]),
            pid=int(message["pid"]),
            host=str(message["host"]),
            unless=moved,
            patience=float(message["patience"]),
        )
        if written is None:
            run.answer(number, moved=_text(found[-1] if found else None))
        else:
            self._keep(account, written, era)
            run.answer(number, sighting=_text(written))
            # This worker's other runs hear of it now: its NOTIFY comes back to the
            # session that sent it, where the LISTEN may collect it only later.
            self._heard(account, written)

    def _wait(self, wait: _Wait) -> None:
        with self._lock:
            self._waits.append(wait)
        self._start_listening()
        self._look(wait.account)  # a record published before the wait began

    def _start_listening(self) -> None:
        with self._lock:
            if self._listener is None:
                self._listener = threading.Thread(
                    target=self._listen, name="board-news", daemon=True
                )
                self._listener.start()

    def _listen(self) -> None:
        """Until closed: end each wait at news of its account or at its deadline. The
        first LISTEN, and each after a failure, may have missed an announcement: every
        waiting account's record is read once it listens again."""
        missed = True
        while not self._closed.is_set():
            now = time.monotonic()
            with self._lock:
                late = [wait for wait in self._waits if wait.deadline <= now]
            for wait in late:
                self._end(wait, None)
            try:
                # Listening again, it waits for nothing: what the runs read holds from
                # the moment it listens, not half a second later.
                news = self._boards.news(0 if missed else _LISTEN_SECONDS)
            except OSError:
                missed = True
                self._deaf()
                self._closed.wait(_LISTEN_SECONDS)
                continue
            if missed:
                self._hear()  # listening since before this call: what is read now holds
            for account, seq in news:
                self._told(account, seq)
            with self._lock:
                waiting = {wait.account for wait in self._waits}
            told = waiting if missed else waiting & {account for account, _ in news}
            missed = False
            for account in told:
                self._look(account)

    def _look(self, account: str) -> None:
        """The account's record, once, and end each of its waits it is news to."""
        try:
            latest = self._record(account)
        except OSError:
            self._deaf()
            return  # read again at the next news, or the wait ends at its deadline
        if latest is not None:
            self._heard(account, latest)

    def _record(self, account: str) -> Sighting | None:
        """The account's record: as kept, or read (and kept while the LISTEN hears)."""
        with self._lock:
            if self._hearing and account in self._known:
                return self._known[account]
            era = self._era
        latest = self._boards.read(account)
        self._keep(account, latest, era)
        return latest

    def _era_now(self) -> int:
        with self._lock:
            return self._era

    def _keep(self, account: str, sighting: Sighting | None, era: int) -> None:
        """Keep `sighting` as the account's record, unless the LISTEN did not hear all
        along since it was read, or a publication was told of meanwhile (`era`)."""
        with self._lock:
            if self._hearing and era == self._era:
                self._known[account] = sighting

    def _told(self, account: str, seq: int | None) -> None:
        """A publication announced (`seq` None: a payload this claudeloop cannot read):
        what is kept of the account is old unless it is that one or newer (this
        worker's own publication comes back so)."""
        with self._lock:
            kept = self._known.get(account)
            if seq is None or kept is None or kept.seq < seq:
                self._known.pop(account, None)
                self._era += 1

    def _hear(self) -> None:
        with self._lock:
            self._hearing = True
            self._era += 1

    def _deaf(self) -> None:
        """The LISTEN may have missed announcements (its session ended, or it failed):
        nothing kept holds until it listens again."""
        with self._lock:
            self._hearing = False
            self._era += 1
            self._known.clear()

    def _heard(self, account: str, latest: Sighting) -> None:
        """End each wait on `account` that `latest` is news to."""
        with self._lock:
            ended = [w for w in self._waits if w.account == account and latest.seq > w.after]
        for wait in ended:
            self._end(wait, latest)

    def _end(self, wait: _Wait, sighting: Sighting | None) -> None:
        with self._lock:
            if wait.answered:
                return
            wait.answered = True
            with contextlib.suppress(ValueError):
                self._waits.remove(wait)
        wait.run.answer(wait.number, sighting=_text(sighting))


def _text(sighting: Sighting | None) -> str | None:
    return sighting_to_json(sighting) if sighting is not None else None
