"""`export`: a run's events as rows, each read as its typed event, on runs in memory."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from claudeloop.application.errors import UsageError
from claudeloop.application.events import (
    Event,
    ReviewFinished,
    RunFinished,
    RunStarted,
    TurnFinished,
    TurnRetrying,
    VerifyFinished,
    WaitStarted,
    event_fields,
)
from claudeloop.application.export import COLUMNS, EventRow, cells, event_row, run_export
from claudeloop.domain.loop import Outcome
from tests.application.fakes import START, MemoryRuns
from tests.application.test_fleet import waiting_record

AT = START.isoformat()


def line(event: Event, run_id: str = "r2") -> dict[str, Any]:
    """The line EventLog writes of `event`: its fields, then ts, run_id and type."""
    return {**event_fields(event), "ts": AT, "run_id": run_id, "type": event.type}


def written(*lines: dict[str, Any] | str) -> bytes:
    return b"".join(
        (json.dumps(each) if isinstance(each, dict) else each).encode() + b"\n" for each in lines
    )


def never_skipped(number: int) -> None:
    raise AssertionError(f"line {number} was skipped")


def two_runs() -> MemoryRuns:
    return MemoryRuns(waiting_record("r2"), waiting_record("r1"))


def test_each_event_is_a_row_with_its_columns_and_the_rest_beside_them() -> None:
    runs = two_runs()
    refused = TurnFinished(
        turn=2,
        capacity="5-hour window closed, no reset announced",
        verdict="refused",
        summary="You've hit your 5-hour limit",
        cost_usd=0.0,
        session_id="s1",
        denied_tools=(),
        capacity_kind="five_hour",
    )
    wait = WaitStarted(
        capacity="credits exhausted", probe_at=START + timedelta(minutes=5), capacity_kind="credits"
    )
    runs.events["r2"] = written(
        line(RunStarted("r2", "/src/app", None, "default", None, "acceptEdits")),
        line(refused),
        line(wait),
        line(RunFinished(Outcome.MAX_WAIT_EXCEEDED, 4, "waited too long")),
    )
    exported = run_export(runs, None, skipped=never_skipped)
    assert (exported.run_id, exported.source) == (
        "r2",
        "/src/app/.claudeloop/runs/r2/events.jsonl",
    )
    started, turn, waited, finished = list(exported.rows)
    assert started == EventRow(
        AT,
        "run.started",
        None,
        None,
        None,
        None,
        None,
        {
            "run_id": "r2",
            "cwd": "/src/app",
            "plan": None,
            "profile": "default",
            "model": None,
            "permission_mode": "acceptEdits",
        },
    )
    assert (turn.turn, turn.capacity_kind, turn.cost_usd, turn.outcome) == (
        2,
        "five_hour",
        0.0,
        "refused",
    )
    assert turn.capacity == "5-hour window closed, no reset announced"
    # The rest is the event's other fields, in its class's order.
    assert list(turn.rest) == [
        "summary",
        "session_id",
        "denied_tools",
        "sent",
        "error",
        "usage_warning",
    ]
    assert (waited.type, waited.capacity_kind, waited.capacity) == (
        "wait.started",
        "credits",
        "credits exhausted",
    )
    assert waited.rest == {"probe_at": (START + timedelta(minutes=5)).isoformat()}
    assert (finished.outcome, finished.rest) == (
        "max_wait_exceeded",
        {"exit_code": 4, "reason": "waited too long"},
    )
    # The columns are the row's fields, in order.
    assert tuple(field.name for field in dataclasses.fields(EventRow)) == COLUMNS


def test_a_line_written_before_events_carried_the_kind_gets_the_kind_its_words_say() -> None:
    # As the claudeloop of 2026-12-02 wrote them (tests/fixtures/run_waiting).
    old_turn = {
        "turn": 2,
        "capacity": "five_hour window closed, no reset announced",
        "verdict": "refused",
        "summary": "You've hit your 5-hour limit",
        "cost_usd": 0.0,
        "session_id": "s1",
        "denied_tools": [],
        "ts": AT,
        "run_id": "r1",
        "type": "turn.finished",
    }
    old_wait = {
        "capacity": "5-hour window closed, no reset announced",
        "probe_at": AT,
        "ts": AT,
        "run_id": "r1",
        "type": "wait.started",
    }
    old_probe = {"capacity": "available", "cost_usd": 0.01, "ts": AT, "type": "probe.finished"}
    assert [event_row(each).capacity_kind for each in (old_turn, old_wait, old_probe)] == [
        "five_hour",
        "five_hour",
        "available",
    ]
    # What the line lacks reads as its default (sent, error, usage_warning).
    assert event_row(old_turn).rest["sent"] is True


def test_a_review_and_a_check_say_how_they_ended() -> None:
    review = ReviewFinished(
        turn=3,
        capacity="weekly window closed, no reset announced",
        verdict="refused",
        summary="",
        remaining_work=(),
        cost_usd=0.02,
    )
    check = VerifyFinished(
        turn=3,
        command="make test",
        passed=False,
        exit_code=2,
        seconds=1.5,
        output=None,
        timed_out=False,
        error=None,
    )
    # A review of before says its kind in words only; one of now carries it.
    said = event_row(line(review))
    assert (said.capacity_kind, said.outcome, said.cost_usd) == ("seven_day", "refused", 0.02)
    kept = replace(review, capacity="a window of a name this test made up", capacity_kind="unknown")
    assert event_row(line(kept)).capacity_kind == "unknown"
    assert event_row(line(check)).outcome == "failed: exit 2"
    # An event with no capacity, no turn, no cost: those columns are empty.
    retrying = event_row(line(TurnRetrying(1, 10, 529, "overloaded", 500.0)))
    assert (retrying.turn, retrying.capacity_kind, retrying.cost_usd, retrying.outcome) == (
        None,
        None,
        None,
        None,
    )


def test_a_line_no_event_reads_keeps_its_fields_and_one_that_is_no_object_is_skipped() -> None:
    runs = two_runs()
    runs.events["r1"] = written(
        {"ts": AT, "run_id": "r1", "type": "thing.newer", "turn": 4, "what": "x"},
        {"ts": AT, "run_id": "r1", "type": "turn.started", "turn": "two"},
        "",
        "[1, 2]",
        '{"ts": "2026-11-30T09:00:00+00:00", "type": "turn.sta',
    )
    skipped: list[int] = []
    newer, wrong = list(run_export(runs, "r1", skipped=skipped.append).rows)
    assert skipped == [4, 5]
    assert (newer.type, newer.turn, newer.rest) == ("thing.newer", None, {"turn": 4, "what": "x"})
    assert (wrong.type, wrong.rest) == ("turn.started", {"turn": "two"})


def test_a_run_without_events_yet_has_no_rows() -> None:
    assert list(run_export(two_runs(), "r1", skipped=never_skipped).rows) == []


def test_a_run_that_is_not_there_is_the_usage_error_the_other_commands_give() -> None:
    with pytest.raises(UsageError, match="--run-id gone: no such run"):
        run_export(two_runs(), "gone", skipped=never_skipped)
    with pytest.raises(UsageError, match="no claudeloop run"):
        run_export(MemoryRuns(), None, skipped=never_skipped)


def test_without_a_run_id_it_is_the_run_a_live_driver_drives_as_for_logs() -> None:
    runs = two_runs()
    runs.drivers["r1"] = 4242
    assert run_export(runs, None, skipped=never_skipped).run_id == "r1"


def test_a_row_is_text_cells_empty_where_the_event_has_no_such_thing() -> None:
    row = EventRow(
        AT,
        "turn.finished",
        2,
        "five_hour",
        "closed",
        1e-05,
        "refused",
        {"summary": "déjà", "ok": True},
    )
    assert cells(row) == [
        AT,
        "turn.finished",
        "2",
        "five_hour",
        "closed",
        "1e-05",
        "refused",
        '{"summary":"déjà","ok":true}',
    ]
    assert cells(EventRow(AT, "turn.retrying", None, None, None, None, None, {})) == [
        AT,
        "turn.retrying",
        "",
        "",
        "",
        "",
        "",
        "{}",
    ]
