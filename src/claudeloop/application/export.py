"""What `claudeloop export` does between parsing and rendering: a run's events as the
rows of a table, on the `ProjectRuns` port.

Each line of events.jsonl is read as its typed event (`event_from`, the one codec), and
what a table is sorted, filtered and summed by gets a column of its own: the instant,
the type, the turn, the capacity's kind and words, the cost, and how the thing ended (a
turn's or a review's verdict, a check's ending, the run's outcome); the rest of the
event stays beside them. A line written before events carried `capacity_kind` is given
the kind its words say (`capacity_kind_of`), as the screen reads such a line.

events.jsonl is masked as it is written: what is exported is what is on disk, and
nothing else is read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from claudeloop.application.events import (
    Event,
    ProbeFinished,
    ReviewFinished,
    RunFinished,
    TurnFinished,
    VerifyFinished,
    WaitStarted,
    capacity_kind_of,
    event_fields,
    event_from,
)
from claudeloop.application.ports import ProjectRuns
from claudeloop.domain.capacity import CapacityKind
from claudeloop.domain.verification import how_it_ended

# The table's columns, in order; `rest` is every other field of the event.
COLUMNS = ("ts", "type", "turn", "capacity_kind", "capacity", "cost_usd", "outcome", "rest")
# What every line of events.jsonl carries beside its event's fields.
_ENVELOPE = ("ts", "run_id", "type")
# The fields of an event that have a column of their own.
_COLUMNED = ("turn", "capacity", "capacity_kind", "cost_usd", "verdict", "outcome")


@dataclass(frozen=True, slots=True)
class EventRow:
    """One event as a row: None where the event has no such thing."""

    ts: str
    type: str
    turn: int | None
    capacity_kind: CapacityKind | None
    capacity: str | None
    cost_usd: float | None
    outcome: str | None
    rest: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ExportedRun:
    """The run whose events these are, where they were read, and each as a row."""

    run_id: str
    source: str
    rows: Iterator[EventRow]


def run_export(
    runs: ProjectRuns, run_id: str | None, *, skipped: Callable[[int], None]
) -> ExportedRun:
    """`export`: the events of `run_id` (none: the run a live driver drives, else the
    newest), one row each, in the order written. A line that is no JSON object (half a
    line a kill left, a hand edit) is no row: `skipped` is told its number."""
    chosen = runs.watched(run_id)
    lines, _ = runs.event_lines(chosen, 0)  # here, so an unreadable file fails at once

    def rows() -> Iterator[EventRow]:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:  # not JSON, or not UTF-8
                skipped(number)
                continue
            if not isinstance(line, dict):
                skipped(number)
                continue
            yield event_row(line)

    return ExportedRun(chosen, str(runs.events_file(chosen)), rows())


def event_row(line: Mapping[str, Any]) -> EventRow:
    """The row of one line of events.jsonl. A line no event class reads (a type of a
    newer claudeloop, a field of the wrong type) keeps every field in `rest`."""
    ts = _text(line.get("ts"))
    event = event_from(line)
    if event is None:
        rest = {key: value for key, value in line.items() if key not in _ENVELOPE}
        return EventRow(ts, _text(line.get("type")), None, None, None, None, None, rest)
    fields = event_fields(event)
    return EventRow(
        ts=ts,
        type=event.type,
        turn=_whole(fields.get("turn")),
        capacity_kind=_kind(event),
        capacity=_words(fields.get("capacity")),
        cost_usd=_dollars(fields.get("cost_usd")),
        outcome=_ending(event),
        rest={key: value for key, value in fields.items() if key not in _COLUMNED},
    )


def _kind(event: Event) -> CapacityKind | None:
    """The capacity's kind: the event's own, else (a line of before) what its words say."""
    match event:
        case TurnFinished() | WaitStarted() | ProbeFinished() | ReviewFinished():
            return capacity_kind_of(event)
        case _:
            return None


def _ending(event: Event) -> str | None:
    """How what the event reports ended, where it says so."""
    match event:
        case TurnFinished(verdict=verdict) | ReviewFinished(verdict=verdict):
            return verdict
        case VerifyFinished(exit_code=code, timed_out=timed_out, error=error):
            return how_it_ended(exit_code=code, timed_out=timed_out, start_error=error)
        case RunFinished(outcome=outcome):
            return outcome.value
        case _:
            return None


def cells(row: EventRow) -> list[str]:
    """The row as the text of its cells, in the order of `COLUMNS`: empty where the event
    has no such thing, a cost as Python writes the float, the rest as compact JSON."""
    return [
        row.ts,
        row.type,
        _text(row.turn),
        _text(row.capacity_kind),
        _text(row.capacity),
        "" if row.cost_usd is None else repr(row.cost_usd),
        _text(row.outcome),
        json.dumps(row.rest, ensure_ascii=False, separators=(",", ":")),
    ]


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _words(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _dollars(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: object) -> str:
    return "" if value is None else str(value)
