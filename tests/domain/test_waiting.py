"""next_probe_instant: always an instant, bounded, monotone, and never a burst."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from claudeloop.domain.capacity import CreditsExhausted, WaitableState, WindowExhausted
from claudeloop.domain.waiting import (
    MAX_INTERVAL,
    WaitPolicyConfig,
    credits_backoff,
    next_probe_instant,
    probe_within_max_wait,
    ready_instant,
    trusted_probe_instant,
    wait_exceeded,
)
from tests.examples import examples

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
DEFAULT = WaitPolicyConfig()
SECOND = timedelta(seconds=1)
MICROSECOND = timedelta(microseconds=1)


def probe_at(
    state: WaitableState,
    *,
    probe_count: int = 0,
    config: WaitPolicyConfig = DEFAULT,
    started_waiting_at: datetime = NOW,
) -> datetime:
    return next_probe_instant(
        state,
        now=NOW,
        started_waiting_at=started_waiting_at,
        probe_count=probe_count,
        config=config,
    )


# WaitPolicyConfig validation ---------------------------------------------------------


def test_the_defaults_are_the_documented_policy() -> None:
    # Tuned on the benchmark corpus (ADR 0005); the seed's were 10 min, 60 s, 2 min, 10 min.
    assert DEFAULT.window_probe_interval == timedelta(minutes=5)
    assert DEFAULT.reset_grace == timedelta(seconds=2)
    assert DEFAULT.reset_retry_interval == timedelta(seconds=10)
    assert DEFAULT.reset_retry_window == timedelta(minutes=2)
    assert DEFAULT.credits_probe_interval == timedelta(minutes=1)
    assert DEFAULT.credits_probe_factor == 1.5
    assert DEFAULT.credits_probe_ceiling == timedelta(minutes=5)
    assert DEFAULT.max_wait is None
    assert DEFAULT.ready_ahead == timedelta(seconds=30)


@pytest.mark.parametrize(
    "field", ["window_probe_interval", "credits_probe_interval", "credits_probe_ceiling"]
)
@pytest.mark.parametrize(
    "value", [timedelta(0), -SECOND, MAX_INTERVAL + MICROSECOND, timedelta(days=10_000)]
)
def test_intervals_must_be_positive_and_at_most_a_year(field: str, value: timedelta) -> None:
    with pytest.raises(ValueError, match=field):
        WaitPolicyConfig(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [-MICROSECOND, -timedelta(hours=1), MAX_INTERVAL + SECOND])
def test_reset_grace_must_be_between_zero_and_a_year(value: timedelta) -> None:
    with pytest.raises(ValueError, match="reset_grace"):
        WaitPolicyConfig(reset_grace=value)


@pytest.mark.parametrize("value", [-MICROSECOND, MAX_INTERVAL + MICROSECOND])
def test_ready_ahead_out_of_its_bounds_is_refused_by_name(value: timedelta) -> None:
    with pytest.raises(ValueError, match="ready_ahead must be between 0 and 365 days"):
        WaitPolicyConfig(ready_ahead=value)


def test_reset_grace_of_zero_and_of_a_year_are_accepted() -> None:
    assert WaitPolicyConfig(reset_grace=timedelta(0)).reset_grace == timedelta(0)
    assert WaitPolicyConfig(reset_grace=MAX_INTERVAL).reset_grace == MAX_INTERVAL


@pytest.mark.parametrize("value", [0.0, 0.99, -2.0, 100.01, math.nan, math.inf, -math.inf])
def test_credits_probe_factor_must_be_between_one_and_a_hundred(value: float) -> None:
    with pytest.raises(ValueError, match="credits_probe_factor"):
        WaitPolicyConfig(credits_probe_factor=value)


def test_credits_probe_factor_bounds_are_accepted() -> None:
    assert WaitPolicyConfig(credits_probe_factor=1.0).credits_probe_factor == 1.0
    assert WaitPolicyConfig(credits_probe_factor=100.0).credits_probe_factor == 100.0


def test_credits_probe_ceiling_must_be_at_least_the_interval() -> None:
    with pytest.raises(ValueError, match="credits_probe_ceiling must be at least"):
        WaitPolicyConfig(
            credits_probe_interval=timedelta(minutes=5),
            credits_probe_ceiling=timedelta(minutes=4),
        )


@pytest.mark.parametrize("value", [timedelta(0), -SECOND, MAX_INTERVAL + SECOND])
def test_max_wait_must_be_positive_and_at_most_a_year(value: timedelta) -> None:
    with pytest.raises(ValueError, match="max_wait"):
        WaitPolicyConfig(max_wait=value)


durations = st.timedeltas(min_value=timedelta(days=-800), max_value=timedelta(days=800))


@pytest.mark.parametrize("field", ["window_probe_interval", "reset_retry_interval"])
@settings(max_examples=examples(200))
@given(value=durations)
def test_an_interval_is_accepted_exactly_above_zero_and_within_a_year(
    field: str, value: timedelta
) -> None:
    valid = timedelta(0) < value <= MAX_INTERVAL
    assert _accepts(**{field: value}) is valid


@pytest.mark.parametrize("field", ["reset_grace", "reset_retry_window", "ready_ahead"])
@settings(max_examples=examples(200))
@given(value=durations)
def test_a_grace_is_accepted_exactly_from_zero_to_a_year(field: str, value: timedelta) -> None:
    valid = timedelta(0) <= value <= MAX_INTERVAL
    assert _accepts(**{field: value}) is valid


@settings(max_examples=examples(200))
@given(interval=durations, ceiling=durations)
def test_credits_interval_and_ceiling_are_accepted_exactly_within_their_bounds(
    interval: timedelta, ceiling: timedelta
) -> None:
    valid = timedelta(0) < interval <= ceiling <= MAX_INTERVAL
    assert _accepts(credits_probe_interval=interval, credits_probe_ceiling=ceiling) is valid


@settings(max_examples=examples(200))
@given(factor=st.floats(allow_nan=True, allow_infinity=True))
def test_credits_probe_factor_is_accepted_exactly_within_its_bounds(factor: float) -> None:
    valid = 1.0 <= factor <= 100.0
    assert _accepts(credits_probe_factor=factor) is valid


@settings(max_examples=examples(200))
@given(value=st.none() | durations)
def test_max_wait_is_accepted_exactly_within_its_bounds(value: timedelta | None) -> None:
    valid = value is None or timedelta(0) < value <= MAX_INTERVAL
    assert _accepts(max_wait=value) is valid


def _accepts(**fields: object) -> bool:
    try:
        WaitPolicyConfig(**fields)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


# next_probe_instant by example -------------------------------------------------------


def test_credits_back_off_exponentially_up_to_the_ceiling() -> None:
    credits = CreditsExhausted()
    waits = [probe_at(credits, probe_count=n) - NOW for n in range(7)]
    assert waits == [
        timedelta(seconds=60),
        timedelta(seconds=90),
        timedelta(seconds=135),
        timedelta(seconds=202.5),
        timedelta(seconds=300),
        timedelta(seconds=300),
        timedelta(seconds=300),
    ]


def test_a_factor_of_one_probes_at_a_steady_interval() -> None:
    steady = WaitPolicyConfig(credits_probe_factor=1.0)
    assert probe_at(CreditsExhausted(), probe_count=50, config=steady) == NOW + 60 * SECOND


def test_a_ceiling_equal_to_the_interval_is_the_interval() -> None:
    flat = WaitPolicyConfig(
        credits_probe_interval=timedelta(minutes=3), credits_probe_ceiling=timedelta(minutes=3)
    )
    assert credits_backoff(0, flat) == timedelta(minutes=3)
    assert credits_backoff(9, flat) == timedelta(minutes=3)


def test_credits_backoff_does_not_overflow_at_a_million_probes() -> None:
    steep = WaitPolicyConfig(credits_probe_factor=100.0, credits_probe_ceiling=MAX_INTERVAL)
    assert credits_backoff(10**6, steep) == MAX_INTERVAL
    assert probe_at(CreditsExhausted(), probe_count=10**6, config=steep) == NOW + MAX_INTERVAL


def test_a_negative_probe_count_is_refused() -> None:
    with pytest.raises(ValueError, match="probe_count"):
        probe_at(CreditsExhausted(), probe_count=-1)


def test_window_with_a_near_reset_probes_just_after_it() -> None:
    reset = NOW + timedelta(minutes=3)
    assert probe_at(WindowExhausted("five_hour", reset)) == reset + DEFAULT.reset_grace


def test_window_with_a_far_reset_still_probes_at_the_interval() -> None:
    # A week-long reset is not trusted alone: an early lift or top-up must be noticed.
    reset = NOW + timedelta(days=7)
    assert probe_at(WindowExhausted("seven_day", reset)) == NOW + DEFAULT.window_probe_interval


def test_window_without_a_reset_probes_at_the_interval() -> None:
    assert probe_at(WindowExhausted("unknown")) == NOW + DEFAULT.window_probe_interval


def test_a_past_reset_never_gives_an_immediate_probe() -> None:
    reset = NOW - timedelta(hours=1)
    assert probe_at(WindowExhausted("five_hour", reset)) == NOW + DEFAULT.window_probe_interval


def test_a_reset_just_past_still_inside_its_grace_is_honoured() -> None:
    generous = WaitPolicyConfig(reset_grace=timedelta(seconds=60))
    reset = NOW - timedelta(seconds=20)
    assert probe_at(WindowExhausted("five_hour", reset), config=generous) == reset + 60 * SECOND


def test_a_window_still_closed_just_after_its_reset_is_retried_quickly() -> None:
    # The service lifted a little late: every reset_retry_interval, not a full interval.
    reset = NOW - timedelta(seconds=30)
    assert probe_at(WindowExhausted("five_hour", reset)) == NOW + DEFAULT.reset_retry_interval


def test_the_quick_retries_end_after_the_retry_window() -> None:
    reset = NOW - DEFAULT.reset_grace - DEFAULT.reset_retry_window
    assert probe_at(WindowExhausted("five_hour", reset)) == NOW + DEFAULT.window_probe_interval


def test_quick_retries_never_exceed_the_window_interval() -> None:
    slow_retry = WaitPolicyConfig(
        window_probe_interval=timedelta(seconds=30), reset_retry_interval=timedelta(minutes=5)
    )
    reset = NOW - timedelta(seconds=10)
    assert probe_at(WindowExhausted("five_hour", reset), config=slow_retry) == NOW + 30 * SECOND


def test_max_wait_clamps_the_probe_to_the_end_of_the_wait() -> None:
    config = WaitPolicyConfig(max_wait=timedelta(hours=1))
    started = NOW - timedelta(minutes=55)
    at = probe_at(WindowExhausted("unknown"), config=config, started_waiting_at=started)
    assert at == started + timedelta(hours=1)
    assert wait_exceeded(started_waiting_at=started, now=at, config=config)


def test_a_wait_already_past_max_wait_probes_now_never_before() -> None:
    config = WaitPolicyConfig(max_wait=timedelta(hours=1))
    started = NOW - timedelta(hours=3)
    assert probe_at(CreditsExhausted(), config=config, started_waiting_at=started) == NOW


def test_wait_exceeded_only_once_max_wait_has_passed() -> None:
    config = WaitPolicyConfig(max_wait=timedelta(hours=2))
    started = NOW - timedelta(hours=2)
    assert wait_exceeded(started_waiting_at=started, now=NOW, config=config)
    assert not wait_exceeded(started_waiting_at=started, now=NOW - MICROSECOND, config=config)


def test_wait_is_never_exceeded_without_a_max_wait() -> None:
    long_ago = NOW - timedelta(days=3650)
    assert not wait_exceeded(started_waiting_at=long_ago, now=NOW, config=DEFAULT)


def test_a_probe_is_brought_forward_to_a_lowered_max_wait_and_never_put_off() -> None:
    started = NOW - timedelta(hours=2)
    scheduled = NOW + timedelta(hours=3)
    lowered = WaitPolicyConfig(max_wait=timedelta(hours=4))
    held = probe_within_max_wait(scheduled, started_waiting_at=started, config=lowered)
    assert held == started + timedelta(hours=4)
    raised = WaitPolicyConfig(max_wait=timedelta(hours=10))
    assert probe_within_max_wait(scheduled, started_waiting_at=started, config=raised) == scheduled
    assert probe_within_max_wait(scheduled, started_waiting_at=started, config=DEFAULT) == scheduled


# next_probe_instant over the whole input space ----------------------------------------

positive = st.timedeltas(min_value=MICROSECOND, max_value=MAX_INTERVAL)


@st.composite
def configs(draw: st.DrawFn) -> WaitPolicyConfig:
    interval = draw(positive)
    ceiling = draw(st.timedeltas(min_value=interval, max_value=MAX_INTERVAL))
    return WaitPolicyConfig(
        window_probe_interval=draw(positive),
        reset_grace=draw(st.timedeltas(min_value=timedelta(0), max_value=MAX_INTERVAL)),
        reset_retry_interval=draw(positive),
        reset_retry_window=draw(st.timedeltas(min_value=timedelta(0), max_value=MAX_INTERVAL)),
        credits_probe_interval=interval,
        credits_probe_factor=draw(st.floats(min_value=1.0, max_value=100.0)),
        credits_probe_ceiling=ceiling,
        max_wait=draw(st.none() | positive),
    )


nows = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(9000, 1, 1), timezones=st.just(UTC)
)
offsets = st.timedeltas(min_value=-2 * MAX_INTERVAL, max_value=2 * MAX_INTERVAL)
elapsed = st.timedeltas(min_value=timedelta(0), max_value=2 * MAX_INTERVAL)
probe_counts = st.integers(min_value=0, max_value=10**6)


@st.composite
def waitable_states(draw: st.DrawFn, now: datetime) -> WaitableState:
    if draw(st.booleans()):
        return CreditsExhausted()
    reset = draw(st.none() | offsets.map(lambda offset: now + offset))
    return WindowExhausted(draw(st.sampled_from(["five_hour", "seven_day", "unknown"])), reset)


@st.composite
def scenarios(
    draw: st.DrawFn,
) -> tuple[WaitableState, datetime, datetime, int, WaitPolicyConfig]:
    now = draw(nows)
    return (
        draw(waitable_states(now)),
        now,
        now - draw(elapsed),
        draw(probe_counts),
        draw(configs()),
    )


Scenario = tuple[WaitableState, datetime, datetime, int, WaitPolicyConfig]


def _next(scenario: Scenario, probe_count: int | None = None) -> datetime:
    state, now, started, count, config = scenario
    return next_probe_instant(
        state,
        now=now,
        started_waiting_at=started,
        probe_count=count if probe_count is None else probe_count,
        config=config,
    )


@settings(max_examples=examples(500))
@given(scenario=scenarios())
def test_the_next_probe_is_never_before_now(scenario: Scenario) -> None:
    _, now, *_ = scenario
    assert _next(scenario) >= now


@settings(max_examples=examples(500))
@given(scenario=scenarios())
def test_the_next_probe_is_never_after_the_policy_interval(scenario: Scenario) -> None:
    state, now, _, _, config = scenario
    bound = (
        config.credits_probe_ceiling
        if isinstance(state, CreditsExhausted)
        else config.window_probe_interval
    )
    assert _next(scenario) <= now + bound


@settings(max_examples=examples(500))
@given(scenario=scenarios(), max_wait=positive)
def test_the_next_probe_is_never_after_max_wait(scenario: Scenario, max_wait: timedelta) -> None:
    state, now, started, count, config = scenario
    bounded = replace(config, max_wait=max_wait)
    assert _next((state, now, started, count, bounded)) <= max(now, started + max_wait)


@settings(max_examples=examples(500))
@given(scenario=scenarios(), other=probe_counts)
def test_the_next_probe_is_monotone_in_the_probe_count(scenario: Scenario, other: int) -> None:
    count = scenario[3]
    low, high = sorted((count, other))
    assert _next(scenario, low) <= _next(scenario, high)


@settings(max_examples=examples(300))
@given(config=configs(), probe_count=probe_counts, now=nows)
def test_credits_backoff_stays_between_interval_and_ceiling_without_overflow(
    config: WaitPolicyConfig, probe_count: int, now: datetime
) -> None:
    backoff = credits_backoff(probe_count, config)
    assert config.credits_probe_interval <= backoff <= config.credits_probe_ceiling
    at = next_probe_instant(
        CreditsExhausted(), now=now, started_waiting_at=now, probe_count=10**6, config=config
    )
    assert now <= at <= now + config.credits_probe_ceiling


@settings(max_examples=examples(300))
@given(config=configs(), now=nows, reset_offset=offsets)
def test_window_with_reset_ahead_is_the_earlier_of_reset_plus_grace_and_the_interval(
    config: WaitPolicyConfig, now: datetime, reset_offset: timedelta
) -> None:
    config = WaitPolicyConfig(
        window_probe_interval=config.window_probe_interval, reset_grace=config.reset_grace
    )
    reset = now + reset_offset
    assume(reset + config.reset_grace > now)
    at = next_probe_instant(
        WindowExhausted("five_hour", reset),
        now=now,
        started_waiting_at=now,
        probe_count=0,
        config=config,
    )
    assert at == min(reset + config.reset_grace, now + config.window_probe_interval)


@settings(max_examples=examples(300))
@given(config=configs(), now=nows, reset_offset=offsets, probe_count=probe_counts)
def test_a_past_reset_never_gives_an_immediate_probe_no_burst(
    config: WaitPolicyConfig, now: datetime, reset_offset: timedelta, probe_count: int
) -> None:
    config = WaitPolicyConfig(
        window_probe_interval=config.window_probe_interval,
        reset_grace=config.reset_grace,
        reset_retry_interval=config.reset_retry_interval,
        reset_retry_window=config.reset_retry_window,
    )
    reset = now - abs(reset_offset) - config.reset_grace
    at = next_probe_instant(
        WindowExhausted("five_hour", reset),
        now=now,
        started_waiting_at=now,
        probe_count=probe_count,
        config=config,
    )
    assert at > now
    quick = now < reset + config.reset_grace + config.reset_retry_window
    step = min(config.reset_retry_interval, config.window_probe_interval)
    assert at == now + (step if quick else config.window_probe_interval)


@settings(max_examples=examples(300))
@given(scenario=scenarios())
def test_a_probe_cut_short_by_max_wait_finds_the_wait_exceeded(scenario: Scenario) -> None:
    state, now, started, count, config = scenario
    unbounded = WaitPolicyConfig(
        window_probe_interval=config.window_probe_interval,
        reset_grace=config.reset_grace,
        reset_retry_interval=config.reset_retry_interval,
        reset_retry_window=config.reset_retry_window,
        credits_probe_interval=config.credits_probe_interval,
        credits_probe_factor=config.credits_probe_factor,
        credits_probe_ceiling=config.credits_probe_ceiling,
    )
    at = _next(scenario)
    uncut = _next((state, now, started, count, unbounded))
    exceeded_there = wait_exceeded(started_waiting_at=started, now=at, config=config)
    if at < uncut:
        assert exceeded_there
    if config.max_wait is None:
        assert at == uncut
        assert not exceeded_there


@settings(max_examples=examples(200))
@given(now=nows, waited=elapsed, max_wait=st.none() | positive)
def test_wait_exceeded_exactly_when_max_wait_has_passed(
    now: datetime, waited: timedelta, max_wait: timedelta | None
) -> None:
    config = WaitPolicyConfig(max_wait=max_wait)
    exceeded = wait_exceeded(started_waiting_at=now - waited, now=now, config=config)
    assert exceeded is (max_wait is not None and waited >= max_wait)


# The quick retries after an announced reset --------------------------------------------


@pytest.mark.parametrize("value", [timedelta(0), -SECOND, MAX_INTERVAL + MICROSECOND])
def test_reset_retry_interval_must_be_positive_and_at_most_a_year(value: timedelta) -> None:
    with pytest.raises(ValueError, match="reset_retry_interval"):
        WaitPolicyConfig(reset_retry_interval=value)


@pytest.mark.parametrize("value", [-SECOND, MAX_INTERVAL + MICROSECOND])
def test_reset_retry_window_must_be_between_zero_and_a_year(value: timedelta) -> None:
    with pytest.raises(ValueError, match="reset_retry_window"):
        WaitPolicyConfig(reset_retry_window=value)


@settings(max_examples=examples(300))
@given(
    config=configs(),
    now=nows,
    since_reset=st.timedeltas(min_value=timedelta(0), max_value=2 * MAX_INTERVAL),
)
def test_after_a_reset_the_next_probe_is_soon_but_never_at_once(
    config: WaitPolicyConfig, now: datetime, since_reset: timedelta
) -> None:
    reset = now - config.reset_grace - since_reset
    at = next_probe_instant(
        WindowExhausted("five_hour", reset),
        now=now,
        started_waiting_at=now,
        probe_count=0,
        config=config,
    )
    assert now < at
    if config.max_wait is None:
        assert at <= now + config.window_probe_interval
    if since_reset < config.reset_retry_window and config.max_wait is None:
        assert at == now + min(config.reset_retry_interval, config.window_probe_interval)


def test_a_machine_asleep_past_the_instant_probes_on_waking_not_after_a_fresh_interval() -> None:
    # The wait was planned as an instant; waking three hours later, the persisted instant
    # is already due. Only a probe that then finds the window still closed plans anew,
    # from the waking instant.
    window = WindowExhausted("unknown")
    planned = probe_at(window)
    woke = planned + timedelta(hours=3)
    assert planned < woke  # due at once on waking
    after = next_probe_instant(
        window, now=woke, started_waiting_at=NOW, probe_count=1, config=DEFAULT
    )
    assert after == woke + DEFAULT.window_probe_interval


# trusted_probe_instant: a persisted instant read back on resume ------------------------


@given(scenario=scenarios(), data=st.data())
def test_an_honest_persisted_instant_is_kept_as_it_was(
    scenario: Scenario, data: st.DataObject
) -> None:
    # Planned at any earlier instant of the same wait, with the same probe count.
    state, now, started, count, config = scenario
    planned_at = data.draw(
        st.datetimes(
            min_value=started.replace(tzinfo=None),
            max_value=now.replace(tzinfo=None),
            timezones=st.just(UTC),
        )
    )
    persisted = next_probe_instant(
        state, now=planned_at, started_waiting_at=started, probe_count=count, config=config
    )
    trusted = trusted_probe_instant(
        persisted, state, now=now, started_waiting_at=started, probe_count=count, config=config
    )
    assert trusted == persisted


@given(scenario=scenarios(), persisted=offsets)
def test_no_persisted_instant_holds_a_resume_longer_than_the_policy_would(
    scenario: Scenario, persisted: timedelta
) -> None:
    state, now, started, count, config = scenario
    trusted = trusted_probe_instant(
        now + persisted, state, now=now, started_waiting_at=started, probe_count=count,
        config=config,
    )  # fmt: skip
    assert trusted <= now + persisted
    assert trusted <= _next(scenario)


def test_a_probe_instant_years_away_waits_one_interval() -> None:
    far = NOW + timedelta(days=3 * 365)
    window = WindowExhausted("unknown")
    trusted = trusted_probe_instant(
        far, window, now=NOW, started_waiting_at=NOW, probe_count=0, config=DEFAULT
    )
    assert trusted == NOW + DEFAULT.window_probe_interval


@settings(max_examples=examples(500))
@given(scenario=scenarios(), max_wait=st.none() | positive)
def test_a_probe_held_to_a_max_wait_is_never_later_nor_past_its_end(
    scenario: Scenario, max_wait: timedelta | None
) -> None:
    _, _, started, _, config = scenario
    scheduled = _next(scenario)
    held = probe_within_max_wait(
        scheduled, started_waiting_at=started, config=replace(config, max_wait=max_wait)
    )
    assert held <= scheduled
    if max_wait is None:
        assert held == scheduled
    else:
        assert held <= started + max_wait


@st.composite
def lowered_max_waits(draw: st.DrawFn) -> tuple[Scenario, timedelta]:
    """A wait and a max-wait lowered before the wait reached it: drawn so, rather than
    drawn at large and filtered (two draws in three were, and the property took 30 s)."""
    now = draw(nows)
    config = draw(configs())
    lowered = draw(positive)
    held_to = lowered if config.max_wait is None else min(lowered, config.max_wait)
    waited = draw(st.timedeltas(min_value=timedelta(0), max_value=held_to - MICROSECOND))
    return (draw(waitable_states(now)), now, now - waited, draw(probe_counts), config), lowered


@settings(max_examples=examples(500))
@given(drawn=lowered_max_waits())
def test_a_probe_held_to_a_lowered_max_wait_is_the_one_that_max_wait_decides(
    drawn: tuple[Scenario, timedelta],
) -> None:
    # Decided under the old max-wait, then held to a lower one before the wait reached
    # it: the probe is where the lower one would have put it.
    scenario, lowered = drawn
    state, now, started, count, config = scenario
    was = config.max_wait
    new = replace(config, max_wait=lowered if was is None else min(lowered, was))
    assert new.max_wait is not None
    assert started + new.max_wait > now
    held = probe_within_max_wait(_next(scenario), started_waiting_at=started, config=new)
    assert held == _next((state, now, started, count, new))


# ready_instant: what a probe and the turn after it need, started ahead ---------------


def test_the_processes_are_started_ready_ahead_of_the_probe() -> None:
    at = NOW + timedelta(hours=5)
    assert ready_instant(at, DEFAULT) == at - timedelta(seconds=30)
    ahead = WaitPolicyConfig(ready_ahead=timedelta(seconds=5))
    assert ready_instant(at, ahead) == at - timedelta(seconds=5)


def test_nothing_is_started_ahead_when_ready_ahead_is_zero() -> None:
    assert ready_instant(NOW, WaitPolicyConfig(ready_ahead=timedelta(0))) is None


def test_a_probe_instant_at_the_dawn_of_time_is_got_ready_for_at_it() -> None:
    # A tampered record's instant: no overflow, the processes started at the instant.
    dawn = datetime.min.replace(tzinfo=UTC) + SECOND
    assert ready_instant(dawn, DEFAULT) == datetime.min.replace(tzinfo=UTC)


@settings(max_examples=examples(500))
@given(
    at=st.datetimes(timezones=st.just(UTC)),
    ahead=st.timedeltas(min_value=timedelta(0), max_value=MAX_INTERVAL),
)
def test_the_ready_instant_is_never_after_the_probe_nor_further_ahead_than_said(
    at: datetime, ahead: timedelta
) -> None:
    ready = ready_instant(at, WaitPolicyConfig(ready_ahead=ahead))
    if ahead == timedelta(0):
        assert ready is None
        return
    assert ready is not None
    assert ready <= at
    assert at - ready <= ahead
    # Exactly `ready_ahead` ahead, wherever there is room for it.
    if at - datetime.min.replace(tzinfo=UTC) >= ahead:
        assert at - ready == ahead
