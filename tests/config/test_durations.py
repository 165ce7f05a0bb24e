"""The one duration reader the flags and the files share."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.application.durations import (
    DURATION_FORMS,
    duration_said,
    format_duration,
    instant_said,
    parse_duration,
)
from claudeloop.cli.params import parse_duration as cli_parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90),
        ("90s", 90),
        ("5m", 300),
        ("1h30m", 5400),
        ("2d", 172800),
        (" 1d2h3m4s ", 93784),
        ("1.5h", 5400),
        ("0.5m", 30),
    ],
)
def test_the_forms_people_write(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


# `5h30`: a bare number after a unit could mean minutes or seconds; it is refused.
@pytest.mark.parametrize("text", ["", "5x", "h", "-3m", "m5", "5h30", "1m30", "1.h", ".5h"])
def test_anything_else_names_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape("use 90, 90s, 5m, 1h30m, 1.5h or 2d")):
        parse_duration(text)


def test_the_command_line_reads_durations_with_the_same_parser() -> None:
    assert cli_parse_duration is parse_duration


@given(st.integers(min_value=0, max_value=400 * 86400))
def test_a_formatted_duration_reads_back(seconds: int) -> None:
    value = timedelta(seconds=seconds)
    assert parse_duration(format_duration(value)) == value


@pytest.mark.parametrize("text", ["99999999999d", "9" * 30, "999999999999h"])
def test_a_duration_too_long_to_hold_names_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"too long a duration; use {DURATION_FORMS}")):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0.0, "0s"),
        (-3.0, "0s"),
        (42.4, "42s"),
        (64.0, "1m04s"),
        (299.6, "5m00s"),
        (7210.0, "2h00m10s"),
        # The accounts page said `resets in 10071m21s`.
        (604281.0, "6d23h51m"),
    ],
)
def test_a_duration_is_said_one_way_everywhere(seconds: float, said: str) -> None:
    assert duration_said(seconds) == said


def test_an_instant_is_said_with_its_date_and_seconds_in_utc() -> None:
    at = datetime(2026, 11, 30, 10, 0, 12, 900000, tzinfo=timezone(timedelta(hours=1)))
    assert instant_said(at) == "2026-11-30 09:00:12 UTC"
