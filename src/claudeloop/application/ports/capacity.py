"""Where the loops of one account share what they learn about its capacity."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from claudeloop.domain.signals import TurnSignals

# What a sighting says of the account's capacity, and what made it.
Standing = Literal["open", "closed", "other"]
Source = Literal["turn", "probe"]


@dataclass(frozen=True, slots=True)
class Sighting:
    """What one loop last learned about its account's capacity, when, and who it was."""

    seq: int
    at: datetime
    pid: int
    # The process and the gateway within it: a loop never mistakes its own record for
    # news from another.
    writer: str
    source: Source
    standing: Standing
    signals: TurnSignals
    # The run that wrote it: a run's own earlier record (a driver of it that was stopped
    # or crashed) never holds it back. None in a record an older version wrote.
    run_id: str | None = None
    # The machine of the process `pid` (a fleet's board spans machines): whether that
    # process still runs can be told only there. None in a record of an older version.
    host: str | None = None


class ProbeHold(Protocol):
    """The right to probe for every loop of an account, until released (or until its
    holder is gone: a dead holder's right lapses by itself)."""

    def release(self) -> None: ...


class CapacityBoard(Protocol):
    """Where the loops of one account share what they learn about its capacity: a file
    on one machine, a database table for a fleet. Never fatal: a board that cannot be
    read reads as no record, and one that cannot be written raises OSError, which the
    loop survives by going on alone."""

    def read(self) -> Sighting | None:
        """The current record, or None when there is none or it cannot be read."""
        ...

    def publish(
        self,
        *,
        signals: TurnSignals,
        standing: Standing,
        source: Source,
        writer: str,
        now: datetime,
        run_id: str | None = ...,
        unless: Callable[[Sighting | None], bool] = ...,
        patience: float = ...,
    ) -> Sighting | None:
        """Write the next record (the next sequence number), stamped with this process,
        its machine and `run_id`, unless `unless(current)` says the current one is
        better news; returns what was written. Waits at most `patience` seconds for
        another writer of the account (0: one attempt), then raises OSError: a stuck
        writer never holds a loop up."""
        ...

    def writer_alive(self, sighting: Sighting) -> bool | None:
        """Whether the process that wrote `sighting` still runs; None when this board
        cannot tell (it ran on another machine)."""
        ...

    def try_probe_lock(self) -> ProbeHold | None:
        """The probe right when no other loop of the account holds it; never blocks."""
        ...

    def wait_for_news(self, after_seq: int, timeout: float) -> Sighting | None:
        """The first record newer than `after_seq` once one is published, or None after
        `timeout` seconds."""
        ...
