"""A session whose transcript Claude Code could not save is never resumed, through the
real CLI: its `projects/` directory on a nearly full tmpfs (tests/e2e/full_disk.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import full_disk
from tests.e2e.conftest import FAST_WAITS, Finished, Rehearsal, write_plan

pytestmark = pytest.mark.e2e

Steps = Callable[[list[dict[str, Any]]], list[Finished]]


@pytest.fixture
def on_a_full_disk(rehearsal: Rehearsal, tmp_path: Path) -> Steps:
    """Runs claudeloop commands (in the project, with --json) with the transcripts on a
    full disk; a step with `free_first` frees it before it runs."""
    why = full_disk.why_not()
    if why is not None:
        pytest.skip(f"a full disk cannot be played here: {why}")
    projects = Path(rehearsal.env["CLAUDE_CONFIG_DIR"]) / "projects"

    def run(steps: list[dict[str, Any]]) -> list[Finished]:
        for step in steps:
            step["args"] = [*step["args"], "--cwd", str(rehearsal.project), "--json"]
        done = full_disk.run_on_a_full_disk(projects, steps, env=rehearsal.env, work=tmp_path)
        return [
            Finished(ran["exit_code"], ran["stdout"], ran["stderr"], rehearsal.project)
            for ran in done
        ]

    return run


def turn_requests(rehearsal: Rehearsal) -> list[dict[str, Any]]:
    return [r for r in rehearsal.requests() if r["kind"] == "turn"]


@pytest.mark.scenario("window_reset_at_2")
def test_the_turn_after_a_lost_transcript_starts_a_new_session_and_the_run_is_done(
    rehearsal: Rehearsal, on_a_full_disk: Steps
) -> None:
    write_plan(rehearsal.project)
    (finished,) = on_a_full_disk([{"args": ["run", "PLAN.md", *FAST_WAITS]}])
    assert finished.exit_code == 0, finished.stderr
    result = finished.result
    assert result["outcome"] == "done"
    events = finished.events()
    # Turn 2 was refused: its process exited 1 and said on stderr that session 1's
    # transcript was cut. Told before the next turn, which starts a new session.
    lost = [e for e in events if e["type"] == "session.writes_lost"]
    first = lost[0]["session_id"]
    assert lost[0]["action"] == "new_session"
    types = [e["type"] for e in events]
    after_loss = types.index("turn.started", types.index("session.writes_lost"))
    assert events[after_loss]["session_id"] is None
    turns = turn_requests(rehearsal)
    refused = max(i for i, r in enumerate(turns) if r["gate"] == "window")
    # A --resume of the lost session would send its conversation again (turn 2 of it);
    # the rehearsal API saw a conversation of one prompt: a new session, told the task.
    assert turns[refused + 1]["turn"] == 1
    sessions = [e["session_id"] for e in events if e["type"] == "turn.finished"]
    assert sessions[:2] == [first, first]
    assert first not in sessions[2:]
    assert len(set(sessions[2:])) == 1
    # The new session lost its lines too, said as its process ended with the run.
    second = sessions[-1]
    assert result["lost_sessions"] == [first, second]
    assert result["session_id"] is None
    for step in (1, 2, 3):
        assert (rehearsal.project / f"step{step}.txt").exists()
    status = subprocess.run(
        rehearsal.command("status"), env=rehearsal.env, capture_output=True, text=True, check=True
    )
    assert f"Lost transcripts: {first}, {second}" in status.stdout
    summary = (finished.run_directory() / "summary.md").read_text()
    assert f"Lost transcripts: {first}, {second}" in summary
    logs = subprocess.run(
        rehearsal.command("logs"), env=rehearsal.env, capture_output=True, text=True, check=True
    )
    assert (
        f"Claude Code could not save the transcript of session {first} (a full disk or "
        "quota): it is not resumed; the next turn starts a new session"
    ) in logs.stdout


@pytest.mark.scenario("window_at_2_twice")
def test_a_second_lost_transcript_in_a_row_ends_the_run_with_exit_1_and_the_fix(
    rehearsal: Rehearsal, on_a_full_disk: Steps
) -> None:
    write_plan(rehearsal.project)
    (finished,) = on_a_full_disk([{"args": ["run", "PLAN.md", *FAST_WAITS]}])
    assert finished.exit_code == 1, finished.stderr
    result = finished.result
    assert result["outcome"] == "failed"
    assert "could not save the transcript of 2 sessions in a row" in result["reason"]
    assert "free space there and resume the run" in result["reason"]
    actions = [e["action"] for e in finished.events() if e["type"] == "session.writes_lost"]
    assert actions == ["new_session", "stop"]
    # Session 1's turns 1 and 2, then the new session's first turn; nothing after.
    numbers = [r["turn"] for r in turn_requests(rehearsal)]
    assert numbers[-2:] == [2, 1]
    assert len(result["lost_sessions"]) == 2


@pytest.mark.scenario("three_steps")
def test_a_run_that_ended_on_a_lost_transcript_resumes_in_a_new_session_once_space_is_free(
    rehearsal: Rehearsal, on_a_full_disk: Steps
) -> None:
    write_plan(rehearsal.project)
    capped, resumed = on_a_full_disk(
        [
            {"args": ["run", "PLAN.md", *FAST_WAITS, "--max-turns", "1"]},
            {"args": ["resume", *FAST_WAITS, "--max-turns", "6"], "free_first": True},
        ]
    )
    assert capped.exit_code == 3, capped.stderr
    # Heard as the run ended (the kept process exited 0 and sent session_writes_lost),
    # and saved: the record no longer names the session as the one to resume.
    (lost,) = json.loads(capped.stdout)["lost_sessions"]
    assert json.loads(capped.stdout)["session_id"] is None
    assert resumed.exit_code == 0, resumed.stderr
    assert resumed.result["outcome"] == "done"
    # The cut transcript is still there, and space is free: a --resume would load it and
    # send turn 2 of its conversation. The rehearsal saw a second conversation begin.
    openings = [r for r in turn_requests(rehearsal) if (r["turn"], r["step"]) == (1, 0)]
    assert len(openings) == 2
    since = resumed.events()[resumed.event_types().index("run.resumed") :]
    first_turn = next(e for e in since if e["type"] == "turn.started")
    assert first_turn["session_id"] is None
    assert lost not in {e["session_id"] for e in since if e["type"] == "turn.finished"}
