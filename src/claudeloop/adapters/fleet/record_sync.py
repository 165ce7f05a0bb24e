"""The engine's copy of a run's record: what a worker stores of the run it drives, so
that whenever it dies a successor starts from every turn the runner said finished.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from claudeloop.adapters.fleet import run_archive
from claudeloop.adapters.fleet.engine import engine_error
from claudeloop.adapters.fleet.forks import Child
from claudeloop.adapters.fleet.lease_file import REFUSED, STORED, stop_tree
from claudeloop.adapters.fleet.leases import EVENTS, TRANSCRIPT, Fenced, Leases
from claudeloop.adapters.fleet.worker_settings import POLL_SECONDS
from claudeloop.adapters.run_directory.layout import runs_root

# Within a turn (its transcript growing) a run's copy in the engine is stored at most
# this often; each save of the run's record is stored at once.
_STORE_EVERY_SECONDS = 5.0
_TAIL_BYTES = 64


class RecordSync:
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
        child: Child,
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
        return run_archive.fingerprint([*self._paths(run_archive.read_state(self._directory))])

    def _paths(self, state: Mapping[str, object] | None) -> list[Path]:
        session = run_archive.session_of(state)
        paths = [self._directory / name for name in run_archive.RECORD_FILES]
        if session is not None:
            paths.append(run_archive.transcript_path(self._environ, self._cwd, session))
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
        now = run_archive.fingerprint(paths)
        session = run_archive.session_of(state)
        transcript = (
            paths[len(run_archive.RECORD_FILES)]
            if len(paths) > len(run_archive.RECORD_FILES)
            else None
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
                    phase=run_archive.phase_of(state),
                    state=gzip.compress(state_bytes),
                    summary=run_archive.summary_of(state),
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
            phase=run_archive.phase_of(state),
            record=run_archive.pack_files(
                {"state.json": state_bytes, "events.jsonl": events_bytes}
            ),
            transcript=gzip.compress(transcript_bytes) if transcript_bytes is not None else None,
            summary=run_archive.summary_of(state),
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
            time.sleep(POLL_SECONDS * 4)

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
