"""A closed terminal stops a run like Ctrl-C, and a run killed before or during its first
turn can be resumed (issue 12, item 11; issue 20, item 4), with the real CLI and the
rehearsal API."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    FAST_WAITS,
    Rehearsal,
    assert_ledger_is_what_was_served,
    in_flight_kept,
    wait_for,
    write_plan,
)
from tests.e2e.patience import COMMAND, STATE
from tests.e2e.test_ledger import answers_kept
from tests.e2e.test_run_directory import AN_HOUR_TO_THE_PROBE, kill_hard, phase

pytestmark = pytest.mark.e2e


def only_run(project: Path) -> Path:
    (run,) = list((project / ".claudeloop" / "runs").iterdir())
    return run


def events_of(run: Path) -> list[dict[str, Any]]:
    lines = (run / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]


def waits(run: Path) -> int:
    return [e["type"] for e in events_of(run)].count("wait.started")


def stopped_summary(run: Path, before: int) -> int:
    """The summary's mtime: written again since `before` (its last), and saying stopped."""
    written = (run / "summary.md").stat().st_mtime_ns
    assert written != before
    assert "**stopped**" in (run / "summary.md").read_text()
    return written


@pytest.mark.scenario("window_until_lift_at_2")
def test_a_wait_ended_by_ctrl_c_a_hangup_or_a_closed_terminal_stops_with_130_and_a_summary(
    rehearsal: Rehearsal,
) -> None:
    """A run waiting for its window (its next probe an hour away) is stopped by a
    terminal's Ctrl-C; resumed, it waits again and a hangup stops it; resumed on a
    terminal that then goes away, it stops again. Each time 130, a summary, no probe."""
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS, *AN_HOUR_TO_THE_PROBE)
    try:
        wait_for(lambda: phase(rehearsal.project) == "waiting", "the run to wait", timeout=STATE)
        os.killpg(process.pid, signal.SIGINT)  # what a terminal sends the foreground group
        out, err = process.communicate(timeout=STATE)
    finally:
        if process.poll() is None:
            kill_hard(process)
    assert process.returncode == 130, err
    assert json.loads(out)["outcome"] == "stopped"
    run = only_run(rehearsal.project)
    written = stopped_summary(run, 0)

    process = rehearsal.start("resume")
    try:
        wait_for(lambda: waits(run) == 2, "the resumed run to wait", timeout=STATE)
        os.killpg(process.pid, signal.SIGHUP)
        out, err = process.communicate(timeout=STATE)
    finally:
        if process.poll() is None:
            kill_hard(process)
    assert process.returncode == 130, err
    assert json.loads(out)["outcome"] == "stopped"
    assert "Traceback" not in err
    written = stopped_summary(run, written)

    terminal, screen = pty.openpty()
    process = subprocess.Popen(
        [*rehearsal.command("resume"), "--json"],
        env=rehearsal.env,
        stdin=subprocess.DEVNULL,
        stdout=screen,
        stderr=screen,
        start_new_session=True,
        text=True,
    )
    os.close(screen)
    try:
        wait_for(lambda: waits(run) == 3, "the run resumed on a terminal to wait", timeout=STATE)
        # The terminal goes away: every write to it fails from now on, then the hangup.
        os.close(terminal)
        os.killpg(process.pid, signal.SIGHUP)
        assert process.wait(timeout=STATE) == 130
    finally:
        if process.poll() is None:
            kill_hard(process)
    stopped_summary(run, written)
    events = events_of(run)
    assert events[-1]["type"] == "run.finished"
    assert events[-1]["outcome"] == "stopped"
    assert [e["outcome"] for e in events if e["type"] == "run.finished"] == ["stopped"] * 3
    assert [r for r in rehearsal.requests() if r["kind"] == "probe"] == []


@pytest.mark.scenario("three_steps")
def test_a_run_killed_before_its_first_turn_resumes_and_finishes(rehearsal: Rehearsal) -> None:
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    # The driver holds the run's lock from before the slow start of the CLI.
    runs = rehearsal.project / ".claudeloop" / "runs"
    wait_for(
        lambda: runs.is_dir() and any((run / "driver.pid").exists() for run in runs.iterdir()),
        "the run to be created",
        timeout=STATE,
    )
    kill_hard(process)
    assert not any(r["kind"] == "turn" for r in rehearsal.requests())
    finished = rehearsal.claudeloop("resume", timeout=COMMAND)
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    # The first driver may die before or after it logged its start; the second one
    # resumes the run, never starts it again.
    types = finished.event_types()
    assert types.count("run.started") <= 1, types
    assert types.count("run.resumed") == 1, types
    assert_ledger_is_what_was_served(finished, rehearsal)


@pytest.mark.scenario("stall_at_1_step_1")
def test_a_run_killed_in_its_first_turn_resumes_the_session_the_cli_started(
    rehearsal: Rehearsal,
) -> None:
    # Turn 1's first request (writing step1.txt) is answered, its next one hangs: the
    # driver dies before the first turn's result, the only place the session id was read.
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    wait_for(
        lambda: any(r["gate"] == "stall" for r in rehearsal.requests()),
        "turn 1's stall",
        timeout=STATE,
    )
    wait_for(
        lambda: answers_kept(rehearsal) == 1,
        "the transcript to keep turn 1's answer",
        timeout=STATE,
    )
    wait_for(
        lambda: in_flight_kept(rehearsal) == 1,
        "the transcript to keep the stalled send",
        timeout=STATE,
    )
    kill_hard(process)
    state = json.loads((only_run(rehearsal.project) / "state.json").read_text())
    assert state["turn_in_flight"] == 1
    session = state["session_id"]
    assert session is not None  # saved the moment the CLI named it

    finished = rehearsal.claudeloop("resume", timeout=COMMAND)
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    # One session throughout: the resume went on with it, and no other was started.
    events = finished.events()
    started = [e["session_id"] for e in events if e["type"] == "turn.started"]
    assert started[0] is None  # the first turn, before the CLI had named its session
    assert set(started[1:]) == {session}
    assert {e["session_id"] for e in events if e["type"] == "turn.finished"} == {session}
    transcripts = Path(rehearsal.env["CLAUDE_CONFIG_DIR"]) / "projects"
    assert [path.stem for path in transcripts.glob("*/*.jsonl")] == [session]
    # The answer served before the kill is billed with the turn sent again, the request
    # in flight at an estimate. (That turn says the task again, so the played model takes
    # it for the script's next turn.)
    last = [e for e in events if e["type"] == "turn.finished"][-1]
    last_answers = [r for r in rehearsal.requests() if r["turn"] == 3 and r["answered"]]
    price = last["cost_usd"] / len(last_answers)
    assert_ledger_is_what_was_served(finished, rehearsal, price=price, in_flight=1)
