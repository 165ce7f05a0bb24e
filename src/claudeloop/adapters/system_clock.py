"""The real clock and a sleeper that aims at a wall-clock instant.

Sleeping in short slices against the wall clock (not one long monotonic sleep) keeps a
wait honest across a machine's suspend: after waking past the instant, the probe is due
at once. The slices are also when a control command is noticed, within a second.
"""

from __future__ import annotations

from datetime import UTC, datetime

import anyio

from claudeloop.application.ports import Clock, ControlInbox

SLICE_SECONDS = 0.5


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class WallClockSleeper:
    def __init__(
        self,
        control: ControlInbox,
        clock: Clock | None = None,
        slice_seconds: float = SLICE_SECONDS,
    ) -> None:
        self._control = control
        self._clock = clock or SystemClock()
        self._slice = slice_seconds

    async def sleep_until(self, instant: datetime) -> bool:
        while True:
            if self._control.pending() is not None:
                return False
            remaining = (instant - self._clock.now()).total_seconds()
            if remaining <= 0:
                return True
            await anyio.sleep(min(remaining, self._slice))
