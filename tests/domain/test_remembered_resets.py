"""Remembered resets: a refusal that names its window but omits the reset waits for the
reset the service last announced for that window, bounded by the probe interval."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claudeloop.domain.capacity import (
    CreditsExhausted,
    NamedWindow,
    UnknownWindow,
    WaitableState,
    WaitKind,
    WindowExhausted,
)
from claudeloop.domain.completion import Continue
from claudeloop.domain.loop import (
    Phase,
    RunState,
    ScheduleProbe,
    decide_after_probe,
    decide_after_turn,
    hear_resets,
    resume_decision,
)
from claudeloop.domain.signals import TurnSignals, WindowUsage
from claudeloop.domain.waiting import (
    MAX_INTERVAL,
    AnnouncedReset,
    WaitPolicyConfig,
    announced_in,
    next_probe_instant,
    remember_resets,
    remembered_reset,
    trusted_probe_instant,
)
from tests.examples import examples

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
DEFAULT = WaitPolicyConfig()
SILENT = WindowExhausted("five_hour")  # a thin 429 that names its window, no reset
# A window the service names that claudeloop does not know is a window of its own too.
WINDOWS: tuple[NamedWindow, ...] = (
    "five_hour",
    "seven_day",
    "seven_day_opus",
    "overage",
    UnknownWindow("seven_day_cowork"),
)


def probe_at(
    state: WaitableState,
    announced: tuple[AnnouncedReset, ...],
    *,
    config: WaitPolicyConfig = DEFAULT,
    now: datetime = NOW,
) -> datetime:
    return next_probe_instant(
        state, now=now, started_waiting_at=now, probe_count=0, config=config, announced=announced
    )


# What a turn announces ----------------------------------------------------------------


def test_every_window_with_a_reset_and_the_representative_one_are_announced() -> None:
    five, week = NOW + timedelta(hours=2), NOW + timedelta(days=3)
    signals = TurnSignals(
        rate_limit_status="allowed",
        rate_limit_type="five_hour",
        resets_at=five,
        windows=(
            WindowUsage("five_hour", 0.4, five),
            WindowUsage("seven_day", 0.1, week),
            WindowUsage("seven_day_opus", 0.2, None),
        ),
    )
    assert announced_in(signals) == (
        AnnouncedReset("five_hour", five),
        AnnouncedReset("seven_day", week),
        AnnouncedReset("five_hour", five),
    )


def test_an_answer_without_rate_limit_events_announces_nothing() -> None:
    assert announced_in(TurnSignals()) == ()
    # A reset without the window it belongs to says nothing of any window.
    assert announced_in(TurnSignals(resets_at=NOW)) == ()


def test_an_announced_reset_must_be_aware() -> None:
    with pytest.raises(ValueError, match="aware"):
        AnnouncedReset("five_hour", datetime(2026, 12, 2, 12, 0))


def test_the_last_reset_announced_for_a_window_replaces_the_one_known() -> None:
    old, new = NOW + timedelta(minutes=5), NOW + timedelta(hours=5)
    week = NOW + timedelta(days=2)
    known = (AnnouncedReset("five_hour", old), AnnouncedReset("seven_day", week))
    heard = remember_resets(known, [AnnouncedReset("five_hour", new)])
    assert heard == (AnnouncedReset("five_hour", new), AnnouncedReset("seven_day", week))


def test_hearing_signals_without_resets_leaves_the_state_as_it_was() -> None:
    state = RunState(announced_resets=(AnnouncedReset("five_hour", NOW),))
    assert hear_resets(state, TurnSignals(rate_limit_status="rejected")) is state


def test_hearing_an_answer_keeps_what_it_announced() -> None:
    reset = NOW + timedelta(minutes=30)
    signals = TurnSignals(windows=(WindowUsage("five_hour", 0.5, reset),))
    heard = hear_resets(RunState(), signals)
    assert heard.announced_resets == (AnnouncedReset("five_hour", reset),)


def test_what_other_runs_heard_comes_first_and_the_turns_own_word_last() -> None:
    theirs, ours = NOW + timedelta(minutes=20), NOW + timedelta(minutes=25)
    week = NOW + timedelta(days=2)
    others = (AnnouncedReset("five_hour", theirs), AnnouncedReset("seven_day", week))
    signals = TurnSignals(windows=(WindowUsage("five_hour", 0.9, ours),))
    heard = hear_resets(RunState(), signals, others)
    assert heard.announced_resets == (
        AnnouncedReset("five_hour", ours),
        AnnouncedReset("seven_day", week),
    )


# The rule -----------------------------------------------------------------------------


def test_a_silent_refusal_probes_just_after_the_reset_announced_for_its_window() -> None:
    reset = NOW + timedelta(seconds=40)
    known = (AnnouncedReset("five_hour", reset),)
    assert remembered_reset(SILENT, known, now=NOW) == reset
    assert probe_at(SILENT, known) == reset + DEFAULT.reset_grace


def test_a_remembered_reset_beyond_the_interval_still_probes_at_the_interval() -> None:
    # An early lift (overage switched on, an upgrade) is caught as before.
    known = (AnnouncedReset("five_hour", NOW + timedelta(hours=3)),)
    assert probe_at(SILENT, known) == NOW + DEFAULT.window_probe_interval


def test_a_remembered_reset_already_past_is_not_used() -> None:
    known = (AnnouncedReset("five_hour", NOW - timedelta(seconds=1)),)
    assert remembered_reset(SILENT, known, now=NOW) is None
    assert probe_at(SILENT, known) == NOW + DEFAULT.window_probe_interval
    # Nor one falling due this very instant: the window has reset and still refuses.
    assert remembered_reset(SILENT, (AnnouncedReset("five_hour", NOW),), now=NOW) is None


def test_another_windows_reset_is_never_used() -> None:
    known = (AnnouncedReset("seven_day", NOW + timedelta(seconds=40)),)
    assert remembered_reset(SILENT, known, now=NOW) is None
    assert probe_at(SILENT, known) == NOW + DEFAULT.window_probe_interval


def test_a_refusal_that_names_no_window_uses_no_remembered_reset() -> None:
    known = (AnnouncedReset("five_hour", NOW + timedelta(seconds=40)),)
    assert remembered_reset(WindowExhausted("unknown"), known, now=NOW) is None


def test_a_refusal_with_its_own_reset_keeps_it() -> None:
    own = NOW + timedelta(minutes=2)
    known = (AnnouncedReset("five_hour", NOW + timedelta(seconds=40)),)
    assert remembered_reset(WindowExhausted("five_hour", own), known, now=NOW) is None
    assert probe_at(WindowExhausted("five_hour", own), known) == own + DEFAULT.reset_grace


def test_credits_and_pauses_use_no_remembered_reset() -> None:
    known = (AnnouncedReset("five_hour", NOW + timedelta(seconds=40)),)
    assert remembered_reset(CreditsExhausted(), known, now=NOW) is None
    paused = WindowExhausted("five_hour", None, paused_at=0.95)
    assert remembered_reset(paused, known, now=NOW) is None


def test_a_reset_far_ahead_in_a_tampered_record_does_not_overflow() -> None:
    known = (AnnouncedReset("five_hour", datetime.max.replace(tzinfo=UTC)),)
    assert probe_at(SILENT, known) == NOW + DEFAULT.window_probe_interval


def test_a_resumed_wait_trusts_a_probe_instant_at_the_remembered_reset() -> None:
    reset = NOW + timedelta(seconds=40)
    known = (AnnouncedReset("five_hour", reset),)
    persisted = reset + DEFAULT.reset_grace
    at = trusted_probe_instant(
        persisted, SILENT, now=NOW, started_waiting_at=NOW, probe_count=0, config=DEFAULT,
        announced=known,
    )  # fmt: skip
    assert at == persisted


# Through the loop ---------------------------------------------------------------------


def test_a_silent_refusal_after_an_announced_reset_waits_for_that_reset() -> None:
    reset = NOW + timedelta(seconds=25)
    answered = TurnSignals(
        rate_limit_status="allowed", windows=(WindowUsage("five_hour", 0.9, reset),)
    )
    state = hear_resets(RunState(phase=Phase.RUNNING), answered)
    refused = decide_after_turn(
        hear_resets(state, TurnSignals(rate_limit_status="rejected")),
        capacity=SILENT,
        verdict=Continue(),
        now=NOW,
        config=DEFAULT,
    )
    assert refused.decision == ScheduleProbe(at=reset + DEFAULT.reset_grace, awaiting=SILENT)
    # Killed during that wait, the run resumes to the same instant.
    assert resume_decision(refused.state) == refused.decision


def test_a_probe_refused_again_after_the_reset_waits_a_probe_interval() -> None:
    reset = NOW + timedelta(seconds=25)
    state = RunState(
        phase=Phase.PROBING,
        capacity=SILENT,
        waiting_since=NOW,
        announced_resets=(AnnouncedReset("five_hour", reset),),
    )
    later = reset + DEFAULT.reset_grace
    again = decide_after_probe(state, SILENT, now=later, config=DEFAULT)
    assert again.decision == ScheduleProbe(
        at=later + DEFAULT.window_probe_interval, awaiting=SILENT
    )


# The invariants -----------------------------------------------------------------------

positive = st.timedeltas(min_value=timedelta(microseconds=1), max_value=MAX_INTERVAL)
offsets = st.timedeltas(min_value=-2 * MAX_INTERVAL, max_value=2 * MAX_INTERVAL)
nows = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(9000, 1, 1), timezones=st.just(UTC)
)


@st.composite
def configs(draw: st.DrawFn) -> WaitPolicyConfig:
    return WaitPolicyConfig(
        window_probe_interval=draw(positive),
        reset_grace=draw(st.timedeltas(min_value=timedelta(0), max_value=MAX_INTERVAL)),
        reset_retry_interval=draw(positive),
        reset_retry_window=draw(st.timedeltas(min_value=timedelta(0), max_value=MAX_INTERVAL)),
        max_wait=draw(st.none() | positive),
    )


@st.composite
def known_resets(draw: st.DrawFn, now: datetime) -> tuple[AnnouncedReset, ...]:
    pairs = draw(st.lists(st.tuples(st.sampled_from(WINDOWS), offsets), max_size=6))
    return remember_resets((), (AnnouncedReset(w, now + offset) for w, offset in pairs))


@st.composite
def refusals(draw: st.DrawFn, now: datetime) -> WaitableState:
    if draw(st.booleans()):
        return CreditsExhausted()
    unnamed: tuple[WaitKind, ...] = ("unknown",)
    window = draw(st.sampled_from((*WINDOWS, *unnamed)))
    reset = draw(st.none() | offsets.map(lambda offset: now + offset))
    paused = draw(st.none() | st.floats(min_value=0.5, max_value=1.0))
    return WindowExhausted(window, reset, paused_at=paused)


Case = tuple[WaitableState, datetime, tuple[AnnouncedReset, ...], WaitPolicyConfig]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    now = draw(nows)
    return draw(refusals(now)), now, draw(known_resets(now)), draw(configs())


@settings(max_examples=examples(500))
@given(case=cases())
def test_a_remembered_reset_is_never_later_than_the_interval_bound(case: Case) -> None:
    state, now, known, config = case
    without = probe_at(state, (), config=config, now=now)
    with_known = probe_at(state, known, config=config, now=now)
    assert with_known <= without
    if isinstance(state, WindowExhausted) and state.paused_at is None:
        assert with_known <= now + config.window_probe_interval


@settings(max_examples=examples(500))
@given(case=cases())
def test_a_remembered_reset_is_never_a_past_instant(case: Case) -> None:
    state, now, known, config = case
    remembered = remembered_reset(state, known, now=now)
    assert remembered is None or remembered > now
    assert probe_at(state, known, config=config, now=now) >= now


@settings(max_examples=examples(500))
@given(case=cases())
def test_a_remembered_reset_is_never_another_windows_instant(case: Case) -> None:
    state, now, known, config = case
    remembered = remembered_reset(state, known, now=now)
    if remembered is not None:
        assert isinstance(state, WindowExhausted)
        assert any(r.window == state.rate_limit_type and r.at == remembered for r in known)
    # Forgetting every other window's reset changes nothing.
    named = state.rate_limit_type if isinstance(state, WindowExhausted) else None
    own = tuple(reset for reset in known if reset.window == named)
    assert probe_at(state, own, config=config, now=now) == probe_at(
        state, known, config=config, now=now
    )


@settings(max_examples=examples(300))
@given(case=cases())
def test_a_remembered_reset_ahead_within_the_interval_is_waited_for(case: Case) -> None:
    state, now, known, config = case
    remembered = remembered_reset(state, known, now=now)
    if remembered is None:
        return
    bound = now + config.window_probe_interval
    expected = min(bound, remembered + config.reset_grace)
    if config.max_wait is not None:
        expected = min(expected, now + config.max_wait)
    assert probe_at(state, known, config=config, now=now) == expected


@settings(max_examples=examples(300))
@given(
    pairs=st.lists(
        st.tuples(st.sampled_from(WINDOWS), offsets.map(lambda offset: NOW + offset)),
        max_size=8,
    )
)
def test_each_window_keeps_the_reset_last_announced_for_it(
    pairs: list[tuple[NamedWindow, datetime]],
) -> None:
    known = remember_resets((), (AnnouncedReset(w, at) for w, at in pairs))
    last = dict(pairs)
    assert {reset.window: reset.at for reset in known} == last
    assert len(known) == len(last)
