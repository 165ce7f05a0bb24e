"""What the screen shows: one line per thing that matters; -v shows every event."""

from __future__ import annotations

import io
from collections.abc import Mapping

from claudeloop.cli.display import ConsoleView


def shown(view_args: dict[str, bool], *events: tuple[str, Mapping[str, object]]) -> str:
    stream = io.StringIO()
    view = ConsoleView(
        stream=stream,
        quiet=view_args.get("quiet", False),
        verbose=view_args.get("verbose", False),
    )
    for event_type, fields in events:
        view.emit(event_type, **fields)
    view.close()
    return stream.getvalue()


SUMMARY = (
    "turn.finished",
    {
        "turn": 1,
        "verdict": "continue",
        "capacity": "available",
        "cost_usd": 0.01,
        "summary": "Wrote the parser.\nAnd its tests.",
    },
)
QUIET_EVENT = ("notify.failed", {"url": "json://127.0.0.1/****", "reason": "refused"})


def test_by_default_a_line_per_event_that_matters() -> None:
    text = shown({}, SUMMARY, QUIET_EVENT)
    assert "turn 1: continue, capacity available, $0.0100 — Wrote the parser." in text
    assert "notify.failed" not in text
    assert "And its tests." not in text


def test_verbose_shows_every_event_and_the_whole_summary() -> None:
    text = shown({"verbose": True}, SUMMARY, QUIET_EVENT)
    assert "notify.failed: url=json://127.0.0.1/****, reason=refused" in text
    assert "And its tests." in text


def test_quiet_shows_nothing() -> None:
    assert shown({"quiet": True, "verbose": True}, SUMMARY, QUIET_EVENT) == ""


def test_text_from_elsewhere_is_not_read_as_markup() -> None:
    finished = {
        "outcome": "backend_misconfigured",
        "exit_code": 78,
        "reason": "fix `model` in [profiles.local]",
    }
    text = shown({}, ("run.finished", finished))
    assert "[profiles.local]" in text
