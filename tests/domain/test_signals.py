"""TurnSignals: instants are normalised to aware UTC before they reach the domain."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claudeloop.domain.signals import TurnSignals, instant_from_epoch
from tests.examples import examples

RESET = datetime(2026, 1, 15, 17, 0, tzinfo=UTC)
RESET_SECONDS = int(RESET.timestamp())


def test_epoch_seconds_and_milliseconds_are_the_same_instant() -> None:
    from_seconds = instant_from_epoch(RESET_SECONDS)
    from_milliseconds = instant_from_epoch(RESET_SECONDS * 1000)
    assert from_seconds == from_milliseconds == RESET


def test_epoch_instants_are_aware_utc() -> None:
    instant = instant_from_epoch(RESET_SECONDS * 1000)
    assert instant.tzinfo is UTC
    assert instant.utcoffset() == timedelta(0)


def test_fractional_epoch_seconds_keep_their_fraction() -> None:
    assert instant_from_epoch(RESET_SECONDS + 0.5) == RESET + timedelta(milliseconds=500)


# Every instant from March 1973 to the year 5138: in milliseconds these are all at least
# 10**11, in seconds all below it, so the two readings cannot be confused.
@settings(max_examples=examples(200))
@given(seconds=st.integers(min_value=100_000_000, max_value=99_999_999_999))
def test_any_epoch_in_seconds_or_milliseconds_is_one_instant(seconds: int) -> None:
    as_seconds = instant_from_epoch(seconds)
    as_milliseconds = instant_from_epoch(seconds * 1000)
    assert as_seconds == as_milliseconds
    assert as_seconds.tzinfo is UTC


def test_naive_resets_at_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        TurnSignals(resets_at=datetime(2026, 1, 15, 17, 0))


def test_aware_resets_at_in_any_offset_is_accepted() -> None:
    east = RESET.astimezone(timezone(timedelta(hours=5)))
    assert TurnSignals(resets_at=east).resets_at == RESET


def test_signals_default_to_a_quiet_turn() -> None:
    quiet = TurnSignals()
    assert quiet.rate_limit_status is None
    assert quiet.resets_at is None
    assert quiet.api_error_status is None
    assert quiet.assistant_error is None
    assert quiet.result_text == ""
    assert quiet.local_backend is False


def test_signals_carry_every_fact_the_classifier_reads() -> None:
    names = {field.name for field in dataclasses.fields(TurnSignals)}
    assert names == {
        "overage_resets_at",
        "overage_in_use",
        "grace_active",
        "daily_cap_paused",
        "rate_limit_status",
        "rate_limit_type",
        "resets_at",
        "utilization",
        "overage_status",
        "overage_disabled_reason",
        "error_code",
        "api_error_status",
        "assistant_error",
        "result_text",
        "local_backend",
        "custom_address",
        "is_error",
        "terminal_reason",
        "windows",
    }


def test_a_window_usage_refuses_a_naive_reset() -> None:
    from claudeloop.domain.signals import WindowUsage

    with pytest.raises(ValueError, match="aware"):
        WindowUsage("five_hour", 0.5, datetime(2026, 1, 1, 12, 0))
