"""The machine's index of runs on disk, the tail of a run's events, and the boards."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from claudeloop.adapters.run_directory.project_runs import ProjectRunDirectories
from claudeloop.adapters.run_index import RunIndexDirectory, state_directory
from claudeloop.adapters.shared_capacity.board import FileCapacityBoard, MachineBoards
from claudeloop.application.errors import UsageError
from claudeloop.application.ports import IndexedRun
from claudeloop.domain.signals import TurnSignals

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def entry(tmp_path: Path, run_id: str, minutes: int) -> IndexedRun:
    return IndexedRun(
        run_id=run_id,
        directory=tmp_path / "app" / ".claudeloop" / "runs" / run_id,
        cwd=tmp_path / "app",
        account=None,
        host="box",
        registered_at=START + timedelta(minutes=minutes),
    )


def test_entries_are_one_file_each_newest_first_and_a_damaged_one_is_left_out(
    tmp_path: Path,
) -> None:
    index = RunIndexDirectory(tmp_path / "state" / "runs")
    assert index.runs() == []
    first, second = entry(tmp_path, "r1", 0), entry(tmp_path, "r2", 1)
    index.register(first)
    index.register(second)
    index.register(first)  # a resume registers again: still one entry
    (tmp_path / "state" / "runs" / "half.json").write_text('{"run_id": ')
    (tmp_path / "state" / "runs" / "other.json").write_text(json.dumps({"run_id": "x"}))
    assert index.runs() == [second, first]
    assert not index.present(first)
    first.directory.mkdir(parents=True)
    assert index.present(first)


def test_the_state_directory_is_the_variables_else_the_platforms(tmp_path: Path) -> None:
    assert state_directory({"CLAUDELOOP_STATE_DIR": str(tmp_path)}) == tmp_path
    assert state_directory({}).name == "claudeloop"


def test_the_tail_of_events_reads_from_the_end_and_leaves_a_line_being_written(
    tmp_path: Path,
) -> None:
    runs = ProjectRunDirectories(tmp_path)
    directory = tmp_path / ".claudeloop" / "runs" / "r1"
    directory.mkdir(parents=True)
    assert runs.event_tail("r1", 3) == ([], 0)
    lines = [json.dumps({"n": n, "pad": "x" * 200}).encode() + b"\n" for n in range(2000)]
    whole = b"".join(lines)
    (directory / "events.jsonl").write_bytes(whole + b'{"half')
    tail, offset = runs.event_tail("r1", 3)
    assert tail == lines[-3:]
    assert offset == len(whole)
    assert runs.event_tail("r1", 0) == ([], len(whole))
    assert runs.event_tail("r1", 5000)[0] == lines


def test_the_boards_are_every_account_of_the_directory(tmp_path: Path) -> None:
    assert MachineBoards(tmp_path / "none").sightings() == []
    board = FileCapacityBoard(tmp_path, "acct")
    board.publish(signals=TurnSignals(), standing="open", source="turn", writer="w", now=START)
    (tmp_path / "broken.json").write_text("{")
    found = MachineBoards(tmp_path).sightings()
    assert [(one.account, one.sighting is not None) for one in found] == [
        ("acct", True),
        ("broken", False),
    ]


def test_a_record_is_decoded_again_only_once_saved_since(tmp_path: Path) -> None:
    from dataclasses import replace

    from tests.cli.test_run_directory_commands import waiting_run

    directory = waiting_run(tmp_path, "r1")
    runs = ProjectRunDirectories(tmp_path)
    first = runs.record("r1")
    assert runs.record("r1") is first  # unchanged on disk: the one decoded
    directory.save(replace(first, session_id="sess-2"))
    assert runs.record("r1").session_id == "sess-2"
    directory.state_path.write_text("{")
    with pytest.raises(UsageError, match="unreadable"):
        runs.record("r1")
    directory.state_path.unlink()
    with pytest.raises(UsageError, match="missing"):
        runs.record("r1")


def test_a_run_forgotten_is_listed_no_more_and_forgetting_twice_is_nothing(
    tmp_path: Path,
) -> None:
    index = RunIndexDirectory(tmp_path / "state" / "runs")
    kept, removed = entry(tmp_path, "r1", 0), entry(tmp_path, "r2", 1)
    index.register(kept)
    index.register(removed)
    index.forget(removed.run_id, removed.directory)
    index.forget(removed.run_id, removed.directory)
    assert index.runs() == [kept]
