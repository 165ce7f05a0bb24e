"""SessionSelector: the three ways a user names where a run starts, as a closed union."""

from __future__ import annotations

import dataclasses
from typing import assert_never

import pytest

from claudeloop.domain.session import (
    ExplicitSessionSelector,
    MostRecentSessionSelector,
    PlanFileSelector,
    SessionSelector,
)


def where(selector: SessionSelector) -> str:
    match selector:
        case PlanFileSelector(path=path):
            return f"plan {path}"
        case ExplicitSessionSelector(session_id=session_id):
            return f"session {session_id}"
        case MostRecentSessionSelector(cwd=cwd):
            return f"latest in {cwd}"
        case _:
            assert_never(selector)


@pytest.mark.parametrize(
    ("selector", "words"),
    [
        (PlanFileSelector("PLAN.md"), "plan PLAN.md"),
        (ExplicitSessionSelector("3f2a-session"), "session 3f2a-session"),
        (MostRecentSessionSelector("/work/repo"), "latest in /work/repo"),
    ],
)
def test_each_selector_names_one_way_to_start(selector: SessionSelector, words: str) -> None:
    assert where(selector) == words


def test_selectors_are_frozen_values_with_one_field_each() -> None:
    for selector_type in (PlanFileSelector, ExplicitSessionSelector, MostRecentSessionSelector):
        assert len(dataclasses.fields(selector_type)) == 1
    selector = PlanFileSelector("PLAN.md")
    assert selector == PlanFileSelector("PLAN.md")
    with pytest.raises(dataclasses.FrozenInstanceError):
        selector.path = "OTHER.md"  # type: ignore[misc]
