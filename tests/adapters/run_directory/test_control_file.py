"""The control file: the one word of before still read and still written for a stop
alone; requests numbered after what the file and the record know, let go of once
applied; a file a person broke asks nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from claudeloop.adapters.run_directory.control import ControlFile, read_control
from claudeloop.adapters.run_directory.layout import RunDirectory
from claudeloop.application.ports import Request
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.loop import ControlCommand, RunState
from claudeloop.domain.steering import AddNote, Cap, ProbeNow, RaiseCap


def test_the_one_word_of_before_is_read(tmp_path: Path) -> None:
    path = tmp_path / "control"
    path.write_text("wind-down\n")
    assert read_control(path) == ControlFile(command=ControlCommand.WIND_DOWN)


def test_a_stop_alone_is_still_its_one_word(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "r1")
    directory.send(ControlCommand.STOP)
    assert directory.control_path.read_text() == "stop"
    assert directory.pending() is ControlCommand.STOP


def test_requests_are_numbered_in_order_and_kept_beside_a_stop(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "r1")
    directory.send(AddNote("look at the logs"))
    directory.send(RaiseCap(Cap.TURNS, 30))
    directory.send(ControlCommand.WIND_DOWN)
    directory.send(ProbeNow())
    assert directory.requests() == (
        Request(1, AddNote("look at the logs")),
        Request(2, RaiseCap(Cap.TURNS, 30)),
        Request(3, ProbeNow()),
    )
    assert directory.pending() is ControlCommand.WIND_DOWN
    data = json.loads(directory.control_path.read_text())
    assert data["format"] == 2
    assert data["requests"][0] == {"seq": 1, "asked": {"kind": "note", "text": "look at the logs"}}
    assert data["requests"][1]["asked"] == {"kind": "raise", "cap": "max-turns", "to": 30}


def test_requests_applied_are_let_go_of_and_numbers_go_on(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "r1")
    directory.send(ProbeNow())
    directory.send(AddNote("two"))
    directory.consumed(1)
    assert directory.requests() == (Request(2, AddNote("two")),)
    directory.consumed(2)
    assert not directory.control_path.exists()  # nothing left to ask
    directory.send(AddNote("three"))
    # The file forgot 1 and 2; a number is never given twice while the driver lives.
    assert directory.requests() == (Request(1, AddNote("three")),)


def test_a_file_broken_by_hand_asks_nothing(tmp_path: Path) -> None:
    path = tmp_path / "control"
    for text in ("{not json", '{"requests": [{"seq": "x"}]}', "halt", ""):
        path.write_text(text)
        assert read_control(path) == ControlFile()
    path.write_bytes(b"\xff\xfe")
    assert read_control(path) == ControlFile()
    assert read_control(tmp_path / "absent") == ControlFile()


def test_a_request_is_numbered_after_the_last_one_the_record_says_was_applied(
    tmp_path: Path,
) -> None:
    # A resumed run cleared its control file; its record remembers request 5.
    directory = RunDirectory.create(tmp_path, "r1")
    started = datetime(2026, 12, 2, tzinfo=UTC)
    spec = RunSpec(cwd=tmp_path, task="t")
    directory.save(RunRecord("r1", spec, RunState(), started, steered=5))
    directory.send(AddNote("after the resume"))
    assert directory.requests() == (Request(6, AddNote("after the resume")),)
    assert directory.load().steered == 5
