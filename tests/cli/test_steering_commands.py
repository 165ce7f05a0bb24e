"""probe-now, raise and note on a run directory: a request into its control file for a
live driver, one line and exit 2 for a mistake, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.lock import acquire
from claudeloop.application.ports import Request
from claudeloop.domain.loop import Outcome, Phase
from claudeloop.domain.steering import AddNote, Cap, ProbeNow, RaiseCap
from tests.cli.conftest import Invocation
from tests.cli.test_run_directory_commands import waiting_run

Invoke = Callable[..., Invocation]
RUN = "20261130-090000-aaaaaa"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[RunDirectory]:
    directory = waiting_run(tmp_path)
    # This test process stands in for the driver: it holds the run's lock.
    lock = acquire(directory.lock_path)
    try:
        yield directory
    finally:
        lock.release()


def test_probe_now_of_a_waiting_run(claudeloop: Invoke, live: RunDirectory, tmp_path: Path) -> None:
    result = claudeloop("probe-now", "--cwd", tmp_path)
    assert result.exit_code == 0, result.err
    assert result.out.strip().endswith("the wait ends and the run probes within a second")
    assert live.requests() == (Request(1, ProbeNow()),)


def test_raise_sends_each_cap_and_says_it_as_json(
    claudeloop: Invoke, live: RunDirectory, tmp_path: Path
) -> None:
    result = claudeloop(
        "raise", RUN, "--max-turns", "40", "--max-wait", "12h", "--cwd", tmp_path, "--json"
    )
    assert result.exit_code == 0, result.err
    said = json.loads(result.out)
    assert [each["asked"] for each in said] == ["RaiseCap", "RaiseCap"]
    assert live.requests() == (
        Request(1, RaiseCap(Cap.TURNS, 40)),
        Request(2, RaiseCap(Cap.WAIT, 43200)),
    )


def test_a_cap_below_what_was_spent_is_one_line_and_exit_2(
    claudeloop: Invoke, live: RunDirectory, tmp_path: Path
) -> None:
    result = claudeloop("raise", "--max-turns", "1", "--cwd", tmp_path)
    assert result.exit_code == 2
    (line,) = result.err.strip().splitlines()
    assert "--max-turns 1 turns is lower than what the run has spent (2 turns)" in line
    assert live.requests() == ()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("raise",), "give at least one of --max-turns, --max-dollars, --max-wait"),
        (("raise", "--max-dollars", "-3"), "'-3' must be a number above 0"),
        (("raise", "--max-wait", "soon"), "'soon' is not a duration"),
        (("note", RUN, "two", "words"), "note takes [RUN] TEXT, not 3 words"),
        (("note", " "), "the note is empty"),
    ],
)
def test_a_mistake_is_one_line_and_exit_2(
    claudeloop: Invoke, live: RunDirectory, tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    result = claudeloop(*args, "--cwd", tmp_path)
    assert result.exit_code == 2
    assert said in result.err
    assert "Traceback" not in result.err


def test_a_note_for_the_named_run(claudeloop: Invoke, live: RunDirectory, tmp_path: Path) -> None:
    result = claudeloop("note", RUN, "use the staging database", "--cwd", tmp_path)
    assert result.exit_code == 0, result.err
    assert live.requests() == (Request(1, AddNote("use the staging database")),)


def test_no_live_driver_nothing_is_sent(claudeloop: Invoke, tmp_path: Path) -> None:
    directory = waiting_run(tmp_path)
    result = claudeloop("note", "hello", "--cwd", tmp_path)
    assert result.exit_code == 2
    (line,) = result.err.splitlines()
    assert line == (
        f"claudeloop: error: run {RUN} has no live driver (cut off before it ended): no turn "
        f"will read a note; `claudeloop resume {RUN}` goes on"
    )
    assert directory.requests() == ()


def done_run(cwd: Path) -> RunDirectory:
    directory = waiting_run(cwd)
    record = directory.load()
    state = replace(record.state, phase=Phase.COMPLETE, outcome=Outcome.DONE)
    directory.save(replace(record, state=state))
    return directory


def test_probe_now_of_a_run_done_does_nothing_says_so_and_exits_0(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    """As the README says: outside a wait it does nothing, and says so."""
    directory = done_run(tmp_path)
    result = claudeloop("probe-now", "--cwd", tmp_path)
    assert result.exit_code == 0, result.err
    assert result.out == (
        f"claudeloop: run {RUN} is done: a probe now does nothing; more work is a new run "
        "(`claudeloop run`)\n"
    )
    said = json.loads(claudeloop("probe-now", RUN, "--cwd", tmp_path, "--json").out)
    assert (said["pid"], said["effective"]) == (None, False)
    assert directory.requests() == ()


@pytest.mark.parametrize("args", [("raise", "--max-turns", "40"), ("note", "hello")])
def test_raise_and_note_of_a_run_done_never_advise_a_resume(
    claudeloop: Invoke, tmp_path: Path, args: tuple[str, ...]
) -> None:
    directory = done_run(tmp_path)
    result = claudeloop(*args, "--cwd", tmp_path)
    assert result.exit_code == 2
    (line,) = result.err.splitlines()
    assert line.startswith(f"claudeloop: error: run {RUN} is done: ")
    assert line.endswith("; more work is a new run (`claudeloop run`)")
    assert "resume" not in line
    assert directory.requests() == ()


def test_raise_of_a_run_ended_names_the_resume_that_takes_the_caps(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    directory = waiting_run(tmp_path)
    record = directory.load()
    ended = replace(record.state, phase=Phase.FAILED, outcome=Outcome.BUDGET_EXHAUSTED)
    directory.save(replace(record, state=ended))
    result = claudeloop("raise", "--max-turns", "40", "--max-wait", "2h", "--cwd", tmp_path)
    assert result.exit_code == 2
    assert result.err == (
        f"claudeloop: error: run {RUN} has ended (budget_exhausted) and nothing drives it: "
        f"its caps change as it resumes; `claudeloop resume {RUN} --max-turns 40 "
        "--max-wait 7200s` goes on\n"
    )
