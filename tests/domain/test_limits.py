"""A policy per limit: wait, wind down, or go on with another profile until it lifts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.capacity import (
    WAIT_KINDS,
    AuthenticationFailed,
    Available,
    CreditsExhausted,
    WaitableState,
    WindowExhausted,
    capacity_kind,
    window_named,
)
from claudeloop.domain.completion import Continue
from claudeloop.domain.limits import (
    LIMIT_KINDS,
    GoOn,
    LimitAction,
    LimitPolicies,
    SwitchModel,
    SwitchProfile,
    Wait,
    WindDown,
    limit_kind,
    limit_named,
    parse_action,
    render_action,
)
from claudeloop.domain.loop import (
    Detour,
    Finish,
    Outcome,
    Phase,
    RunProbe,
    RunState,
    ScheduleProbe,
    SendTurn,
    decide_after_probe,
    decide_after_turn,
    decide_preflight,
    resume_decision,
)
from claudeloop.domain.waiting import WaitPolicyConfig
from tests.examples import examples

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
CONFIG = WaitPolicyConfig()
FIVE_HOUR = WindowExhausted("five_hour", NOW + timedelta(hours=3))
RUNNING = RunState(phase=Phase.RUNNING, ledger=BudgetLedger())
SWITCH = LimitPolicies((("five_hour", SwitchProfile("local")), ("credits", WindDown())))


def test_actions_parse_and_render() -> None:
    assert parse_action("wait") == Wait()
    assert parse_action(" wind-down ") == WindDown()
    assert parse_action("switch-profile  local") == SwitchProfile("local")
    for action in (Wait(), WindDown(), SwitchProfile("ollama-qwen"), GoOn()):
        assert parse_action(render_action(action)) == action


@pytest.mark.parametrize("text", ["sleep", "switch-profile a b", "wind down"])
def test_an_unknown_action_is_refused_naming_what_is_accepted(text: str) -> None:
    accepted = r"go-on \(overage_in_use only\), switch-profile NAME or switch-model MODEL"
    with pytest.raises(ValueError, match=accepted):
        parse_action(text)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("switch-profile", "'switch-profile' names no profile: write switch-profile PROFILE"),
        (" switch-model ", "' switch-model ' names no model: write switch-model MODEL"),
    ],
)
def test_a_switch_without_its_name_says_the_name_is_missing(text: str, said: str) -> None:
    with pytest.raises(ValueError, match="names no") as refused:
        parse_action(text)
    assert str(refused.value) == said


def test_a_limit_no_policy_can_name_is_refused_naming_those_it_can() -> None:
    with pytest.raises(ValueError, match=r"unknown limit 'ten_hour'; limits: five_hour, .*credits"):
        limit_named("ten_hour")
    assert limit_named(" unknown ") == "unknown"


def test_limit_kinds_name_the_windows_credits_and_local() -> None:
    assert limit_kind(CreditsExhausted()) == "credits"
    assert limit_kind(WindowExhausted("local")) == "local"
    assert set(LIMIT_KINDS) >= {"five_hour", "seven_day", "credits", "local", "overage"}


def test_every_window_and_paid_overage_are_limit_kinds_and_a_pause_names_each_window() -> None:
    from claudeloop.domain.capacity import WINDOW_KINDS
    from claudeloop.domain.overage import PAID_OVERAGE
    from claudeloop.domain.pause import WINDOW_ALIASES, PauseThresholds

    assert LIMIT_KINDS[: len(WINDOW_KINDS)] == WINDOW_KINDS
    assert PAID_OVERAGE in LIMIT_KINDS
    assert set(WINDOW_ALIASES.values()) == set(WINDOW_KINDS)
    typed = ",".join(f"{alias}=90%" for alias in WINDOW_ALIASES)
    assert {window for window, _ in PauseThresholds.parse(typed).limits} == set(WINDOW_KINDS)


def test_a_limit_without_a_policy_waits() -> None:
    assert SWITCH.action_for(WindowExhausted("seven_day")) == Wait()


def test_a_pause_always_waits_whatever_the_policy() -> None:
    paused = WindowExhausted("five_hour", FIVE_HOUR.resets_at, paused_at=0.95)
    assert SWITCH.action_for(paused) == Wait()


def test_wind_down_policy_ends_the_run_with_a_handoff() -> None:
    transition = decide_after_turn(
        RUNNING, capacity=CreditsExhausted(), verdict=Continue(), now=NOW, config=CONFIG,
        policies=SWITCH,
    )  # fmt: skip
    assert isinstance(transition.decision, Finish)
    assert transition.decision.outcome is Outcome.WOUND_DOWN
    assert transition.decision.exit_code == 75
    assert "credits limit met" in transition.decision.reason


def test_wind_down_applies_before_the_first_turn_too() -> None:
    transition = decide_preflight(RunState(), CreditsExhausted(), now=NOW, config=CONFIG,
                                  policies=SWITCH)  # fmt: skip
    assert isinstance(transition.decision, Finish)


def switched() -> RunState:
    transition = decide_after_turn(
        RUNNING, capacity=FIVE_HOUR, verdict=Continue(), now=NOW, config=CONFIG, policies=SWITCH
    )
    assert transition.decision == SendTurn()
    return transition.state


def test_switch_profile_goes_on_with_the_other_profile_at_once() -> None:
    state = switched()
    assert state.detour == Detour(
        profile="local", awaiting=FIVE_HOUR, since=NOW, check_at=NOW + CONFIG.window_probe_interval
    )
    assert state.capacity == Available()
    assert state.phase is Phase.RUNNING
    assert resume_decision(state) == SendTurn()  # a crash mid-detour resumes on it


def test_on_the_other_profile_turns_go_on_until_the_check_is_due() -> None:
    state = switched()
    early = decide_after_turn(state, capacity=Available(), verdict=Continue(("b",)),
                              now=NOW + timedelta(minutes=1), config=CONFIG)  # fmt: skip
    assert early.decision == SendTurn()
    assert early.state.detour == state.detour
    due = decide_after_turn(state, capacity=Available(), verdict=Continue(("b",)),
                            now=NOW + timedelta(minutes=6), config=CONFIG)  # fmt: skip
    assert due.decision == RunProbe()
    assert due.state.phase is Phase.PROBING


def test_the_limit_still_there_keeps_the_detour_and_backs_the_check_off() -> None:
    state = switched()
    later = NOW + timedelta(minutes=6)
    transition = decide_after_probe(state, FIVE_HOUR, now=later, config=CONFIG, policies=SWITCH)
    assert transition.decision == SendTurn()
    assert transition.state.detour is not None
    assert transition.state.detour.checks == 1
    assert transition.state.detour.check_at == later + CONFIG.window_probe_interval


def test_the_limit_lifted_switches_back() -> None:
    state = switched()
    transition = decide_after_probe(state, Available(), now=NOW + timedelta(hours=3), config=CONFIG)
    assert transition.decision == SendTurn()
    assert transition.state.detour is None


def test_the_other_profile_meeting_a_limit_too_waits_for_the_run_s_own() -> None:
    state = switched()
    transition = decide_after_turn(state, capacity=CreditsExhausted(), verdict=Continue(),
                                   now=NOW + timedelta(minutes=2), config=CONFIG,
                                   policies=SWITCH)  # fmt: skip
    assert isinstance(transition.decision, ScheduleProbe)
    assert transition.decision.awaiting == FIVE_HOUR
    assert transition.state.detour is None
    assert transition.state.phase is Phase.WAITING


def test_the_other_profile_refusing_credentials_ends_the_run() -> None:
    state = switched()
    transition = decide_after_turn(state, capacity=AuthenticationFailed(), verdict=Continue(),
                                   now=NOW, config=CONFIG)  # fmt: skip
    assert isinstance(transition.decision, Finish)
    assert transition.decision.outcome is Outcome.AUTH_FAILED


def test_a_different_limit_with_a_wait_policy_ends_the_detour_and_waits() -> None:
    state = switched()
    seven_day = WindowExhausted("seven_day", NOW + timedelta(days=2))
    later = NOW + timedelta(minutes=6)
    transition = decide_after_probe(state, seven_day, now=later, config=CONFIG, policies=SWITCH)
    assert isinstance(transition.decision, ScheduleProbe)
    assert transition.decision.awaiting == seven_day
    assert transition.state.detour is None


def test_a_different_limit_with_its_own_switch_moves_the_detour_there() -> None:
    policies = LimitPolicies(
        (("five_hour", SwitchProfile("local")), ("seven_day", SwitchProfile("other")))
    )
    state = decide_after_turn(
        RUNNING, capacity=FIVE_HOUR, verdict=Continue(), now=NOW, config=CONFIG, policies=policies
    ).state
    seven_day = WindowExhausted("seven_day", NOW + timedelta(days=2))
    transition = decide_after_probe(
        state, seven_day, now=NOW + timedelta(minutes=6), config=CONFIG, policies=policies
    )
    assert transition.decision == SendTurn()
    assert transition.state.detour is not None
    assert transition.state.detour.profile == "other"
    assert transition.state.detour.awaiting == seven_day


def test_a_policy_that_switches_to_the_runs_own_profile_is_named() -> None:
    policies = LimitPolicies(
        (("credits", Wait()), ("five_hour", SwitchProfile("local")), ("seven_day", WindDown()))
    )
    assert policies.switch_to_itself("local") == "five_hour"
    assert policies.switch_to_itself("default") is None


OPUS_WEEK = WindowExhausted("seven_day_opus", NOW + timedelta(days=3))
SWITCH_MODEL = LimitPolicies((("seven_day_opus", SwitchModel("sonnet")),))


def test_switch_model_parses_renders_and_goes_on_with_the_other_model_at_once() -> None:
    assert parse_action("switch-model  claude-sonnet-4-5") == SwitchModel("claude-sonnet-4-5")
    assert render_action(SwitchModel("opus[1m]")) == "switch-model opus[1m]"
    transition = decide_after_turn(
        RUNNING, capacity=OPUS_WEEK, verdict=Continue(), now=NOW, config=CONFIG,
        policies=SWITCH_MODEL,
    )  # fmt: skip
    assert transition.decision == SendTurn()
    detour = transition.state.detour
    assert detour is not None
    assert (detour.profile, detour.model, detour.to) == (None, "sonnet", "model sonnet")


def test_the_model_s_window_still_shut_keeps_the_model_detour() -> None:
    on_sonnet = decide_after_turn(
        RUNNING, capacity=OPUS_WEEK, verdict=Continue(), now=NOW, config=CONFIG,
        policies=SWITCH_MODEL,
    ).state  # fmt: skip
    later = NOW + timedelta(hours=1)
    transition = decide_after_probe(
        on_sonnet, OPUS_WEEK, now=later, config=CONFIG, policies=SWITCH_MODEL
    )
    assert transition.decision == SendTurn()
    assert transition.state.detour is not None
    assert transition.state.detour.model == "sonnet"
    assert transition.state.detour.checks == 1
    back = decide_after_probe(on_sonnet, Available(), now=later, config=CONFIG,
                              policies=SWITCH_MODEL)  # fmt: skip
    assert back.state.detour is None
    assert Detour(profile="local", awaiting=OPUS_WEEK, since=NOW, check_at=NOW).to == (
        "profile local"
    )


def test_every_wait_the_classifier_makes_can_be_given_a_policy() -> None:
    # Issue 41: `limits = {daily_cap = "wind-down"}` was refused although the classifier
    # produces daily_cap; so were the outages a detour can go around.
    policies = LimitPolicies(
        (
            ("daily_cap", WindDown()),
            ("overloaded", SwitchProfile("local")),
            ("upstream_unreachable", SwitchProfile("direct")),
        )
    )
    assert policies.action_for(WindowExhausted(rate_limit_type="daily_cap")) == WindDown()
    assert policies.action_for(WindowExhausted("overloaded")) == SwitchProfile("local")
    assert policies.action_for(WindowExhausted("upstream_unreachable")) == SwitchProfile("direct")
    assert policies.action_for(WindowExhausted("timeout")) == Wait()  # none named: it waits
    with pytest.raises(ValueError, match="go-on is only for overage_in_use, not 'daily_cap'"):
        LimitPolicies((("daily_cap", GoOn()),))


# Every waitable capacity: each kind of closed window or wait (paused or not), windows
# the service named that claudeloop does not know, and credits of either source.
_WAITABLE: st.SearchStrategy[WaitableState] = st.one_of(
    st.builds(
        WindowExhausted,
        rate_limit_type=st.sampled_from(WAIT_KINDS) | st.text(max_size=20).map(window_named),
        paused_at=st.none() | st.floats(min_value=0, max_value=1),
    ),
    st.builds(CreditsExhausted, source=st.sampled_from(["account", "proxy_budget"])),
)
_ACTIONS = st.sampled_from([Wait(), WindDown(), SwitchProfile("spare"), SwitchModel("sonnet")])


@settings(max_examples=examples(300))
@given(capacity=_WAITABLE, action=_ACTIONS)
def test_every_waitable_limit_is_a_kind_a_policy_can_name_and_acts_on(
    capacity: WaitableState, action: LimitAction
) -> None:
    """No limit is beyond a policy: whatever the service names, its kind is one of
    LIMIT_KINDS, the kind its capacity says (credits whoever's money it was), and a policy
    for that kind decides it, but for the user's own pause, which always waits."""
    kind = limit_kind(capacity)
    assert kind in LIMIT_KINDS
    assert kind == (
        "credits" if isinstance(capacity, CreditsExhausted) else capacity_kind(capacity)
    )
    paused = isinstance(capacity, WindowExhausted) and capacity.paused_at is not None
    expected = Wait() if paused and kind != "overage_in_use" else action
    assert LimitPolicies(((kind, action),)).action_for(capacity) == expected


@settings(max_examples=examples(300))
@given(name=st.text(max_size=30))
def test_a_limit_a_person_writes_is_one_of_the_kinds_or_refused_naming_them(name: str) -> None:
    if name.strip() in LIMIT_KINDS:
        assert limit_named(name) == name.strip()
    else:
        with pytest.raises(ValueError, match="limits: five_hour, "):
            limit_named(name)
