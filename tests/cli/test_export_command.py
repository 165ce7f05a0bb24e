"""`claudeloop export`: a run's events as the CSV a user gets, from a run directory
written by the real event log, and from the files an earlier claudeloop wrote."""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from claudeloop.adapters.redaction import Redactor
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.layout import EventLog
from claudeloop.application.events import (
    Event,
    ProbeFinished,
    RunFinished,
    RunStarted,
    TurnFinished,
    TurnStarted,
    WaitStarted,
)
from claudeloop.domain.loop import Outcome
from tests.application.fakes import START, FakeClock
from tests.cli.conftest import Invocation
from tests.cli.test_run_directory_commands import waiting_run

Invoke = Callable[..., Invocation]
RUN_ID = "20261130-090000-aaaaaa"
SECRET = "sk-ant-api03-export-test-secret"
FIXTURES = Path(__file__).parents[1] / "fixtures"
HEADER = "ts,type,turn,capacity_kind,capacity,cost_usd,outcome,rest"


def run_with_events(cwd: Path, *events: Event) -> RunDirectory:
    """A run of `cwd` whose events.jsonl the run's own event log wrote, masked, a
    second apart from START."""
    directory = waiting_run(cwd, RUN_ID)
    directory.events_path.unlink()
    clock = FakeClock()
    log = EventLog(directory, clock, Redactor.from_environment({}, extra=[SECRET]))
    for event in events:
        log.emit(event)
        clock.advance(1)
    log.close()
    return directory


def a_night(cwd: Path) -> RunDirectory:
    return run_with_events(
        cwd,
        RunStarted(RUN_ID, str(cwd), None, "default", None, "acceptEdits"),
        TurnStarted(turn=1, session_id=None),
        TurnFinished(
            turn=1,
            capacity="5-hour window closed, no reset announced",
            verdict="refused",
            summary=f"limit hit; the key {SECRET} was in the output",
            cost_usd=0.0,
            session_id="s1",
            denied_tools=(),
            capacity_kind="five_hour",
        ),
        WaitStarted(
            capacity="5-hour window closed, no reset announced",
            probe_at=START + timedelta(minutes=5),
            capacity_kind="five_hour",
        ),
        ProbeFinished(capacity="available", cost_usd=0.0012, capacity_kind="available"),
        RunFinished(Outcome.DONE, 0, "the plan is done"),
    )


def at(seconds: int) -> str:
    return (START + timedelta(seconds=seconds)).isoformat()


def test_export_writes_a_header_and_a_row_per_event_with_the_kind_of_a_wait(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    a_night(tmp_path)
    result = claudeloop("export", "--cwd", tmp_path)
    assert (result.exit_code, result.err) == (0, "")
    lines = result.out.splitlines()
    assert lines[0] == HEADER
    assert len(lines) == 1 + 6  # one row per event
    assert lines[2] == f'{at(1)},turn.started,1,,,,,"{{""session_id"":null}}"'
    assert lines[4] == (
        f"{at(3)},wait.started,,five_hour,"
        f'"5-hour window closed, no reset announced",,,'
        f'"{{""probe_at"":""{(START + timedelta(minutes=5)).isoformat()}""}}"'
    )
    rows = list(csv.DictReader(io.StringIO(result.out)))
    assert [row["type"] for row in rows] == [
        "run.started",
        "turn.started",
        "turn.finished",
        "wait.started",
        "probe.finished",
        "run.finished",
    ]
    assert [row["capacity_kind"] for row in rows] == [
        "",
        "",
        "five_hour",
        "five_hour",
        "available",
        "",
    ]
    assert [row["outcome"] for row in rows] == ["", "", "refused", "", "", "done"]
    assert [row["cost_usd"] for row in rows] == ["", "", "0.0", "", "0.0012", ""]
    assert rows[2]["turn"] == "1"
    assert rows[5]["rest"] == '{"exit_code":0,"reason":"the plan is done"}'
    # events.jsonl was masked as it was written; the export is what is on disk.
    assert SECRET not in result.out
    assert "limit hit; the key " in rows[2]["rest"]


def test_export_to_a_file_writes_the_same_csv_and_says_where(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    a_night(tmp_path)
    on_stdout = claudeloop("export", RUN_ID, "--cwd", tmp_path).out
    target = tmp_path / "night.csv"
    result = claudeloop("export", RUN_ID, "--cwd", tmp_path, "--output", target)
    assert result.exit_code == 0, result.err
    assert target.read_text(encoding="utf-8") == on_stdout
    assert result.out == f"claudeloop: 6 events of run {RUN_ID} in {target}\n"


@pytest.mark.parametrize(
    ("fixture", "run_id", "words"),
    [
        # Written by commit c4b6279: the window said by the service's name.
        ("run_before_typed_events", "20261201-123006-bf3fcf", "five_hour window closed"),
        # Written on 2026-12-02, before events carried capacity_kind.
        ("run_waiting", "20261202-142538-b3ebcd", "5-hour window closed"),
    ],
)
def test_lines_written_before_events_carried_the_kind_export_with_the_kind_their_words_say(
    claudeloop: Invoke, tmp_path: Path, fixture: str, run_id: str, words: str
) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / fixture / "project", project)
    events = project / ".claudeloop" / "runs" / run_id / "events.jsonl"
    assert "capacity_kind" not in events.read_text()
    result = claudeloop("export", run_id, "--cwd", project)
    assert (result.exit_code, result.err) == (0, "")
    rows = list(csv.DictReader(io.StringIO(result.out)))
    assert len(rows) == len(events.read_text().splitlines())
    said = [(row["type"], row["capacity_kind"]) for row in rows if row["capacity"]]
    assert said == [
        ("turn.finished", "available"),
        ("turn.finished", "five_hour"),
        ("wait.started", "five_hour"),
    ]
    assert rows[-1]["capacity"].startswith(words)


def test_a_run_that_is_not_there_is_one_line_and_exit_2(claudeloop: Invoke, tmp_path: Path) -> None:
    a_night(tmp_path)
    target = tmp_path / "out.csv"
    result = claudeloop("export", "nope", "--cwd", tmp_path, "--output", target)
    assert result.exit_code == 2
    assert result.out == ""
    (line,) = result.err.splitlines()
    assert line == (
        f"claudeloop: error: RUN nope: no such run in {tmp_path}, nor in this machine's "
        "index of runs (`claudeloop runs --all` lists every run it knows)"
    )
    assert not target.exists()
    # Nor is the run's own events.jsonl written over.
    events = tmp_path / ".claudeloop" / "runs" / RUN_ID / "events.jsonl"
    before = events.read_bytes()
    over = claudeloop("export", "--cwd", tmp_path, "--output", events)
    assert over.exit_code == 2
    assert (
        over.err
        == f"claudeloop: error: --output {events} is the run's own events; name another file\n"
    )
    assert events.read_bytes() == before
    # No run at all, and a name that would leave the runs directory: the same.
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = claudeloop("export", "--cwd", empty)
    assert nothing.exit_code == 2
    assert nothing.err.startswith("claudeloop: error: no claudeloop run in ")
    assert len(nothing.err.splitlines()) == 1
    outside = claudeloop("export", "../x", "--cwd", tmp_path)
    assert outside.exit_code == 2
    assert outside.err.startswith("claudeloop: error: --run-id '../x' ")


def test_a_file_that_cannot_be_written_is_one_line_and_exit_2(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    a_night(tmp_path)
    target = tmp_path / "no-such-dir" / "out.csv"
    result = claudeloop("export", "--cwd", tmp_path, "-o", target)
    assert result.exit_code == 2
    assert result.err == (
        f"claudeloop: error: --output {target}: cannot be written (No such file or directory)\n"
    )


def test_a_torn_line_is_left_out_with_a_warning_naming_it(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    directory = a_night(tmp_path)
    with directory.events_path.open("a") as handle:
        handle.write('{"type": "turn.sta\n')  # killed mid-write, then a newline
    result = claudeloop("export", "--cwd", tmp_path)
    assert result.exit_code == 0
    assert len(result.out.splitlines()) == 1 + 6
    assert result.err == (
        f"claudeloop: warning: {directory.events_path}: line 7 is no event; left out\n"
    )


def test_the_help_names_every_column_in_order() -> None:
    from claudeloop.application.export import COLUMNS
    from claudeloop.cli.export import EPILOG

    said = " ".join(EPILOG.split())
    places = [said.find(f" {column}") for column in COLUMNS]
    assert -1 not in places
    assert places == sorted(places)
