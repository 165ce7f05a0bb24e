"""The verdict's JSON becomes a StructuredVerdict, or None so the marker path decides."""

from __future__ import annotations

from typing import Any

import pytest

from claudeloop.adapters.claude_code.verdict import VERDICT_SCHEMA, verdict_from
from claudeloop.domain.completion import StructuredVerdict


def test_a_complete_verdict_reads_field_by_field() -> None:
    verdict = verdict_from(
        {
            "complete": True,
            "remaining_work": [],
            "blocked_on": None,
            "summary": " Wrote step3.txt. ",
        }
    )
    assert verdict == StructuredVerdict(complete=True, summary="Wrote step3.txt.")


def test_blank_entries_and_a_blank_blocker_count_for_nothing() -> None:
    verdict = verdict_from(
        {"complete": False, "remaining_work": ["step 2", " ", 3], "blocked_on": "  "}
    )
    assert verdict == StructuredVerdict(complete=False, remaining_work=("step 2",))


def test_a_blocker_is_kept() -> None:
    verdict = verdict_from({"complete": False, "blocked_on": "the API key is missing"})
    assert verdict is not None
    assert verdict.blocked_on == "the API key is missing"


@pytest.mark.parametrize(
    "output",
    [
        None,
        "complete",
        {"remaining_work": []},
        {"complete": "yes"},
        {"complete": False, "remaining_work": "step 2"},
        {"complete": False, "blocked_on": 7},
    ],
)
def test_anything_else_is_no_verdict(output: Any) -> None:
    assert verdict_from(output) is None


def test_a_summary_of_the_wrong_type_is_dropped() -> None:
    verdict = verdict_from({"complete": False, "summary": ["a"]})
    assert verdict == StructuredVerdict(complete=False)


def test_the_schema_asks_for_every_field_and_keeps_blockers_for_humans() -> None:
    assert set(VERDICT_SCHEMA["required"]) == {
        "complete",
        "remaining_work",
        "blocked_on",
        "summary",
    }
    blocked_on = VERDICT_SCHEMA["properties"]["blocked_on"]
    assert blocked_on["type"] == ["string", "null"]
    assert "human" in blocked_on["description"]
    assert "remaining_work" in blocked_on["description"]
