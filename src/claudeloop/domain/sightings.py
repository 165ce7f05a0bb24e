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


class Regard(Enum):
    """What a run makes of the board's record."""

    # Another live run's news, newer than this run's own: taken as this run's own.
    TRUST = "trust"
    # This run's own earlier news: what it knew already decided what it does next.
    IGNORE = "ignore"
    # News no one stands behind any more, or that this run knows to be older than what
    # it learned itself: one probe made at once decides, not a probe interval later.
    CHECK = "check"


def regard(
    *,
    by_this_run: bool,
    writer_alive: bool | None,
    seen_at: datetime,
    known_at: datetime | None,
) -> Regard:
    """The regard a record earns. `by_this_run`: written by this run (a record of old,
    without a run id, never is); `writer_alive`: whether the process that wrote it still
    runs, None when that cannot be told (a process on another machine of a fleet);
    `known_at`: when this run last asked the service itself (None: it has not yet)."""
    if by_this_run:
        return Regard.IGNORE
    if writer_alive is False:
        return Regard.CHECK
    if known_at is not None and seen_at < known_at:
        return Regard.CHECK
    return Regard.TRUST
