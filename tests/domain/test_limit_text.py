"""limit_text: the CLI's own words for a usage limit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.limit_text import CREDIT_PREFIXES, WINDOW_PREFIXES, usage_limit_text


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("You've hit your session limit \u00b7 resets 3am", "window"),
        ("You've hit your 5-hour limit \u00b7 resets 11:42am (UTC)", "window"),
        ("  You've reached your weekly limit", "window"),
        ("You're out of usage credits", "credits"),
        ("Your group's usage limit is set to $0", "credits"),
        ("Sonnet 5 requires usage credits. Run /usage-credits", "credits"),
        ("Opus requires usage credits.", "credits"),
        ("Your seat type doesn't include extra usage", "credits"),
        ("API Error: 500 Internal server error", None),
        ("I think You've hit your limit", None),
        ("", None),
    ],
)
def test_the_clis_prefixes(text: str, kind: str | None) -> None:
    assert usage_limit_text(text) == kind


@given(prefix=st.sampled_from(CREDIT_PREFIXES), rest=st.text(max_size=30))
def test_every_credit_prefix_is_credits_whatever_follows(prefix: str, rest: str) -> None:
    assert usage_limit_text(prefix + rest) == "credits"


@given(prefix=st.sampled_from(WINDOW_PREFIXES), rest=st.text(max_size=30))
def test_every_window_prefix_is_a_window_whatever_follows(prefix: str, rest: str) -> None:
    assert usage_limit_text(prefix + rest) == "window"
