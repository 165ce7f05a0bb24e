"""Pause before the wall: a window at its threshold is waited out like a closed one."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.capacity import Available, CreditsExhausted, WindowExhausted, describe
from claudeloop.domain.completion import Blocked, Continue, Done
from claudeloop.domain.loop import (
    Finish,
    Outcome,
    Phase,
    RunState,
    ScheduleProbe,
    decide_after_turn,
)
from claudeloop.domain.pause import (
    PauseThresholds,
    capacity_of,
    is_pause,
    pause_for,
    was_answered,
)
from claudeloop.domain.signals import TurnSignals, WindowUsage
from claudeloop.domain.waiting import WaitPolicyConfig, next_probe_instant
from tests.examples import examples

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
RESET_5H = NOW + timedelta(hours=2)
RESET_7D = NOW + timedelta(days=3)
CONFIG = WaitPolicyConfig()
THRESHOLDS = PauseThresholds.parse("5h=90%,7d=95%")


def windows(five: float | None, seven: float | None = 0.3) -> tuple[WindowUsage, ...]:
    return (
        WindowUsage("five_hour", five, RESET_5H, "allowed"),
        WindowUsage("seven_day", seven, RESET_7D, "allowed"),
    )


def test_parse_accepts_percentages_fractions_and_window_names() -> None:
    assert PauseThresholds.parse("5h=90%, 7d=95%").limits == (
        ("five_hour", 0.9),
        ("seven_day", 0.95),
    )
    assert PauseThresholds.parse("five_hour=0.8").limits == (("five_hour", 0.8),)
    assert PauseThresholds.parse("7d_opus=50").limits == (("seven_day_opus", 0.5),)
    assert PauseThresholds.parse("").limits == ()


@pytest.mark.parametrize("text", ["5h", "5h=", "10h=90%", "5h=0%", "5h=120%", "5h=ninety"])
def test_parse_refuses_what_is_not_a_threshold(text: str) -> None:
    with pytest.raises(ValueError, match=r"5h=90%|at most 100%"):
        PauseThresholds.parse(text)


def test_thresholds_validate_their_values() -> None:
    with pytest.raises(ValueError, match="unknown window"):
        PauseThresholds((("ten_hour", 0.5),))  # type: ignore[arg-type]  # what a file may say
    with pytest.raises(ValueError, match="at most 100%"):
        PauseThresholds((("five_hour", 1.5),))


def test_render_is_what_parse_reads() -> None:
    assert PauseThresholds.parse(THRESHOLDS.render()) == THRESHOLDS


def test_a_window_at_its_threshold_pauses_until_its_reset() -> None:
    assert pause_for(windows(0.9), THRESHOLDS) == WindowExhausted(
        "five_hour", RESET_5H, paused_at=0.9
    )


def test_below_every_threshold_nothing_pauses() -> None:
    assert pause_for(windows(0.89, 0.94), THRESHOLDS) is None


def test_of_two_windows_over_their_thresholds_the_later_reset_wins() -> None:
    paused = pause_for(windows(0.95, 0.97), THRESHOLDS)
    assert paused == WindowExhausted("seven_day", RESET_7D, paused_at=0.97)


def test_a_window_the_event_does_not_report_is_ignored_and_named() -> None:
    only_five = (WindowUsage("five_hour", 0.5, RESET_5H),)
    assert pause_for(only_five, PauseThresholds.parse("7d=10%")) is None
    assert PauseThresholds.parse("5h=90%,7d=95%").unreported(only_five) == ("seven_day",)


def test_capacity_of_pauses_only_an_available_turn() -> None:
    warned = TurnSignals(rate_limit_status="allowed_warning", windows=windows(0.92))
    assert capacity_of(warned, THRESHOLDS) == WindowExhausted("five_hour", RESET_5H, 0.92)
    assert capacity_of(warned, PauseThresholds()) == Available()
    billing = TurnSignals(assistant_error="billing_error", windows=windows(0.99))
    assert capacity_of(billing, THRESHOLDS) == CreditsExhausted()
    assert is_pause(WindowExhausted("five_hour", RESET_5H, 0.92))
    assert not is_pause(WindowExhausted("five_hour", RESET_5H))


def test_describe_says_it_is_a_pause() -> None:
    text = describe(WindowExhausted("five_hour", RESET_5H, paused_at=0.92))
    assert "92% used: paused until" in text
    assert describe(WindowExhausted("five_hour", None, paused_at=0.92)).endswith("paused")


RUNNING = RunState(phase=Phase.RUNNING, ledger=BudgetLedger())
PAUSED = WindowExhausted("five_hour", RESET_5H, paused_at=0.92)


def test_a_paused_turn_counts_as_answered_and_then_waits_for_the_reset() -> None:
    transition = decide_after_turn(
        RUNNING, capacity=PAUSED, verdict=Continue(("b",)), now=NOW, config=CONFIG
    )
    assert transition.state.ledger.turns == 1
    assert transition.state.remaining_work == ("b",)
    # No probe before the reset: nothing lifts a pause early.
    assert transition.decision == ScheduleProbe(at=RESET_5H + CONFIG.reset_grace, awaiting=PAUSED)


def test_a_paused_turn_that_finished_the_task_is_done() -> None:
    transition = decide_after_turn(
        RUNNING, capacity=PAUSED, verdict=Done("ok"), now=NOW, config=CONFIG
    )
    assert transition.decision == Finish(Outcome.DONE, "ok")


def test_a_paused_turn_that_is_blocked_is_blocked() -> None:
    transition = decide_after_turn(
        RUNNING, capacity=PAUSED, verdict=Blocked("a key"), now=NOW, config=CONFIG
    )
    assert isinstance(transition.decision, Finish)
    assert transition.decision.outcome is Outcome.BLOCKED


def test_a_pause_without_a_reset_probes_at_the_window_interval() -> None:
    paused = replace(PAUSED, resets_at=None)
    at = next_probe_instant(paused, now=NOW, started_waiting_at=NOW, probe_count=0, config=CONFIG)
    assert at == NOW + CONFIG.window_probe_interval


@settings(max_examples=examples(200))
@given(
    ahead=st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(days=30)),
    used=st.floats(min_value=0.01, max_value=1.0),
)
def test_a_pause_aims_at_its_reset_however_far(ahead: timedelta, used: float) -> None:
    paused = WindowExhausted("seven_day", NOW + ahead, paused_at=used)
    at = next_probe_instant(paused, now=NOW, started_waiting_at=NOW, probe_count=0, config=CONFIG)
    assert at == NOW + ahead + CONFIG.reset_grace


def test_a_turn_was_answered_when_capacity_was_open_or_it_paused_before_the_wall() -> None:
    paused = WindowExhausted(rate_limit_type="five_hour", resets_at=RESET_5H, paused_at=0.9)
    assert was_answered(Available())
    assert was_answered(paused)
    assert not was_answered(replace(paused, paused_at=None))  # the wall itself
    assert not was_answered(CreditsExhausted())
