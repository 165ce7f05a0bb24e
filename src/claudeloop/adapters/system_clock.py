"""The real clock and a sleeper that aims at a wall-clock instant.

Sleeping in short slices against the wall clock (not one long monotonic sleep) keeps a
wait honest across a machine's suspend: after waking past the instant, the probe is due
at once. The monotonic clock keeps it honest the other way: when the wall clock steps
back (NTP, a person), the wait ends once as long as was left has passed on it, not the
step later. The slices are also when a control command is noticed, within a second.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

import anyio

from claudeloop.application.ports import Clock, ControlInbox

SLICE_SECONDS = 0.5
# How often a wait reports the time waited so far (the runner saves it).
PROGRESS_SECONDS = 30.0


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class WallClockSleeper:
    def __init__(
        self,
        control: ControlInbox,
        clock: Clock | None = None,
        slice_seconds: float = SLICE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
        progress_seconds: float = PROGRESS_SECONDS,
    ) -> None:
        self._control = control
        self._clock = clock or SystemClock()
        self._slice = slice_seconds
        self._monotonic = monotonic
        self._progress_every = progress_seconds

    async def sleep_until(
        self, instant: datetime, *, progress: Callable[[float], None] | None = None
    ) -> bool:
        started: tuple[datetime, float] | None = None
        left = 0.0
        reported = 0.0
        while True:
            if self._control.pending() is not None or self._control.requests():
                return False
            now, ticks = self._clock.now(), self._monotonic()
            if started is None:
                started, left = (now, ticks), (instant - now).total_seconds()
            on_wall = (now - started[0]).total_seconds()
            on_ticks = ticks - started[1]
            # A suspend moves only the wall clock, a step back only the monotonic one.
            waited = max(on_wall, on_ticks, 0.0)
            remaining = min((instant - now).total_seconds(), left - on_ticks)
            if progress is not None and waited - reported >= self._progress_every:
                reported = waited
                progress(waited)
            if remaining <= 0:
                return True
            await anyio.sleep(min(remaining, self._slice))
