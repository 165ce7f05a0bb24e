"""A resume started while another driver finishes the run (issue 20, item 1): the record
is read once the run's lock is held, so the resume sees the turns the driver saved last
and never sends a finished turn again nor saves a ledger that went back."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.lock import DriverLock, acquire
from claudeloop.adapters.run_directory.starting import create as create_directory
from claudeloop.adapters.run_directory.starting import new_record
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.loop import Outcome, Phase

from .conftest import Invocation


def _at_turn(
    record: RunRecord, turns: int, phase: Phase, outcome: Outcome | None = None
) -> RunRecord:
    ledger = replace(record.state.ledger, turns=turns, attempts=turns, dollars=0.001 * turns)
    state = replace(record.state, ledger=ledger, phase=phase, outcome=outcome)
    return replace(record, session_id="s-1", state=state)


@pytest.fixture
def run_at_turn_two(tmp_path: Path) -> RunDirectory:
    record = new_record(RunSpec(cwd=tmp_path, task="three steps"), "r-1")
    directory = create_directory(record)
    directory.save(_at_turn(record, 2, phase=Phase.RUNNING))
    return directory


def _driver_finishes_while_the_resume_waits(
    monkeypatch: pytest.MonkeyPatch, directory: RunDirectory
) -> None:
    """The live driver saves its last turn, done, and lets go of the lock just before the
    resume gets it."""

    def finished_then_taken(lock_path: Path) -> DriverLock:
        ended = _at_turn(directory.load(), 3, phase=Phase.COMPLETE, outcome=Outcome.DONE)
        directory.save(ended)
        return acquire(lock_path)

    monkeypatch.setattr("claudeloop.adapters.run_directory.finding.acquire", finished_then_taken)


def test_a_resume_that_waited_for_the_lock_drives_nothing_of_a_run_that_ended_done(
    claudeloop: Callable[..., Invocation],
    run_at_turn_two: RunDirectory,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _driver_finishes_while_the_resume_waits(monkeypatch, run_at_turn_two)

    result = claudeloop("resume", "--cwd", tmp_path, "--json")

    assert result.exit_code == 0, result.err
    assert "run r-1 already finished: done" in result.err
    assert json.loads(result.out)["turns"] == 3
    saved = run_at_turn_two.load()
    assert (saved.state.ledger.turns, saved.state.ledger.attempts) == (3, 3)
    assert saved.state.outcome is Outcome.DONE
    log = run_at_turn_two.events_path
    told = log.read_text().splitlines() if log.exists() else []
    assert not [line for line in told if json.loads(line)["type"] == "turn.started"]


def _types(directory: RunDirectory) -> list[str]:
    return [event["type"] for event in directory.read_events()]


def test_a_resume_tells_the_end_of_a_run_that_ended_done_without_saying_so(
    claudeloop: Callable[..., Invocation], run_at_turn_two: RunDirectory, tmp_path: Path
) -> None:
    # Its driver saved the run done and was stopped before it said so (seen with a fleet
    # worker whose lease lapsed in a database outage): the log ended without run.finished.
    ended = _at_turn(run_at_turn_two.load(), 3, phase=Phase.COMPLETE, outcome=Outcome.DONE)
    run_at_turn_two.save(ended)
    run_at_turn_two.events_path.write_text('{"type": "run.started", "run_id": "r-1"}\n')

    first = claudeloop("resume", "--cwd", tmp_path)
    again = claudeloop("resume", "--cwd", tmp_path)

    assert (first.exit_code, again.exit_code) == (0, 0)
    assert _types(run_at_turn_two) == ["run.started", "run.finished"]
    (finished,) = [e for e in run_at_turn_two.read_events() if e["type"] == "run.finished"]
    assert (finished["outcome"], finished["exit_code"]) == ("done", 0)
