"""Pause before the wall: stop at a window's utilization threshold, keep the rest.

A person sharing an account with their loops sets `5h=90%`: when a rate-limit event
reports the 5-hour window at 90% or more, the loop finishes its turn and waits for that
window's reset as if it were closed, leaving the last tenth for the person's own work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from claudeloop.domain.capacity import (
    WINDOW_KINDS,
    Available,
    CapacityState,
    WindowExhausted,
    WindowKind,
)
from claudeloop.domain.classify import classify
from claudeloop.domain.overage import on_paid_overage, overage_limit
from claudeloop.domain.signals import TurnSignals, WindowUsage

# What people type (`5h`, `7d_opus`, or the window's own name), and the window names the
# service reports.
WINDOW_SHORT_NAMES: dict[WindowKind, str] = {
    window: window.replace("five_hour", "5h").replace("seven_day", "7d") for window in WINDOW_KINDS
}
WINDOW_ALIASES: dict[str, WindowKind] = {
    **{short: window for window, short in WINDOW_SHORT_NAMES.items()},
    **{window: window for window in WINDOW_KINDS},
}
_ENTRY = re.compile(r"^\s*(?P<window>[a-z0-9_]+)\s*=\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<pct>%?)\s*$")


@dataclass(frozen=True, slots=True)
class PauseThresholds:
    """Per window, the utilization (0 < t <= 1) at which to pause."""

    limits: tuple[tuple[WindowKind, float], ...] = ()

    def __post_init__(self) -> None:
        for window, threshold in self.limits:
            if window not in WINDOW_ALIASES.values():
                raise ValueError(f"unknown window {window!r}")
            if not 0 < threshold <= 1:
                raise ValueError(f"a threshold is above 0% and at most 100%, not {threshold!r}")

    @classmethod
    def parse(cls, text: str) -> PauseThresholds:
        """`5h=90%,7d=95%` (or fractions: `five_hour=0.9`). ValueError says what is accepted."""
        limits: list[tuple[WindowKind, float]] = []
        for entry in filter(None, (part.strip() for part in text.split(","))):
            match = _ENTRY.match(entry.lower())
            window = WINDOW_ALIASES.get(match["window"]) if match else None
            if match is None or window is None:
                names = ", ".join(
                    sorted(k for k in WINDOW_ALIASES if not k.startswith(("five", "seven")))
                )
                raise ValueError(f"{entry!r} is not WINDOW=PERCENT; windows: {names}; e.g. 5h=90%")
            value = float(match["value"])
            fraction = value / 100 if match["pct"] or value > 1 else value
            if not 0 < fraction <= 1:
                raise ValueError(f"{entry!r}: a threshold is above 0% and at most 100%")
            limits.append((window, fraction))
        return cls(tuple(limits))

    def unreported(self, windows: tuple[WindowUsage, ...]) -> tuple[WindowKind, ...]:
        """Windows with a threshold that the event did not report (their thresholds are
        ignored)."""
        seen = {usage.window for usage in windows if usage.utilization is not None}
        return tuple(window for window, _ in self.limits if window not in seen)

    def render(self) -> str:
        return ",".join(f"{window}={threshold:.0%}" for window, threshold in self.limits)


def pause_for(
    windows: tuple[WindowUsage, ...], thresholds: PauseThresholds
) -> WindowExhausted | None:
    """The window to pause for, or None. Of several over their threshold, the one that
    resets last: pausing for an earlier one would only meet the other on waking."""
    over = [
        usage
        for usage in windows
        for window, threshold in thresholds.limits
        if usage.window == window
        and usage.utilization is not None
        and usage.utilization >= threshold
    ]
    if not over:
        return None
    latest = max(over, key=lambda usage: (usage.resets_at is not None, usage.resets_at))
    return WindowExhausted(latest.window, latest.resets_at, paused_at=latest.utilization)


def capacity_of(signals: TurnSignals, thresholds: PauseThresholds) -> CapacityState:
    """What the signals reveal, with a pause in place of Available when a threshold is met,
    else the paid-overage limit when the answer spent extra usage (the user's threshold
    comes first: it asks to stop, whatever the overage policy would allow)."""
    capacity = classify(signals)
    if isinstance(capacity, Available):
        paused = pause_for(signals.windows, thresholds)
        if paused is not None:
            return paused
        return overage_limit(signals) if on_paid_overage(signals) else capacity
    return capacity


def is_pause(capacity: CapacityState) -> bool:
    """An answer served in full that the run waits after: a pause before the wall, or an
    answer on paid overage (its policy decides whether it waits)."""
    return isinstance(capacity, WindowExhausted) and capacity.paused_at is not None


def was_answered(capacity: CapacityState) -> bool:
    """Whether a turn that met `capacity` was answered in full, so its verdict counts and
    it is spent as a turn: open capacity, or a pause before the wall. Any other limit
    refused it (or may have cut it short): it is an attempt, its verdict means nothing."""
    return isinstance(capacity, Available) or is_pause(capacity)
