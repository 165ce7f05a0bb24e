from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.text import count, first_line, utc_instant


def test_the_first_line_that_holds_something_is_shown_stripped() -> None:
    assert first_line("\n  \n  rate limited  \nretry later", longest=200) == "rate limited"


def test_a_long_line_is_cut_to_the_bound() -> None:
    # Marked as cut, for a person and for the mask of secrets.
    assert first_line("x" * 500, longest=300) == "x" * 299 + "\u2026"
    assert first_line("x" * 300, longest=300) == "x" * 300


def test_a_blank_text_says_what_the_caller_says_for_nothing() -> None:
    assert first_line(" \n\t\n", longest=200) == ""
    assert first_line("", longest=200, empty="no detail") == "no detail"


@given(st.text(), st.integers(min_value=1, max_value=400))
def test_the_line_is_one_line_within_the_bound(text: str, longest: int) -> None:
    line = first_line(text, longest=longest)
    assert len(line) <= longest
    assert len(line.splitlines()) <= 1


@pytest.mark.parametrize(("amount", "said"), [(0, "0 probes"), (1, "1 probe"), (2, "2 probes")])
def test_a_count_says_its_noun_as_a_person_would(amount: int, said: str) -> None:
    assert count(amount, "probe") == said


def test_an_instant_is_said_in_utc_to_the_second_or_to_the_minute() -> None:
    at = datetime(2026, 11, 30, 10, 0, 12, tzinfo=timezone(timedelta(hours=1)))
    assert utc_instant(at) == "2026-11-30 09:00:12 UTC"
    assert utc_instant(at, seconds=False) == "2026-11-30 09:00 UTC"
    assert utc_instant(at.astimezone(UTC)) == "2026-11-30 09:00:12 UTC"
