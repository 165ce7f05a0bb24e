"""Paid overage: an answer that spends extra usage is a limit of its own, and every
reason the service gives for refusing overage is decided."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.capacity import Available, CreditsExhausted, WindowExhausted, describe
from claudeloop.domain.classify import classify
from claudeloop.domain.completion import Continue, Done
from claudeloop.domain.limits import GoOn, LimitPolicies, SwitchProfile, WindDown, parse_action
from claudeloop.domain.loop import (
    Finish,
    Outcome,
    Phase,
    RunProbe,
    RunState,
    ScheduleProbe,
    SendTurn,
    decide_after_probe,
    decide_after_turn,
)
from claudeloop.domain.overage import (
    OVERAGE_DISABLED_REASONS,
    PAID_OVERAGE,
    is_paid_overage,
    on_paid_overage,
    overage_limit,
    overage_refusal,
)
from claudeloop.domain.pause import PauseThresholds, capacity_of
from claudeloop.domain.signals import TurnSignals, WindowUsage
from claudeloop.domain.waiting import WaitPolicyConfig

NOW = datetime(2026, 12, 2, 3, 0, tzinfo=UTC)
RESET = NOW + timedelta(hours=2)
CONFIG = WaitPolicyConfig()
RUNNING = RunState(phase=Phase.RUNNING)
NONE = PauseThresholds()
# The two shapes the bundled CLI gives an answer on overage (measured, CLI 2.1.332).
IN_USE = TurnSignals(
    rate_limit_status="allowed_warning", rate_limit_type="five_hour", resets_at=RESET,
    utilization=1.0, overage_status="allowed", overage_in_use=True,
)  # fmt: skip
REJECTED_WINDOW = TurnSignals(
    rate_limit_status="rejected", rate_limit_type="five_hour", resets_at=RESET,
    overage_status="allowed",
)  # fmt: skip
ON_OVERAGE = overage_limit(IN_USE)


@pytest.mark.parametrize("signals", [IN_USE, REJECTED_WINDOW], ids=["in_use", "rejected_window"])
def test_an_answer_on_paid_overage_is_the_overage_limit_until_the_window_resets(
    signals: TurnSignals,
) -> None:
    capacity = capacity_of(signals, NONE)
    assert capacity == WindowExhausted(PAID_OVERAGE, RESET, paused_at=1.0)
    assert is_paid_overage(capacity)
    assert describe(capacity) == "paid overage in use; the window resets 2026-12-02 05:00:00 UTC"


def test_the_latest_rejected_window_s_reset_is_the_one_waited_for() -> None:
    later = RESET + timedelta(days=3)
    windows = (
        WindowUsage("five_hour", 1.0, RESET, "rejected"),
        WindowUsage("seven_day", 1.0, later, "rejected"),
        WindowUsage("seven_day_opus", 0.2, later + timedelta(days=1), "allowed"),
    )
    signals = TurnSignals(overage_in_use=True, resets_at=RESET, windows=windows)
    assert overage_limit(signals).resets_at == later


def test_overage_with_no_reset_announced_says_so() -> None:
    capacity = overage_limit(TurnSignals(overage_in_use=True))
    assert capacity.resets_at is None
    assert describe(capacity) == "paid overage in use"


def test_an_error_turn_is_never_an_answer_on_overage() -> None:
    for failed in (
        TurnSignals(overage_in_use=True, is_error=True),
        TurnSignals(overage_in_use=True, api_error_status=500),
        TurnSignals(overage_in_use=True, assistant_error="server_error"),
    ):
        assert not on_paid_overage(failed)
    assert not on_paid_overage(TurnSignals(rate_limit_status="allowed", overage_status="allowed"))


def test_a_pause_threshold_comes_before_the_overage_limit() -> None:
    windows = (WindowUsage("five_hour", 1.0, RESET, "rejected"),)
    signals = TurnSignals(rate_limit_status="allowed", overage_in_use=True, windows=windows)
    capacity = capacity_of(signals, PauseThresholds.parse("5h=90%"))
    assert isinstance(capacity, WindowExhausted)
    assert capacity.rate_limit_type == "five_hour"


def test_every_reason_the_cli_names_is_decided() -> None:
    assert len(OVERAGE_DISABLED_REASONS) == 13
    assert overage_refusal(None) is None
    assert overage_refusal("a_reason_of_tomorrow") == "unknown"
    assert overage_refusal("org_level_disabled_until") == "until"
    credits = {r for r, meaning in OVERAGE_DISABLED_REASONS.items() if meaning == "credits"}
    assert credits == {
        "out_of_credits", "seat_tier_zero_credit_limit", "group_zero_credit_limit",
        "member_zero_credit_limit",
    }  # fmt: skip


@pytest.mark.parametrize("reason", sorted(OVERAGE_DISABLED_REASONS))
def test_the_overage_claim_refused_is_credits_unless_a_clock_lifts_it(reason: str) -> None:
    signals = TurnSignals(
        rate_limit_status="rejected", rate_limit_type="overage", resets_at=RESET,
        overage_status="rejected", overage_disabled_reason=reason,
        overage_resets_at=RESET + timedelta(days=20), api_error_status=429,
        assistant_error="rate_limit",
    )  # fmt: skip
    capacity = classify(signals)
    if reason == "org_level_disabled_until":
        assert capacity == WindowExhausted("overage", RESET + timedelta(days=20))
    else:
        assert isinstance(capacity, CreditsExhausted)


def test_go_on_is_only_for_paid_overage() -> None:
    assert parse_action("go-on") == GoOn()
    LimitPolicies(((PAID_OVERAGE, GoOn()),))
    with pytest.raises(ValueError, match="go-on is only for overage_in_use"):
        LimitPolicies((("five_hour", GoOn()),))


def test_by_default_an_answer_on_overage_waits_for_the_window_s_reset() -> None:
    transition = decide_after_turn(
        RUNNING, capacity=ON_OVERAGE, verdict=Continue(), now=NOW, config=CONFIG
    )
    assert isinstance(transition.decision, ScheduleProbe)
    assert transition.decision.at >= RESET
    assert transition.state.overage_turns == 1
    assert transition.state.ledger.turns == 1  # answered: it counts as a turn


def test_a_done_answered_on_overage_is_done() -> None:
    transition = decide_after_turn(
        RUNNING, capacity=ON_OVERAGE, verdict=Done("all three"), now=NOW, config=CONFIG
    )
    assert transition.decision == Finish(Outcome.DONE, "all three")


def test_go_on_sends_the_next_turn_and_counts_it_on_overage() -> None:
    policies = LimitPolicies(((PAID_OVERAGE, GoOn()),))
    transition = decide_after_turn(
        RUNNING, capacity=ON_OVERAGE, verdict=Continue(), now=NOW, config=CONFIG,
        policies=policies,
    )  # fmt: skip
    assert transition.decision == SendTurn()
    assert transition.state.capacity == ON_OVERAGE  # status says overage is in use


def test_wind_down_on_overage_ends_the_run_with_a_handoff() -> None:
    policies = LimitPolicies(((PAID_OVERAGE, WindDown()),))
    transition = decide_after_turn(
        RUNNING, capacity=ON_OVERAGE, verdict=Continue(), now=NOW, config=CONFIG,
        policies=policies,
    )  # fmt: skip
    assert isinstance(transition.decision, Finish)
    assert transition.decision.outcome is Outcome.WOUND_DOWN
    assert "overage_in_use limit met" in transition.decision.reason


def test_switch_profile_on_overage_goes_on_elsewhere() -> None:
    policies = LimitPolicies(((PAID_OVERAGE, SwitchProfile("local")),))
    transition = decide_after_turn(
        RUNNING, capacity=ON_OVERAGE, verdict=Continue(), now=NOW, config=CONFIG,
        policies=policies,
    )  # fmt: skip
    assert transition.decision == SendTurn()
    assert transition.state.detour is not None
    assert transition.state.detour.awaiting == ON_OVERAGE


def test_a_turn_not_sent_is_not_counted_on_overage() -> None:
    transition = decide_after_turn(
        RUNNING, capacity=ON_OVERAGE, verdict=Continue(), now=NOW, config=CONFIG, sent=False
    )
    assert transition.state.overage_turns == 0


# What a run can meet after an answer on overage: the probe answers again on overage,
# or not; the policy waits (the default).
_AFTER = st.lists(st.booleans(), min_size=1, max_size=8)


@given(still_on_overage=_AFTER, seconds=st.lists(st.integers(0, 4 * 3600), min_size=8))
def test_a_run_that_waits_on_overage_sends_no_turn_before_the_window_s_reset(
    still_on_overage: list[bool], seconds: list[int]
) -> None:
    """The invariant: under the default policy, after an answer that said overage is in
    use, no turn goes out before the window's reset (only probes, and none before it)."""
    now = NOW
    transition = decide_after_turn(
        RUNNING, capacity=ON_OVERAGE, verdict=Continue(), now=now, config=CONFIG
    )
    for on_overage, step in zip(still_on_overage, seconds, strict=False):
        decision = transition.decision
        if isinstance(decision, SendTurn):
            assert now >= RESET
            return
        assert isinstance(decision, ScheduleProbe | RunProbe)
        if isinstance(decision, ScheduleProbe):
            assert decision.at >= RESET
            now = max(now, decision.at) + timedelta(seconds=step % 60)
        capacity = ON_OVERAGE if on_overage else Available()
        transition = decide_after_probe(transition.state, capacity, now=now, config=CONFIG)
