"""When to probe next while capacity is out. Always an instant, never a duration.

An instant survives what a duration does not: a crash and resume (the instant is
persisted), a machine asleep past it (the probe is due at once on waking).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import assert_never

from claudeloop.domain.capacity import (
    CreditsExhausted,
    NamedWindow,
    WaitableState,
    WindowExhausted,
)
from claudeloop.domain.signals import TurnSignals

# Far beyond any wait anyone means; keeps every computed instant representable.
MAX_INTERVAL = timedelta(days=365)


@dataclass(frozen=True, slots=True)
class WaitPolicyConfig:
    """The waiting policy's knobs. Every numeric field is validated here.

    The defaults were tuned on the benchmark corpus (bench/waiting.py; ADR 0005): probe
    just after an announced reset, retry quickly for a short while when the service is
    a little late, probe an unannounced lift every five minutes, back credits off to
    five minutes. That resumes a median of seconds after an announced reset and within
    five minutes otherwise, at under 12 requests per waiting hour.

    `ready_ahead`: how long before a probe's instant the Claude Code processes it and
    the turn after it need are started (`ready_instant`), so that at the instant only
    the request is sent: a CLI takes seconds to start, more on a busy machine. 0 starts
    each at its instant.
    """

    window_probe_interval: timedelta = timedelta(seconds=300)
    reset_grace: timedelta = timedelta(seconds=2)
    reset_retry_interval: timedelta = timedelta(seconds=10)
    reset_retry_window: timedelta = timedelta(seconds=120)
    credits_probe_interval: timedelta = timedelta(seconds=60)
    credits_probe_factor: float = 1.5
    credits_probe_ceiling: timedelta = timedelta(seconds=300)
    max_wait: timedelta | None = None
    ready_ahead: timedelta = timedelta(seconds=30)

    def __post_init__(self) -> None:
        _positive("window_probe_interval", self.window_probe_interval)
        _positive("reset_retry_interval", self.reset_retry_interval)
        if self.reset_retry_window < timedelta(0) or self.reset_retry_window > MAX_INTERVAL:
            raise ValueError(
                f"reset_retry_window must be between 0 and 365 days, not {self.reset_retry_window}"
            )
        _positive("credits_probe_interval", self.credits_probe_interval)
        _positive("credits_probe_ceiling", self.credits_probe_ceiling)
        if self.reset_grace < timedelta(0) or self.reset_grace > MAX_INTERVAL:
            raise ValueError(f"reset_grace must be between 0 and 365 days, not {self.reset_grace}")
        if not math.isfinite(self.credits_probe_factor) or not (
            1.0 <= self.credits_probe_factor <= 100.0
        ):
            raise ValueError(
                f"credits_probe_factor must be between 1 and 100, not {self.credits_probe_factor}"
            )
        if self.credits_probe_ceiling < self.credits_probe_interval:
            raise ValueError(
                "credits_probe_ceiling must be at least credits_probe_interval "
                f"({self.credits_probe_ceiling} < {self.credits_probe_interval})"
            )
        if self.max_wait is not None:
            _positive("max_wait", self.max_wait)
        if self.ready_ahead < timedelta(0) or self.ready_ahead > MAX_INTERVAL:
            raise ValueError(f"ready_ahead must be between 0 and 365 days, not {self.ready_ahead}")


def _positive(name: str, value: timedelta) -> None:
    if value <= timedelta(0) or value > MAX_INTERVAL:
        raise ValueError(f"{name} must be more than 0 and at most 365 days, not {value}")


@dataclass(frozen=True, slots=True)
class AnnouncedReset:
    """The reset the service last announced for one window (`five_hour`, `seven_day`,
    ...), on any answer: every allowed answer's rate-limit event carries one per window.
    Kept in the run's state, so that a refusal of that window which omits its reset
    (a thin 429) is still waited out to the instant the service gave."""

    window: NamedWindow
    at: datetime

    def __post_init__(self) -> None:
        if self.at.utcoffset() is None:
            raise ValueError("an announced reset must be an aware datetime")


def announced_in(signals: TurnSignals) -> tuple[AnnouncedReset, ...]:
    """The resets one turn's (or probe's) signals announce, per window: every window the
    rate-limit events reported with a reset, and the representative one at the top."""
    seen = [AnnouncedReset(w.window, w.resets_at) for w in signals.windows if w.resets_at]
    if signals.rate_limit_type is not None and signals.resets_at is not None:
        seen.append(AnnouncedReset(signals.rate_limit_type, signals.resets_at))
    return tuple(seen)


def remember_resets(
    known: Sequence[AnnouncedReset], fresh: Iterable[AnnouncedReset]
) -> tuple[AnnouncedReset, ...]:
    """What a run knows of announced resets after hearing `fresh`: the last reset
    announced for each window replaces what was known of that window (a window that
    reset announces its next reset; the service's word is the latest one), the other
    windows kept, in the order first heard."""
    last = {reset.window: reset for reset in known}
    for reset in fresh:
        last[reset.window] = reset
    return tuple(last.values())


def remembered_reset(
    state: WaitableState, known: Sequence[AnnouncedReset], *, now: datetime
) -> datetime | None:
    """The reset a refusal that announces none is waited out to: the one last announced
    for the very window it names, while that is still ahead. None for anything else: a
    refusal with a reset of its own (that one holds), a pause, credits (no clock refills
    them), a window no answer announced, a reset already past (the window reset since;
    the probe interval finds when it opens). Another window's reset never counts."""
    if not isinstance(state, WindowExhausted):
        return None
    if state.resets_at is not None or state.paused_at is not None:
        return None
    for reset in known:
        if reset.window == state.rate_limit_type and reset.at > now:
            return reset.at
    return None


def next_probe_instant(
    state: WaitableState,
    *,
    now: datetime,
    started_waiting_at: datetime,
    probe_count: int,
    config: WaitPolicyConfig,
    announced: Sequence[AnnouncedReset] = (),
) -> datetime:
    """The instant of the next probe: never before `now`, never after `max_wait` ends.

    `announced`: the resets the run last heard announced per window; a refusal that
    names its window but no reset is probed just after that window's (`remembered_reset`),
    the probe interval still the latest instant, so an early lift is caught as before."""
    if probe_count < 0:
        raise ValueError(f"probe_count must be 0 or more, not {probe_count}")
    match state:
        case CreditsExhausted():
            candidate = now + credits_backoff(probe_count, config)
        case WindowExhausted(resets_at=resets_at, paused_at=paused_at):
            candidate = now + config.window_probe_interval
            remembered = remembered_reset(state, announced, now=now)
            # Compared before the grace is added: a reset read back from a tampered
            # record far in the future must not overflow.
            if remembered is not None and remembered < candidate:
                candidate = min(candidate, remembered + config.reset_grace)
            if resets_at is not None:
                around = _around_reset(resets_at, now=now, config=config)
                # A pause is the user's choice, not a closed window: nothing lifts it
                # early, so no probe before the reset it waits for.
                candidate = around if paused_at is not None else min(candidate, around)
        case _:
            assert_never(state)
    if config.max_wait is not None:
        candidate = min(candidate, started_waiting_at + config.max_wait)
    return max(candidate, now)


def trusted_probe_instant(
    persisted: datetime,
    state: WaitableState,
    *,
    now: datetime,
    started_waiting_at: datetime,
    probe_count: int,
    config: WaitPolicyConfig,
    announced: Sequence[AnnouncedReset] = (),
) -> datetime:
    """A probe instant read back from disk, trusted only as far as the policy would wait
    from `now`: a tampered or corrupted record, or a clock that stepped back since it was
    written, must not hold a resumed run for years. An honest instant is never later than
    the policy's from now, so it is kept as it was."""
    latest = next_probe_instant(
        state,
        now=now,
        started_waiting_at=started_waiting_at,
        probe_count=probe_count,
        config=config,
        announced=announced,
    )
    return min(persisted, latest)


def ready_instant(probe_at: datetime, config: WaitPolicyConfig) -> datetime | None:
    """When to get ready for the probe due at `probe_at`: `ready_ahead` before it, the
    processes it and the turn after it need are started, and sent nothing until
    `probe_at`. None: nothing is started ahead (`ready_ahead` 0). Never after
    `probe_at`, and never before the earliest instant there is (a record read back
    with a probe instant of year 1 must not overflow)."""
    if config.ready_ahead == timedelta(0):
        return None
    earliest = datetime.min.replace(tzinfo=probe_at.tzinfo)
    return probe_at - min(config.ready_ahead, probe_at - earliest)


def _around_reset(resets_at: datetime, *, now: datetime, config: WaitPolicyConfig) -> datetime:
    """Just after an announced reset; when the window still refuses right after it (the
    service's clock, or its bookkeeping, a little behind), again every few seconds for a
    short while. Never at once: a reset already past must not turn into a burst."""
    due = resets_at + config.reset_grace
    if due > now:
        return due
    if now < due + config.reset_retry_window:
        return now + config.reset_retry_interval
    return now + config.window_probe_interval


def credits_backoff(probe_count: int, config: WaitPolicyConfig) -> timedelta:
    """interval * factor**probe_count, clamped to the ceiling.

    Computed in logarithms and clamped before a timedelta exists: the plain power
    overflows a float (and a timedelta far sooner) at realistic probe counts.
    """
    interval = config.credits_probe_interval.total_seconds()
    ceiling = config.credits_probe_ceiling.total_seconds()
    growth = probe_count * math.log(config.credits_probe_factor)
    if growth >= math.log(ceiling / interval):
        return config.credits_probe_ceiling
    return timedelta(seconds=min(interval * math.exp(growth), ceiling))


def probe_within_max_wait(
    at: datetime, *, started_waiting_at: datetime, config: WaitPolicyConfig
) -> datetime:
    """A probe instant decided under an earlier wait policy, held to this one's max-wait:
    brought forward to the wait's end when a lowered max-wait ends it first. Never moved
    later: under a max-wait raised the probe decided stays, and the backoff goes on from
    it (an instant computed again from now would put the probe off at each request)."""
    if config.max_wait is None:
        return at
    return min(at, started_waiting_at + config.max_wait)


def wait_exceeded(*, started_waiting_at: datetime, now: datetime, config: WaitPolicyConfig) -> bool:
    """Whether a wait has gone on for `max_wait` or longer; never, without a max_wait."""
    return config.max_wait is not None and now - started_waiting_at >= config.max_wait
