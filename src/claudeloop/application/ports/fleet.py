"""The fleet, as its commands use it: its queue of runs, and a worker's host."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from claudeloop.application.records import RunRecord
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.steering import Steer


@dataclass(frozen=True)
class QueuedRun:
    """A run of the fleet's queue: its state in the user's words (queued, running, done,
    exit N, cancelled, failed), where it runs, the account it spends, its worker."""

    run_id: str
    state: str
    cwd: str
    account: str
    worker: str | None

    def to_json(self) -> dict[str, str | None]:
        return {
            "run_id": self.run_id,
            "state": self.state,
            "cwd": self.cwd,
            "account": self.account,
            "worker": self.worker,
        }


@dataclass(frozen=True)
class StoredRun:
    """What the worker holding a run stored of it last: who holds it, its phase, and its
    record (None before the first; `readable` False when this claudeloop cannot read
    the one stored)."""

    holder: str | None
    phase: str | None
    record: RunRecord | None
    readable: bool = True


@dataclass(frozen=True)
class RunSummary:
    """A run's line in the fleet's overview (`status --engine`), which its worker keeps
    beside the run's record at each store: the overview reads these, never a record."""

    phase: str
    turns: int
    dollars: float
    next_probe_at: datetime | None = None
    plan_done: int | None = None
    plan_total: int | None = None
    # The prompts sent (answered or refused), the probes, and the probes' share of
    # `dollars`, as the read model says them (run_facts.py); None in a summary a worker
    # of before stored.
    sent: int | None = None
    probes: int | None = None
    probe_dollars: float | None = None
    # The part of `dollars` that is an estimate (a turn a kill cut off; ADR 0010).
    estimated_dollars: float | None = None


@dataclass(frozen=True)
class StoredSummary:
    """A run's summary as the engine holds it: who holds the run, its phase, and its
    summary (None before its first store; `readable` False when this claudeloop cannot
    read the one stored)."""

    holder: str | None
    phase: str | None
    summary: RunSummary | None
    readable: bool = True


@dataclass(frozen=True)
class AccountCapacity:
    """An account's row of the fleet's capacity board, as `status --engine` shows it."""

    account: str
    standing: str
    at: str
    source: str
    writer: str
    resets_at: str | None


class RunIdTaken(ValueError):
    """The run id is already in the fleet's queue."""


class Fleet(Protocol):
    """A fleet's engine as its commands see it: the queue of runs, what the workers
    stored of each, the stop and wind-down asked of them, the accounts' capacity.

    Reading sets nothing up and writes nothing: `exists` says whether there is a fleet
    to read; only `set_up` and `enqueue` make one.
    """

    @property
    def masked_url(self) -> str:
        """The engine's URL with its password masked."""
        ...

    def exists(self) -> bool: ...

    def set_up(self) -> None: ...

    def enqueue(
        self,
        run_id: str,
        cwd: str,
        arguments: list[str],
        account: str,
        *,
        repo: str | None = None,
        branch: str | None = None,
    ) -> None:
        """Queue a run; RunIdTaken when the id is in the queue already."""
        ...

    def queue(self) -> list[QueuedRun]:
        """Every run of the queue, oldest first."""
        ...

    def queued(self, run_id: str) -> QueuedRun | None: ...

    def cancel(self, run_id: str) -> QueuedRun | None:
        """Cancel the run (queued: it never starts; running: its worker stops it); the
        run as it was, None when the queue has no such run."""
        ...

    def stored(self, run_id: str) -> StoredRun | None: ...

    def summaries(self) -> dict[str, StoredSummary]:
        """Every run's summary, by run id: no record is read (a row stored before
        summaries were kept is summed up from its record)."""
        ...

    def event_lines(self, run_id: str) -> list[bytes]:
        """The whole lines of the run's events.jsonl as its worker stored it last."""
        ...

    def capacity(self) -> list[AccountCapacity]: ...

    def ask(self, run_id: str, command: ControlCommand) -> None:
        """Ask the run's worker to pass a stop or wind-down on to it."""
        ...

    def steer(self, run_id: str, asked: Steer) -> None:
        """Ask the run's worker to pass a request (domain.steering) on to it."""
        ...


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How a worker takes runs: how many at once, of one account at once, its name on
    this machine, its lease, and where it finds runs queued by a checkout's name."""

    slots: int
    per_account: int
    name: str | None
    lease_seconds: float
    work_root: Path | None


class WorkerHost(Protocol):
    """A machine a fleet's worker runs on, for the fleet's engine."""

    def is_directory(self, path: Path) -> bool:
        """Whether `path` is a directory of this machine."""
        ...

    def serve(self, options: WorkerOptions, say: Callable[[str], None]) -> int:
        """Take runs until SIGTERM or SIGINT; the exit code (130 when stopped).
        UsageError when a worker of the same name runs on this machine."""
        ...

    def exit_now(self, code: int) -> None:
        """End the process with `code`, leaving the engine's held work for another."""
        ...
