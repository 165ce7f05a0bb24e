"""events.jsonl after a crash: the next event is whole even if the last line is not."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from claudeloop.adapters.redaction import Redactor
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.layout import EventLog, UnreadableEventLine
from claudeloop.application.events import Event, RunResumed, TurnStarted
from tests.application.fakes import FakeClock


def append(directory: RunDirectory, event: Event) -> None:
    log = EventLog(directory, FakeClock(), Redactor.from_environment({}))
    log.emit(event)
    log.close()


def test_the_event_after_a_torn_last_line_is_whole(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "torn")
    append(directory, TurnStarted(turn=1, session_id=None))
    with directory.events_path.open("a") as handle:
        handle.write('{"type": "turn.sta')  # killed mid-write
    append(directory, RunResumed(phase="waiting"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        types = [event["type"] for event in directory.read_events()]
    assert types == ["turn.started", "run.resumed"]
    assert [w.category for w in caught] == [UnreadableEventLine]


def test_a_whole_log_gains_no_blank_lines(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "whole")
    append(directory, TurnStarted(turn=1, session_id=None))
    append(directory, RunResumed(phase="waiting"))
    lines = directory.events_path.read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["turn.started", "run.resumed"]
