"""The verdict every turn is asked for, and how its JSON becomes a `StructuredVerdict`."""

from __future__ import annotations

from typing import Any

from claudeloop.domain.completion import StructuredVerdict

# The descriptions are the model's only instructions for the fields, so they carry the
# rules the domain depends on: `blocked_on` ends the run, so it must mean a real blocker.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "complete": {
            "type": "boolean",
            "description": (
                "True only when the whole task is finished: every plan item done and "
                "checked. False while anything is left, even if this turn went well."
            ),
        },
        "remaining_work": {
            "type": "array",
            "items": {"type": "string"},
            "description": (
                "The plan items or pieces of work still open after this turn, one short "
                "line each, in the plan's own words where there is a plan. Empty only "
                "when complete is true."
            ),
        },
        "blocked_on": {
            "type": ["string", "null"],
            "description": (
                "Only a true external blocker that no further work of yours can get "
                "past and that needs a human or an outside party: a missing credential, "
                "a decision only the owner can make, a service that is down. Null "
                "otherwise. Work you can still do, or are waiting on yourself, belongs "
                "in remaining_work."
            ),
        },
        "summary": {
            "type": "string",
            "description": ("What this turn did and any assumptions you made, in a few sentences."),
        },
    },
    "required": ["complete", "remaining_work", "blocked_on", "summary"],
    "additionalProperties": False,
}


def verdict_from(structured_output: object) -> StructuredVerdict | None:
    """The verdict in the result's `structured_output`, or None when it is not one.

    The CLI validates the tool input against the schema, but a wrong shape here must
    fall back to the marker path rather than crash the run, so every field is checked.
    """
    if not isinstance(structured_output, dict):
        return None
    complete = structured_output.get("complete")
    if not isinstance(complete, bool):
        return None
    remaining = structured_output.get("remaining_work", [])
    if not isinstance(remaining, list):
        return None
    blocked_on = structured_output.get("blocked_on")
    if blocked_on is not None and not isinstance(blocked_on, str):
        return None
    # An empty or blank blocker is no blocker: the domain would otherwise stop the run.
    blocker = (blocked_on or "").strip() or None
    summary = structured_output.get("summary", "")
    return StructuredVerdict(
        complete=complete,
        remaining_work=tuple(
            item.strip() for item in remaining if isinstance(item, str) and item.strip()
        ),
        blocked_on=blocker,
        summary=summary.strip() if isinstance(summary, str) else "",
    )
