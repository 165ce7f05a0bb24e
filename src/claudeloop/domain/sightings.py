"""How a run weighs what the account's board says another loop saw of its capacity.

The board (one record per account) is shared by every loop on the account: a loop
that finds it closed sends no turn into it and takes its answer as its own. That
courtesy is owed only to news someone still stands behind. A run's own earlier sighting
(a driver of the same run that was stopped, crashed or is this one) was already weighed
when the run decided what to do next, so it holds nothing back; another run's, whose
process is gone or that is older than what this run learned itself, may be stale, and
one probe made at once tells.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from claudeloop.domain.capacity import CreditsExhausted, WindowExhausted
from claudeloop.domain.classify import classify
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.waiting import announced_in


class RecordTrust(Enum):
    """What a run makes of the board's record."""

    # Another live run's news, newer than this run's own: taken as this run's own.
    TRUST = "trust"
    # This run's own earlier news: what it knew already decided what it does next.
    IGNORE = "ignore"
    # News no one stands behind any more, or that this run knows to be older than what
    # it learned itself: one probe made at once decides, not a probe interval later.
    CHECK = "check"


def trust_in_record(
    *,
    by_this_run: bool,
    writer_alive: bool | None,
    seen_at: datetime,
    known_at: datetime | None,
) -> RecordTrust:
    """How far a record is trusted. `by_this_run`: written by this run (a record of old,
    without a run id, never is); `writer_alive`: whether the process that wrote it still
    runs, None when that cannot be told (a process on another machine of a fleet);
    `known_at`: when this run last asked the service itself (None: it has not yet)."""
    if by_this_run:
        return RecordTrust.IGNORE
    if writer_alive is False:
        return RecordTrust.CHECK
    if known_at is not None and seen_at < known_at:
        return RecordTrust.CHECK
    return RecordTrust.TRUST


def is_news(board: TurnSignals | None, seen: TurnSignals) -> bool:
    """Whether an answered turn's signals are worth writing on the account's board,
    whose record holds `board` (None: no record yet). The record is one row that every
    run of the account would otherwise rewrite at every turn; it changes only when the
    capacity it tells does:

    - a refusal (a window or the credits closed) is always told: it is rare, and the
      other loops time their wait by its instant;
    - an answer that classifies otherwise than the record (a window opened, or closed
      in the record and open now);
    - a reset announced that moved, or a window announced or no longer announced;
    - a change of standing within the open: a warning, paid overage, a grace period,
      the daily cap.

    What stays out: the answer's text, its cost, each window's utilization."""
    if board is None:
        return True
    now = classify(seen)
    if isinstance(now, WindowExhausted | CreditsExhausted):
        return True
    if now != classify(board):
        return True
    if set(announced_in(board)) != set(announced_in(seen)):
        return True
    return _standing_within(board) != _standing_within(seen)


def _standing_within(signals: TurnSignals) -> tuple[object, ...]:
    return (
        signals.rate_limit_status,
        signals.rate_limit_type,
        signals.overage_status,
        signals.overage_in_use,
        signals.grace_active,
        signals.daily_cap_paused,
    )
