"""Waiting strategies on a seeded corpus of limit episodes, in simulated time.

claudeloop is replayed through its real domain (`decide_after_turn`, `begin_probe`,
`decide_after_probe`, `next_probe_instant`); the strategies other tools use are modelled
as they behave. Every figure is simulated: nothing here sleeps or touches the network.

Lateness is the time from the moment capacity could be noticed (the lift, or waking up
when the machine slept through it) to the next productive turn.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from claudeloop.domain.capacity import (
    Available,
    CapacityState,
    CreditsExhausted,
    WindowExhausted,
)
from claudeloop.domain.classify import classify
from claudeloop.domain.completion import Continue
from claudeloop.domain.loop import (
    Finish,
    RunProbe,
    RunState,
    ScheduleProbe,
    SendTurn,
    begin_probe,
    decide_after_probe,
    decide_after_turn,
)
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.waiting import AnnouncedReset, WaitPolicyConfig

EPOCH = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
HOUR = 3600.0
# The kinds drawn by weight, and after them those drawn apart (so that adding one leaves
# every other kind's episodes as they were).
DRAWN = ("five_hour", "late_lift", "early_lift", "silent", "weekly", "credits", "asleep")
WEIGHTS = (25, 5, 10, 15, 10, 25, 10)
# A refusal without a reset (a thin 429) of a window whose reset the answers before it
# announced: one episode of these for every eight of the others.
SILENT_AFTER_RESET = "silent_after_reset"
# Kinds the CLI's other headers make (docs/architecture/claude-code-signals.md), drawn
# from a stream of their own after the others, 60 episodes each: a 5-hour window closed
# with a slow lane offered, and answers served in a grace period past the window's limit.
HEADER_KINDS = ("slow_lane", "grace")
HEADER_EPISODES = 60
KINDS = (*DRAWN, SILENT_AFTER_RESET, *HEADER_KINDS)


@dataclass(frozen=True)
class Episode:
    """A limit met at t=0 (seconds); capacity returns at `lift`."""

    kind: str
    lift: float
    announced_reset: float | None  # what the service said, when it said anything
    credits: bool = False
    asleep: tuple[float, float] | None = None  # the machine sleeps over [start, end)
    # The reset the answers before the refusal announced for its window, when the
    # refusal itself says none.
    seen_reset: float | None = None

    def open_at(self, t: float) -> bool:
        return t >= self.lift

    def noticeable_from(self) -> float:
        if self.asleep and self.asleep[0] <= self.lift < self.asleep[1]:
            return self.asleep[1]
        return self.lift


def corpus(size: int = 1200, seed: int = 20261130) -> list[Episode]:
    rng = random.Random(seed)
    episodes = []
    for _ in range(size):
        kind = rng.choices(DRAWN, WEIGHTS)[0]
        if kind == "five_hour":
            reset = rng.uniform(60, 5 * HOUR)
            episodes.append(Episode(kind, reset, reset))
        elif kind == "late_lift":  # the service lifts a little after the reset it announced
            reset = rng.uniform(60, 5 * HOUR)
            episodes.append(Episode(kind, reset + rng.uniform(1, 90), reset))
        elif kind == "early_lift":  # overage switched on, a plan upgrade
            reset = rng.uniform(HOUR, 5 * HOUR)
            episodes.append(Episode(kind, rng.uniform(60, reset - 60), reset))
        elif kind == "silent":
            episodes.append(Episode(kind, rng.uniform(600, 5 * HOUR), None))
        elif kind == "weekly":
            reset = rng.uniform(HOUR, 7 * 24 * HOUR)
            episodes.append(Episode(kind, reset, reset))
        elif kind == "credits":  # five minutes to three days, then topped up
            lift = math.exp(rng.uniform(math.log(300), math.log(3 * 24 * HOUR)))
            episodes.append(Episode(kind, lift, None, credits=True))
        else:  # asleep across the reset
            reset = rng.uniform(HOUR, 5 * HOUR)
            start = rng.uniform(0, reset - 60)
            episodes.append(
                Episode(kind, reset, reset, asleep=(start, reset + rng.uniform(60, 4 * HOUR)))
            )
    apart = random.Random(seed + 1)
    for _ in range(size // 8):
        # The window opens at the reset the answers announced; the refusal said nothing.
        reset = apart.uniform(60, 5 * HOUR)
        episodes.append(Episode(SILENT_AFTER_RESET, reset, None, seen_reset=reset))
    headers = random.Random(seed + 2)
    for kind in HEADER_KINDS:
        for _ in range(HEADER_EPISODES):
            reset = headers.uniform(60, 5 * HOUR)
            # The slow lane's window reopens at its reset (only an interactive CLI could
            # take the offer); a grace period never closed anything.
            episodes.append(Episode(kind, reset if kind == "slow_lane" else 0.0, reset))
    return episodes


@dataclass(frozen=True)
class Replay:
    lateness: float
    requests: int  # probes and retried turns after the first rejection
    turns_into_closed: int  # retried turns that met the closed limit
    waited: float  # from the first rejection to the next productive turn


def _awake(episode: Episode, t: float) -> float:
    """The first instant at or after t when the machine is awake."""
    if episode.asleep and episode.asleep[0] <= t < episode.asleep[1]:
        return episode.asleep[1]
    return t


def _monotonic_sleep(episode: Episode, t: float, seconds: float) -> float:
    """A sleep of `seconds` on a monotonic clock: suspended time does not count."""
    if episode.asleep and t < episode.asleep[1] and t + seconds > episode.asleep[0]:
        return t + seconds + (episode.asleep[1] - max(t, episode.asleep[0]))
    return t + seconds


def _capacity(episode: Episode) -> CapacityState:
    if episode.credits:
        return CreditsExhausted()
    resets = EPOCH + timedelta(seconds=episode.announced_reset) if episode.announced_reset else None
    if episode.kind in HEADER_KINDS:
        # What the CLI emits for these (docs/architecture/claude-code-signals.md), read
        # by the real classifier: the slow lane's 429 is the window's refusal, the grace
        # answer is served with the window past its limit.
        return classify(_signals_of(episode.kind, resets))
    return WindowExhausted("five_hour", resets)


def _signals_of(kind: str, resets: datetime | None) -> TurnSignals:
    if kind == "grace":
        return TurnSignals(
            rate_limit_status="rejected",
            rate_limit_type="five_hour",
            resets_at=resets,
            utilization=1.1,
            grace_active=True,
        )
    return TurnSignals(
        rate_limit_status="rejected",
        rate_limit_type="five_hour",
        resets_at=resets,
        api_error_status=429,
        assistant_error="rate_limit",
        is_error=True,
        result_text="You've hit your 5-hour limit",
    )


def replay_claudeloop(episode: Episode, policy: WaitPolicyConfig) -> Replay:
    state = RunState()
    if episode.seen_reset is not None:  # what the answers before the refusal said
        heard = EPOCH + timedelta(seconds=episode.seen_reset)
        state = RunState(announced_resets=(AnnouncedReset("five_hour", heard),))
    transition = decide_after_turn(
        state,
        capacity=_capacity(episode),
        verdict=Continue(),
        now=EPOCH,
        config=policy,
    )
    t = 0.0
    probes = 0
    while True:
        decision = transition.decision
        match decision:
            case ScheduleProbe(at=at):
                planned = (at - EPOCH).total_seconds()
                t = _awake(episode, max(planned, t))  # an instant: due at once on waking
                transition = begin_probe(transition.state)
            case RunProbe():
                probes += 1
                seen = Available() if episode.open_at(t) else _capacity(episode)
                transition = decide_after_probe(
                    transition.state, seen, now=EPOCH + timedelta(seconds=t), config=policy
                )
            case SendTurn():
                return Replay(t - episode.noticeable_from(), probes, 0, t)
            case Finish():
                raise AssertionError(f"a wait ended the run: {decision}")


def replay_fixed_sleep(episode: Episode, seconds: float = HOUR) -> Replay:
    """Sleep a fixed hour after every rejection, then resend the turn."""
    if episode.open_at(0.0):
        return Replay(0.0, 0, 0, 0.0)  # the answer was served: no rejection to act on
    t, requests, closed = 0.0, 0, 0
    while True:
        t = _monotonic_sleep(episode, t, seconds)
        requests += 1
        if episode.open_at(t):
            return Replay(t - episode.noticeable_from(), requests, closed, t)
        closed += 1


def replay_reset_parsing(episode: Episode) -> Replay:
    """Sleep until the announced reset plus 60 s (5 hours when none), then resend."""
    if episode.open_at(0.0):
        return Replay(0.0, 0, 0, 0.0)  # the answer was served: no rejection to act on
    t, requests, closed = 0.0, 0, 0
    while True:
        reset = episode.announced_reset
        pause = reset + 60 - t if reset is not None and reset + 60 > t else 5 * HOUR
        t = _monotonic_sleep(episode, t, pause)
        requests += 1
        if episode.open_at(t):
            return Replay(t - episode.noticeable_from(), requests, closed, t)
        closed += 1


def replay_hourly(episode: Episode) -> Replay:
    """A retry at the top of every hour of the wall clock (cron-style)."""
    if episode.open_at(0.0):
        return Replay(0.0, 0, 0, 0.0)  # the answer was served: no rejection to act on
    t, requests, closed = 0.0, 0, 0
    while True:
        t = (math.floor(t / HOUR) + 1) * HOUR
        while _awake(episode, t) != t:  # cron does not run the hours it slept through
            t += HOUR
        requests += 1
        if episode.open_at(t):
            return Replay(t - episode.noticeable_from(), requests, closed, t)
        closed += 1


SEED_DEFAULTS = WaitPolicyConfig(
    window_probe_interval=timedelta(seconds=600),
    reset_grace=timedelta(seconds=60),
    credits_probe_interval=timedelta(seconds=120),
    credits_probe_factor=1.5,
    credits_probe_ceiling=timedelta(seconds=600),
)


def strategies() -> dict[str, Callable[[Episode], Replay]]:
    return {
        "claudeloop (defaults)": lambda e: replay_claudeloop(e, WaitPolicyConfig()),
        "claudeloop (seed defaults)": lambda e: replay_claudeloop(e, SEED_DEFAULTS),
        "fixed 60-min sleep": replay_fixed_sleep,
        "reset + 60 s, else 5 h": replay_reset_parsing,
        "hourly retry": replay_hourly,
    }


@dataclass(frozen=True)
class Figures:
    strategy: str
    kind: str
    episodes: int
    median_lateness: float
    p95_lateness: float
    requests_per_waiting_hour: float
    turns_into_closed: int


def figures(strategy: str, kind: str, replays: list[Replay]) -> Figures:
    late = sorted(r.lateness for r in replays)
    waited_hours = sum(r.waited for r in replays) / HOUR
    return Figures(
        strategy=strategy,
        kind=kind,
        episodes=len(replays),
        median_lateness=statistics.median(late),
        p95_lateness=late[min(len(late) - 1, math.ceil(0.95 * len(late)) - 1)],
        requests_per_waiting_hour=sum(r.requests for r in replays) / waited_hours
        if waited_hours
        else 0.0,
        turns_into_closed=sum(r.turns_into_closed for r in replays),
    )


def run(episodes: list[Episode] | None = None) -> Iterator[Figures]:
    episodes = episodes or corpus()
    for name, strategy in strategies().items():
        replays = {kind: [] for kind in KINDS}  # type: dict[str, list[Replay]]
        for episode in episodes:
            replays[episode.kind].append(strategy(episode))
        everything = [r for rs in replays.values() for r in rs]
        yield figures(name, "all", everything)
        announced = replays["five_hour"] + replays["late_lift"] + replays["weekly"]
        yield figures(name, "announced reset", announced)
        for kind in KINDS:
            yield figures(name, kind, replays[kind])


def human(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * HOUR:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / HOUR:.1f} h"


if __name__ == "__main__":
    for f in run():
        if f.kind in ("all", "announced reset"):
            print(
                f"{f.strategy:<30} {f.kind:<16} median {human(f.median_lateness):>8} "
                f"p95 {human(f.p95_lateness):>8} req/h {f.requests_per_waiting_hour:6.2f} "
                f"closed turns {f.turns_into_closed}"
            )
