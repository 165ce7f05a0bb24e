"""status, runs, stop and wind-down of a project's own runs, on runs in memory."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from claudeloop.application.errors import UsageError
from claudeloop.application.inspection import control, run_rows, run_status, takes_effect
from claudeloop.domain.loop import ControlCommand, Outcome, Phase
from tests.application.fakes import START, MemoryRuns
from tests.application.test_fleet import waiting_record


def _masked(view: dict[str, Any]) -> dict[str, Any]:
    return {**view, "summary": "***"}


def two_runs() -> MemoryRuns:
    ended = waiting_record("r1")
    ended = replace(ended, state=replace(ended.state, phase=Phase.COMPLETE, outcome=Outcome.DONE))
    return MemoryRuns(waiting_record("r2"), ended)


def test_status_is_of_the_live_run_masked_and_says_its_driver() -> None:
    runs = two_runs()
    runs.drivers["r2"] = 4242
    view = run_status(runs, None, now=START, mask=_masked)
    assert (view["run_id"], view["phase"], view["driver_pid"]) == ("r2", "waiting", 4242)
    assert view["summary"] == "***"
    assert runs.summaries == []  # not ended: no summary to finish


def test_status_of_a_run_that_ended_without_its_summary_writes_it() -> None:
    runs = two_runs()
    view = run_status(runs, "r1", now=START, mask=_masked)
    assert (view["outcome"], view["driver_alive"]) == ("done", False)
    assert runs.summaries == ["r1"]


def test_the_rows_are_newest_first_and_an_unreadable_record_is_a_row_saying_so() -> None:
    runs = two_runs()
    runs.unreadable.add("r2")
    runs.drivers["r1"] = 7
    assert run_rows(runs) == [
        {"run_id": "r2", "phase": "unreadable"},
        {
            "run_id": "r1",
            "started_at": START.isoformat(),
            "phase": "complete",
            "outcome": "done",
            "turns": 2,
            "dollars": 0.42,
            "session_id": None,
            "driver_alive": True,
        },
    ]
    assert run_rows(MemoryRuns()) == []


def test_only_a_run_with_a_live_driver_is_asked_and_the_words_say_when() -> None:
    runs = two_runs()
    with pytest.raises(UsageError, match=r"run r2 has no live driver; nothing to stop"):
        control(runs, None, ControlCommand.STOP)
    runs.drivers["r2"] = 99
    asked = control(runs, None, ControlCommand.WIND_DOWN)
    assert (asked.run_id, asked.pid) == ("r2", 99)
    assert runs.sent == [("r2", ControlCommand.WIND_DOWN)]
    assert takes_effect(ControlCommand.WIND_DOWN) == (
        "after the current turn, with a handoff summary"
    )
    assert takes_effect(ControlCommand.STOP).startswith("at once if waiting")


def test_a_control_file_that_cannot_be_written_names_it_and_the_way_out() -> None:
    runs = two_runs()
    runs.drivers["r2"] = 99
    runs.refuse_writes = True
    with pytest.raises(UsageError) as refused:
        control(runs, "r2", ControlCommand.STOP)
    assert str(refused.value) == (
        "/src/app/.claudeloop/runs/r2/control: cannot be written (Permission denied); "
        "end the run with kill -TERM 99"
    )
