"""CapacityState: the closed union, what is waitable, and how each state reads."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone
from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claudeloop.domain.capacity import (
    SERVICE_WINDOWS,
    WAIT_KINDS,
    AuthenticationFailed,
    AuthFailureKind,
    Available,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    UnknownWindow,
    WindowExhausted,
    auth_failure_reason,
    describe,
    is_waitable,
    window_named,
)
from tests.examples import examples

RESET = datetime(2026, 1, 15, 17, 0, tzinfo=UTC)


def test_credits_exhausted_has_no_resets_at_field_at_all() -> None:
    names = {field.name for field in dataclasses.fields(CreditsExhausted)}
    assert "resets_at" not in names
    assert not hasattr(CreditsExhausted(), "resets_at")
    with pytest.raises(TypeError):
        CreditsExhausted(resets_at=RESET)  # type: ignore[call-arg]


def test_window_exhausted_carries_an_optional_reset() -> None:
    names = [field.name for field in dataclasses.fields(WindowExhausted)]
    assert names == ["rate_limit_type", "resets_at", "paused_at", "detail"]
    assert WindowExhausted("five_hour").paused_at is None
    assert WindowExhausted("five_hour").resets_at is None
    assert WindowExhausted("five_hour", RESET).resets_at == RESET


def test_capacity_states_are_frozen_values() -> None:
    window = WindowExhausted("five_hour", RESET)
    with pytest.raises(dataclasses.FrozenInstanceError):
        window.resets_at = None  # type: ignore[misc]
    assert window == WindowExhausted("five_hour", RESET)
    assert hash(window) == hash(WindowExhausted("five_hour", RESET))


@pytest.mark.parametrize(
    ("state", "waitable"),
    [
        (Available(), True),
        (WindowExhausted("five_hour", RESET), True),
        (WindowExhausted("unknown"), True),
        (CreditsExhausted(), True),
        (AuthenticationFailed(), False),
        (BackendMisconfigured("model missing"), False),
    ],
)
def test_is_waitable_is_false_only_for_the_two_terminal_states(
    state: CapacityState, waitable: bool
) -> None:
    assert is_waitable(state) is waitable


@pytest.mark.parametrize(
    ("state", "line"),
    [
        (Available(), "available"),
        (WindowExhausted("seven_day"), "weekly window closed, no reset announced"),
        (
            WindowExhausted("five_hour", RESET),
            "5-hour window closed until 2026-01-15 17:00:00 UTC",
        ),
        (CreditsExhausted("balance too low"), "credits exhausted"),
        (
            CreditsExhausted("Budget has been exceeded!", "proxy_budget"),
            "the proxy's budget is spent (credits out)",
        ),
        (AuthenticationFailed("401"), "authentication failed"),
        (
            AuthenticationFailed("on hold", kind="account_on_hold"),
            "authentication failed (account on hold)",
        ),
        (
            BackendMisconfigured("the model failed to load"),
            "backend misconfigured: the model failed to load",
        ),
    ],
)
def test_describe_says_what_the_capacity_is(state: CapacityState, line: str) -> None:
    assert describe(state) == line


def test_describe_shows_a_reset_in_another_offset_as_utc() -> None:
    two_hours_east = timezone(timedelta(hours=2))
    same_instant = RESET.astimezone(two_hours_east)
    assert describe(WindowExhausted("five_hour", same_instant)) == (
        "5-hour window closed until 2026-01-15 17:00:00 UTC"
    )


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("refused", "the credentials were refused"),
        ("account_on_hold", "the account is on hold"),
        ("verification_required", "the account must be verified"),
        ("org_not_allowed", "the organization does not allow its subscription login"),
        ("cloud_credentials", "the cloud provider's credentials could not be loaded"),
    ],
)
def test_each_kind_of_authentication_failure_says_its_own_reason(
    kind: AuthFailureKind, words: str
) -> None:
    reason = auth_failure_reason(kind)
    assert reason.startswith("authentication failed: ")
    assert words in reason


def test_a_usage_warning_says_the_window_how_used_and_when_it_resets() -> None:
    from claudeloop.domain.capacity import usage_warning

    resets = datetime(2026, 12, 2, 19, 19, tzinfo=timezone(timedelta(hours=2)))
    assert usage_warning("allowed_warning", "five_hour", 0.92, resets) == (
        "the 5-hour window is 92% used; it resets 2026-12-02 17:19 UTC"
    )
    assert usage_warning("allowed_warning", "seven_day", None, None) == (
        "the weekly window is nearly used"
    )
    assert usage_warning("allowed_warning", None, 0.9, None) == "a usage window is 90% used"
    assert usage_warning("allowed", "five_hour", 0.5, datetime.now(UTC)) is None
    assert usage_warning(None, None, None, None) is None


def test_every_capacity_has_one_kind_of_a_closed_set() -> None:
    from claudeloop.domain.capacity import CAPACITY_KINDS, CREDIT_KINDS, WINDOW_KINDS, capacity_kind
    from claudeloop.domain.limits import LIMIT_KINDS

    assert capacity_kind(Available()) == "available"
    assert capacity_kind(CreditsExhausted()) == "credits"
    assert capacity_kind(CreditsExhausted(source="proxy_budget")) == "proxy_budget"
    assert set(CREDIT_KINDS) == {"credits", "proxy_budget"}
    assert capacity_kind(AuthenticationFailed(kind="account_on_hold")) == "auth_failed"
    assert capacity_kind(BackendMisconfigured(reason="model missing")) == "misconfigured"
    for kind in ("daily_cap", "local", "overloaded", "timeout", "cooldown", "overage_in_use"):
        assert capacity_kind(WindowExhausted(rate_limit_type=kind)) == kind
    # A window the service names that claudeloop does not know yet (seen in 2.1.337's
    # binary) is a usage window all the same; never credits, never a stop.
    cowork = window_named("seven_day_cowork")
    assert cowork == UnknownWindow("seven_day_cowork")
    assert capacity_kind(WindowExhausted(rate_limit_type=cowork)) == "unknown"
    assert capacity_kind(WindowExhausted(rate_limit_type=window_named("credits"))) == "unknown"
    # Every window and every limit a policy can name is a kind.
    assert set(WINDOW_KINDS) <= set(CAPACITY_KINDS)
    assert set(LIMIT_KINDS) <= set(CAPACITY_KINDS)


_CAPACITIES = st.one_of(
    st.just(Available()),
    st.builds(WindowExhausted, rate_limit_type=st.text(max_size=30).map(window_named)),
    st.builds(CreditsExhausted, source=st.sampled_from(["account", "proxy_budget"])),
    st.builds(AuthenticationFailed),
    st.builds(BackendMisconfigured, reason=st.text(max_size=20)),
)


@given(_CAPACITIES)
def test_money_run_out_is_a_credit_kind_and_nothing_else_is(state: CapacityState) -> None:
    from claudeloop.domain.capacity import CAPACITY_KINDS, CREDIT_KINDS, capacity_kind

    kind = capacity_kind(state)
    assert kind in CAPACITY_KINDS
    assert (kind in CREDIT_KINDS) == isinstance(state, CreditsExhausted)
    assert (kind == "available") == isinstance(state, Available)


# Every kind a closed window or a wait is, and windows the service may name that
# claudeloop does not know yet (some of them named like a kind that is no window).
_NAMED = st.sampled_from(WAIT_KINDS) | st.sampled_from(
    ["seven_day_cowork", "some_new_window", "credits", "available"]
).map(UnknownWindow)
_SAID = st.one_of(
    st.just(Available()),
    st.builds(
        WindowExhausted,
        rate_limit_type=_NAMED,
        resets_at=st.none() | st.datetimes(timezones=st.just(UTC)),
        paused_at=st.none() | st.floats(min_value=0, max_value=1),
    ),
    st.builds(
        CreditsExhausted,
        detail=st.text(max_size=20),
        source=st.sampled_from(["account", "proxy_budget"]),
    ),
    st.builds(AuthenticationFailed, kind=st.sampled_from(get_args(AuthFailureKind))),
    st.builds(BackendMisconfigured, reason=st.text(max_size=20)),
)


@settings(max_examples=examples(300))
@given(_SAID)
def test_the_words_of_a_capacity_say_its_kind(state: CapacityState) -> None:
    from claudeloop.domain.capacity import capacity_kind, kind_in_words

    assert kind_in_words(describe(state)) == capacity_kind(state)


@pytest.mark.parametrize(
    ("words", "kind"),
    [
        # As events.jsonl said them before the kind was written beside them.
        ("available", "available"),
        ("five_hour window closed, no reset announced", "five_hour"),
        ("5-hour window closed, no reset announced", "five_hour"),
        ("seven_day window 95% used: paused until 2026-12-01 10:00:00 UTC", "seven_day"),
        (
            "weekly window of included extra usage closed, no reset announced",
            "seven_day_overage_included",
        ),
        ("local window closed, no reset announced", "local"),
        ("the upstream timed out (408), no reset announced", "timeout"),
        ("seven_day_cowork window closed, no reset announced", "unknown"),
        ("credits exhausted", "credits"),
        ("the proxy's budget is spent (credits out)", "proxy_budget"),
        ("authentication failed (account on hold)", "auth_failed"),
        ("backend misconfigured: the model failed to load", "misconfigured"),
        # Words that say no capacity.
        ("", None),
        ("something else entirely", None),
    ],
)
def test_words_of_before_are_read_as_their_kind(words: str, kind: str | None) -> None:
    from claudeloop.domain.capacity import kind_in_words

    assert kind_in_words(words) == kind


@settings(max_examples=examples(300))
@given(name=st.text(max_size=30) | st.sampled_from(SERVICE_WINDOWS))
def test_a_window_the_service_names_is_one_it_knows_or_unknown_and_keeps_its_name(
    name: str,
) -> None:
    """The service's name is read once into a closed kind: a window claudeloop knows, or
    an UnknownWindow whose kind is `unknown`; either gives the name back unchanged (what
    the files hold), and no name becomes a kind of its own."""
    from claudeloop.domain.capacity import capacity_kind, service_name

    window = window_named(name)
    assert service_name(window) == name
    assert window_named(service_name(window)) == window
    kind = capacity_kind(WindowExhausted(window))
    if name in SERVICE_WINDOWS:
        assert window == kind == name
    else:
        assert window == UnknownWindow(name)
        assert kind == "unknown"
