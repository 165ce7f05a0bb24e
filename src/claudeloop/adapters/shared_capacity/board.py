"""What the loops of one account last learned about its capacity: one JSON record in the
user state directory, shared by every claudeloop process on the machine.

The record is replaced atomically (temp file, fsync, rename) under an exclusive `flock`
on a sibling lock file, so a reader without the lock sees the old record or the new one,
never half of one. The lock is held for a read and a rename; a writer waits for it a
bounded time only, so a stuck process holding it never freezes the loops sharing it. A
record that is half-written anyway (a full disk, an older version) reads as no record
at all. A second lock file elects the one loop that probes; the kernel releases it
when its holder dies, so a crashed prober is taken over, not waited for.

The record never holds a credential: the account is named by a short hash.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path

from claudeloop.adapters import credentials
from claudeloop.adapters.atomic_file import write_atomically
from claudeloop.adapters.private_file import make_private_directory
from claudeloop.adapters.shared_capacity.record import (
    LOCK_PATIENCE_SECONDS,
    BoardBusy,
    process_alive,
    sighting_from_json,
    sighting_to_json,
    this_host,
)
from claudeloop.application.ports import AccountSighting, CapacityBoard, Sighting, Source, Standing
from claudeloop.domain.signals import TurnSignals

# The record's text and the writer's checks live in `record`, shared with the fleet's
# board; said here too, as the file board's own.
__all__ = [
    "CREDENTIAL_VARIABLES",
    "DEFAULT_BASE_URL",
    "LOCK_PATIENCE_SECONDS",
    "STATE_DIR_VARIABLE",
    "BoardBusy",
    "FileCapacityBoard",
    "MachineBoards",
    "ProbeLock",
    "account_key",
    "board_for",
    "capacity_directory",
    "process_alive",
    "sighting_from_json",
    "sighting_to_json",
    "this_host",
]

STATE_DIR_VARIABLE = "CLAUDELOOP_STATE_DIR"
DEFAULT_BASE_URL = "https://api.anthropic.com"
# Every credential and provider variable that is set is part of the account's identity.
# Sorted: the key is a hash of them in this order, and it must not move when the one
# list's order does (loops of the same account would stop sharing what they learn).
CREDENTIAL_VARIABLES = tuple(sorted(credentials.CREDENTIAL_VARIABLES))
_PROVIDER_VARIABLES = tuple(sorted(credentials.PROVIDER_VARIABLES))
_NEWS_POLL_SECONDS = 0.2
_LOCK_RETRY_SECONDS = 0.01


def capacity_directory(environ: Mapping[str, str]) -> Path:
    """CLAUDELOOP_STATE_DIR/capacity, else the platform's user state directory's."""
    override = environ.get(STATE_DIR_VARIABLE)
    if override:
        return Path(override).expanduser() / "capacity"
    import platformdirs

    return Path(platformdirs.user_state_dir("claudeloop")) / "capacity"


def board_for(directory: Path, account: str, fleet_board: int | None) -> CapacityBoard:
    """The account's board: the fleet's, through the link to the worker that started
    this run on PostgreSQL (`fleet_board`, the descriptor its seat names), else the file
    record in `directory`, shared by the machine's loops."""
    if fleet_board is None:
        return FileCapacityBoard(directory, account)
    from claudeloop.adapters.shared_capacity.board_link import linked_board

    return linked_board(fleet_board, account)


def account_key(environment: Mapping[str, str], model: str | None) -> str:
    """A short name for the account and model a loop spends: a hash of the base URL,
    the credentials in use (or, with none, the login the CLI keeps) and the model.

    The model is part of it because some windows are a model's own (`seven_day_opus`)
    and a probe answers for its model only: loops on different models keep apart.
    """
    base_url = (environment.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
    model_name = model or environment.get("ANTHROPIC_MODEL") or ""
    parts = [f"base_url={base_url}", f"model={model_name}"]
    in_use = [
        f"{name}={environment[name]}" for name in CREDENTIAL_VARIABLES if environment.get(name)
    ]
    if not in_use:
        home = environment.get("HOME", "~")
        parts.append("login=" + (environment.get("CLAUDE_CONFIG_DIR") or f"{home}/.claude"))
    parts += in_use
    parts += [
        f"{name}={environment[name]}" for name in _PROVIDER_VARIABLES if environment.get(name)
    ]
    digest = hashlib.sha256(b"claudeloop capacity\n" + "\n".join(parts).encode())
    return digest.hexdigest()[:16]


class MachineBoards:
    """The `AccountBoards` port: every account's record in this machine's directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def sightings(self) -> list[AccountSighting]:
        try:
            names = sorted(path.stem for path in self.directory.glob("*.json"))
        except OSError:
            return []
        return [
            AccountSighting(name, FileCapacityBoard(self.directory, name).read()) for name in names
        ]


class ProbeLock:
    """The right to probe for every loop of the account, held until released (or until
    the holder's process ends)."""

    def __init__(self, descriptor: int) -> None:
        self._descriptor: int | None = descriptor

    def release(self) -> None:
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(descriptor, fcntl.LOCK_UN)
            os.close(descriptor)


class FileCapacityBoard:
    """The `CapacityBoard` port on one machine: the record of one account, in `directory`."""

    def __init__(self, directory: Path, account: str) -> None:
        self.directory = directory
        self.path = directory / f"{account}.json"
        self._lock_path = directory / f"{account}.lock"
        self._probe_lock_path = directory / f"{account}.probe.lock"

    def read(self) -> Sighting | None:
        """The current record; None when there is none or it cannot be read."""
        try:
            return sighting_from_json(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return None

    def publish(
        self,
        *,
        signals: TurnSignals,
        standing: Standing,
        source: Source,
        writer: str,
        now: datetime,
        run_id: str | None = None,
        unless: Callable[[Sighting | None], bool] = lambda _current: False,
        patience: float = LOCK_PATIENCE_SECONDS,
    ) -> Sighting | None:
        """Write a new record (the next sequence number) unless `unless(current)` says
        the current record is better news; returns what was written. BoardBusy when
        another process holds the lock for over `patience` seconds (0: one attempt)."""
        with self._locked(patience):
            current = self.read()
            if unless(current):
                return None
            sighting = Sighting(
                seq=(current.seq if current else 0) + 1,
                at=now,
                pid=os.getpid(),
                writer=writer,
                source=source,
                standing=standing,
                signals=signals,
                run_id=run_id,
                host=this_host(),
            )
            write_atomically(self.path, sighting_to_json(sighting))
            return sighting

    def writer_alive(self, sighting: Sighting) -> bool | None:
        """Whether its writer still runs. The loops sharing this file run on this
        machine (a record of old, without its host, was written here too), unless the
        state directory is shared with another machine's."""
        if sighting.host is not None and sighting.host != this_host():
            return None
        return process_alive(sighting.pid)

    def wait_for_news(self, after_seq: int, timeout: float) -> Sighting | None:
        """The first record newer than `after_seq`, or None after `timeout` seconds.
        One machine's loops share one disk: looking a few times a second is enough."""
        deadline = time.monotonic() + timeout
        while True:
            latest = self.read()
            if latest is not None and latest.seq > after_seq:
                return latest
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            time.sleep(min(_NEWS_POLL_SECONDS, remaining))

    def try_probe_lock(self) -> ProbeLock | None:
        """The probe lock when no other loop holds it, else None (never blocks)."""
        self._ensure_directory()
        descriptor = os.open(self._probe_lock_path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            return None
        return ProbeLock(descriptor)

    @contextlib.contextmanager
    def _locked(self, patience: float) -> Iterator[None]:
        self._ensure_directory()
        descriptor = os.open(self._lock_path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            deadline = time.monotonic() + patience
            while True:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise BoardBusy(
                            f"{self._lock_path}: held by another process for over {patience:g}s"
                        ) from None
                    time.sleep(_LOCK_RETRY_SECONDS)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def _ensure_directory(self) -> None:
        make_private_directory(self.directory)
