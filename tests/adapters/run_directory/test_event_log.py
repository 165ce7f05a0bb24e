"""events.jsonl after a crash: the next event is whole even if the last line is not."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from claudeloop.adapters.redaction import Redactor
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.layout import EventLog, UnreadableEventLine
from tests.application.fakes import FakeClock


def append(directory: RunDirectory, event_type: str) -> None:
    log = EventLog(directory, FakeClock(), Redactor.from_environment({}))
    log.emit(event_type, turn=1)
    log.close()


def test_the_event_after_a_torn_last_line_is_whole(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "torn")
    append(directory, "run.started")
    with directory.events_path.open("a") as handle:
        handle.write('{"type": "turn.sta')  # killed mid-write
    append(directory, "run.resumed")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        types = [event["type"] for event in directory.read_events()]
    assert types == ["run.started", "run.resumed"]
    assert [w.category for w in caught] == [UnreadableEventLine]


def test_a_whole_log_gains_no_blank_lines(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "whole")
    append(directory, "run.started")
    append(directory, "run.resumed")
    lines = directory.events_path.read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["run.started", "run.resumed"]
