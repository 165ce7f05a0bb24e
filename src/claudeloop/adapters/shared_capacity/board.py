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
import json
import os
import socket
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from claudeloop.adapters import credentials
from claudeloop.adapters.atomic_file import write_atomically
from claudeloop.adapters.private_file import make_private_directory
from claudeloop.application.ports import CapacityBoard, Sighting, Source, Standing
from claudeloop.domain.signals import TurnSignals, WindowUsage
from claudeloop.domain.text import first_line

STATE_DIR_VARIABLE = "CLAUDELOOP_STATE_DIR"
# Set by a fleet's worker on PostgreSQL for the runs it starts: the engine's URL, whose
# `claudeloop_capacity` table is the board every machine's runs share.
FLEET_BOARD_VARIABLE = "CLAUDELOOP_FLEET_BOARD"
DEFAULT_BASE_URL = "https://api.anthropic.com"
# Every credential and provider variable that is set is part of the account's identity.
# Sorted: the key is a hash of them in this order, and it must not move when the one
# list's order does (loops of the same account would stop sharing what they learn).
CREDENTIAL_VARIABLES = tuple(sorted(credentials.CREDENTIAL_VARIABLES))
_PROVIDER_VARIABLES = tuple(sorted(credentials.PROVIDER_VARIABLES))
_VERSION = 1
_NEWS_POLL_SECONDS = 0.2
_LONGEST_TEXT = 300
# How long a writer waits for the record's lock by default (held for milliseconds).
LOCK_PATIENCE_SECONDS = 2.0
_LOCK_RETRY_SECONDS = 0.01


def capacity_directory(environ: Mapping[str, str]) -> Path:
    """CLAUDELOOP_STATE_DIR/capacity, else the platform's user state directory's."""
    override = environ.get(STATE_DIR_VARIABLE)
    if override:
        return Path(override).expanduser() / "capacity"
    import platformdirs

    return Path(platformdirs.user_state_dir("claudeloop")) / "capacity"


_fleet_board: list[str] = []


def fleet_board(environ: MutableMapping[str, str]) -> str | None:
    """The fleet's board its worker named for this run, if any. Taken out of `environ`
    the first time it is asked for (and remembered): the CLI, its tools and the checks a
    run starts inherit the environment, and the URL may hold the database's password."""
    named = environ.pop(FLEET_BOARD_VARIABLE, None)
    if named:
        _fleet_board[:] = [named]
    return _fleet_board[0] if _fleet_board else None


def board_for(directory: Path, account: str, environ: MutableMapping[str, str]) -> CapacityBoard:
    """The account's board: the fleet's in PostgreSQL when a worker on PostgreSQL started
    this run, else the file record in `directory`, shared by the machine's loops."""
    fleet = fleet_board(environ)
    if fleet is None:
        return FileCapacityBoard(directory, account)
    # psycopg (the `fleet` extra) is loaded only here, never by a run of one machine.
    from claudeloop.adapters.shared_capacity.postgres_board import PostgresCapacityBoard

    return PostgresCapacityBoard(fleet, account)


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


class BoardBusy(OSError):
    """Another process held the record's lock for longer than a writer waits."""


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


def this_host() -> str:
    """The machine's name, as a record says which machine its writer ran on."""
    return socket.gethostname()


def process_alive(pid: int) -> bool:
    """Whether process `pid` of this machine runs (or has not been reaped yet). A pid
    taken again by another process reads as alive: its record is then trusted, as every
    record was before records said who wrote them."""
    if pid <= 0:
        return False  # 0 and below name process groups, never a writer
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process (EPERM): it runs
    return True


def sighting_to_json(sighting: Sighting) -> str:
    # Still version 1: the run id and host are keys an older reader skips, and a record
    # an older version wrote (without them) reads here with None for each.
    return json.dumps(
        {
            "version": _VERSION,
            "seq": sighting.seq,
            "at": sighting.at.isoformat(),
            "pid": sighting.pid,
            "writer": sighting.writer,
            "run_id": sighting.run_id,
            "host": sighting.host,
            "source": sighting.source,
            "standing": sighting.standing,
            "signals": signals_to_dict(sighting.signals),
        },
        sort_keys=True,
    )


def sighting_from_json(text: str) -> Sighting | None:
    """The record, or None for anything that is not a whole record of this version."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            return None
        source, standing = data["source"], data["standing"]
        if source not in ("turn", "probe") or standing not in ("open", "closed", "other"):
            return None
        return Sighting(
            seq=int(data["seq"]),
            at=_aware(data["at"]),
            pid=int(data["pid"]),
            writer=str(data["writer"]),
            source=source,
            standing=standing,
            signals=signals_from_dict(data["signals"]),
            run_id=_text(data.get("run_id")),
            host=_text(data.get("host")),
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def signals_to_dict(signals: TurnSignals) -> dict[str, Any]:
    return {
        "rate_limit_status": signals.rate_limit_status,
        "rate_limit_type": signals.rate_limit_type,
        "resets_at": _instant(signals.resets_at),
        "utilization": signals.utilization,
        "overage_status": signals.overage_status,
        "overage_disabled_reason": signals.overage_disabled_reason,
        "overage_resets_at": _instant(signals.overage_resets_at),
        "overage_in_use": signals.overage_in_use,
        "grace_active": signals.grace_active,
        "daily_cap_paused": signals.daily_cap_paused,
        "error_code": signals.error_code,
        "api_error_status": signals.api_error_status,
        "assistant_error": signals.assistant_error,
        # An error's first line only: a result is the model's work, not capacity.
        "result_text": first_line(signals.result_text, longest=_LONGEST_TEXT)
        if signals.is_error
        else "",
        "local_backend": signals.local_backend,
        "is_error": signals.is_error,
        "windows": [
            {
                "window": usage.window,
                "utilization": usage.utilization,
                "resets_at": _instant(usage.resets_at),
                "status": usage.status,
            }
            for usage in signals.windows
        ],
    }


def signals_from_dict(data: Mapping[str, Any]) -> TurnSignals:
    status = data.get("api_error_status")
    utilization = data.get("utilization")
    return TurnSignals(
        rate_limit_status=_text(data.get("rate_limit_status")),
        rate_limit_type=_text(data.get("rate_limit_type")),
        resets_at=_aware(data["resets_at"]) if data.get("resets_at") else None,
        utilization=float(utilization) if utilization is not None else None,
        overage_status=_text(data.get("overage_status")),
        overage_disabled_reason=_text(data.get("overage_disabled_reason")),
        # Written since 2026-12-02: a record from before has neither.
        overage_resets_at=_aware(data["overage_resets_at"])
        if data.get("overage_resets_at")
        else None,
        overage_in_use=bool(data.get("overage_in_use")),
        # Written since 2026-12-02 (a grace period, the organization's daily cap): a
        # record from before has neither, and meant neither.
        grace_active=bool(data.get("grace_active")),
        daily_cap_paused=bool(data.get("daily_cap_paused")),
        error_code=_text(data.get("error_code")),
        api_error_status=int(status) if status is not None else None,
        assistant_error=_text(data.get("assistant_error")),
        result_text=str(data.get("result_text") or ""),
        local_backend=bool(data.get("local_backend")),
        is_error=bool(data.get("is_error")),
        windows=tuple(
            WindowUsage(
                window=str(usage["window"]),
                utilization=(
                    float(usage["utilization"]) if usage.get("utilization") is not None else None
                ),
                resets_at=_aware(usage["resets_at"]) if usage.get("resets_at") else None,
                status=_text(usage.get("status")),
            )
            for usage in data.get("windows") or ()
        ),
    )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _instant(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def _aware(text: object) -> datetime:
    instant = datetime.fromisoformat(str(text))
    if instant.utcoffset() is None:
        raise ValueError("not an aware instant")
    return instant
