"""When each gate of a scenario is active: started by a turn number or a time, ended by a
clock, a number of answered requests, or a lift.

Gates are evaluated lazily at each request (and at each state read) rather than by
timers, so the schedule is a pure function of the instants it is shown.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from claudeloop.rehearsal.scenario import Gate

RequestKind = Literal["turn", "probe"]

# The reset a rate-limit gate announces when its end is not a clock: a full window.
_FULL_WINDOW_SECONDS = {
    "window": 5 * 3600,
    "credits_overage": 5 * 3600,
    "overage_in_use": 5 * 3600,
    "overage_rejected": 5 * 3600,
    "grace": 5 * 3600,
    "daily_cap": 86400,
    "weekly": 7 * 86400,
    "model_weekly": 7 * 86400,
}


class Timeline:
    """The server's clock and the scenario's time scale.

    Every duration a scenario names is scenario time; `real` turns it into seconds of
    this process, so a five-hour window can pass in seconds under test.
    """

    def __init__(
        self,
        time_scale: float = 1.0,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        if time_scale <= 0:
            raise ValueError(f"time_scale must be > 0, got {time_scale}")
        self.time_scale = time_scale
        self._monotonic = monotonic
        self.started = monotonic()
        self._wall_at_start = wall()

    def now(self) -> float:
        return self._monotonic()

    def real(self, scenario_seconds: float) -> float:
        return scenario_seconds * self.time_scale

    def epoch(self, instant: float) -> float:
        """Wall-clock epoch seconds of a monotonic instant (monotonic, so no jumps)."""
        return self._wall_at_start + (instant - self.started)

    def iso(self, instant: float) -> str:
        return datetime.fromtimestamp(self.epoch(instant), tz=UTC).isoformat()


@dataclass(slots=True)
class GateState:
    gate: Gate
    index: int
    started: float | None = None
    ended: float | None = None
    answered: int = 0

    @property
    def active(self) -> bool:
        return self.started is not None and self.ended is None


@dataclass(frozen=True, slots=True)
class Answering:
    """The gate that answers a request, and the reset it announces (epoch seconds)."""

    gate: Gate
    index: int
    reset_epoch: float | None


class GateSchedule:
    """Decides which gate, if any, answers a request. Thread-safe: the server thread
    asks, the owning thread may lift and read."""

    def __init__(
        self, gates: list[Gate], timeline: Timeline, *, window_reset_seconds: float = 5 * 3600
    ) -> None:
        self._states = [GateState(gate, index) for index, gate in enumerate(gates)]
        self._timeline = timeline
        self._lock = threading.Lock()
        # When the 5-hour window the answers announce resets (an `until_reset` gate's
        # end), on this process's clock.
        self._window_reset = timeline.started + timeline.real(window_reset_seconds)

    def answering(
        self,
        kind: RequestKind,
        turn: int | None,
        now: float,
        step: int | None = None,
        model: str | None = None,
    ) -> Answering | None:
        """The first gate, in scenario order, active for a request that arrived `now`."""
        with self._lock:
            for state in self._states:
                self._advance(state, now)
                gate = state.gate
                started_here = False
                if (
                    state.started is None
                    and gate.at_turn is not None
                    and kind == "turn"
                    and turn is not None
                    and turn >= gate.at_turn
                    and (gate.at_step is None or turn > gate.at_turn or (step or 0) >= gate.at_step)
                ):
                    state.started = now
                    started_here = True
                if not state.active or not _matches(gate.match, kind):
                    continue
                if gate.for_model is not None and gate.for_model not in (model or ""):
                    continue
                # The request that starts a gate is its first victim even when its
                # clock is zero: `for_seconds = 0` fails exactly one request.
                if not started_here and self._expired(state, now):
                    continue
                state.answered += 1
                if gate.for_requests is not None and state.answered >= gate.for_requests:
                    state.ended = now
                return Answering(gate, state.index, self._reset_epoch(state))
            return None

    def lift(self, now: float) -> int:
        """End every active gate at `now`; the number ended."""
        with self._lock:
            lifted = 0
            for state in self._states:
                self._advance(state, now)
                if state.active:
                    state.ended = now
                    lifted += 1
            return lifted

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            now = self._timeline.now()
            rows = []
            for state in self._states:
                self._advance(state, now)
                rows.append(
                    {
                        "index": state.index,
                        "kind": state.gate.kind,
                        "active": state.active,
                        "answered": state.answered,
                        "started_at": self._iso(state.started),
                        "ended_at": self._iso(state.ended),
                    }
                )
            return rows

    def _advance(self, state: GateState, now: float) -> None:
        """Start a timed gate whose instant has come, end a gate whose clock ran out."""
        gate = state.gate
        if state.started is None and gate.after_seconds is not None:
            start = self._timeline.started + self._timeline.real(gate.after_seconds)
            if now >= start:
                state.started = start
        if state.active and self._expired(state, now):
            end = self._end(state)
            assert end is not None
            state.ended = end

    def _end(self, state: GateState) -> float | None:
        """When the gate's clock ends it (None: no clock does)."""
        if state.started is None:
            return None
        if state.gate.until_reset:
            # Never before the gate began: a window already past its reset fails the
            # one request that started the gate, as `for_seconds = 0` does.
            return max(self._window_reset_instant(), state.started)
        seconds = state.gate.for_seconds
        if seconds is None:
            return None
        return state.started + self._timeline.real(seconds)

    def _expired(self, state: GateState, now: float) -> bool:
        end = self._end(state)
        return end is not None and now >= end

    def _window_reset_instant(self) -> float:
        """The 5-hour window's reset as the answers announce it (whole epoch seconds,
        rounded up as `Windows` rounds it), on this process's clock."""
        epoch = self._timeline.epoch(self._window_reset)
        return self._window_reset + (math.ceil(epoch) - epoch)

    def _reset_epoch(self, state: GateState) -> float | None:
        """When the gate says it reopens: its announced reset, else its own end, else a
        full window from its start."""
        assert state.started is not None
        gate = state.gate
        seconds = getattr(gate, "announce_reset_seconds", None)
        if seconds is None and gate.until_reset:
            return self._timeline.epoch(self._window_reset_instant())
        if seconds is None:
            seconds = gate.for_seconds
        if seconds is None:
            seconds = _FULL_WINDOW_SECONDS.get(gate.kind)
        if seconds is None:
            return None
        return self._timeline.epoch(state.started + self._timeline.real(seconds))

    def _iso(self, instant: float | None) -> str | None:
        return None if instant is None else self._timeline.iso(instant)


def _matches(match: str, kind: RequestKind) -> bool:
    return match == "all" or (match == "turns") == (kind == "turn")
