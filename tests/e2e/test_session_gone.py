"""A run whose Claude session cannot be resumed goes on, with the real CLI and the
rehearsal API: killed in its first turn before the CLI wrote the prompt (CLI 2.1.337
begins a transcript with lines of its own), and after its transcript vanished
(cleanupPeriodDays, another CLAUDE_CONFIG_DIR, another machine), where `resume` says
how in one line and `resume --new-session` goes on with the run's plan and ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal, wait_for, write_plan
from tests.e2e.patience import COMMAND, STATE
from tests.e2e.test_run_directory import kill_hard

pytestmark = pytest.mark.e2e


def transcripts(rehearsal: Rehearsal) -> list[Path]:
    return sorted((Path(rehearsal.env["CLAUDE_CONFIG_DIR"]) / "projects").glob("*/*.jsonl"))


def state_of(rehearsal: Rehearsal) -> dict[str, object]:
    (run,) = list((rehearsal.project / ".claudeloop" / "runs").iterdir())
    return dict(json.loads((run / "state.json").read_text()))


def recorded_session(rehearsal: Rehearsal) -> str | None:
    try:
        session = state_of(rehearsal).get("session_id")
    except (OSError, ValueError):
        return None  # not made yet, or being replaced
    return session if isinstance(session, str) else None


@pytest.mark.scenario("stall_at_1")
def test_a_run_killed_in_its_first_turn_before_the_prompt_was_kept_resumes_and_finishes(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    wait_for(
        lambda: recorded_session(rehearsal) is not None,
        "the session id to be recorded",
        timeout=STATE,
    )
    # Killed in the stall the scenario puts on the first turn's request: killed before
    # that request arrived, the run left the stall to its resume, which then waited out
    # the minute (the test took 60 s instead of 12, depending on the machine's load).
    wait_for(
        lambda: any(request["kind"] == "turn" for request in rehearsal.requests()),
        "the first turn's request to reach the rehearsal API",
        timeout=STATE,
    )
    kill_hard(process)
    session = recorded_session(rehearsal)
    # What the CLI had written of the session by the instant it was named: its lines
    # before the prompt (2.1.337: the request's route and its queue; 2.1.332: nothing).
    for transcript in transcripts(rehearsal):
        lines = transcript.read_text().splitlines()
        kept = [json.loads(line).get("type") not in ("user", "assistant") for line in lines]
        before = kept.index(False) if False in kept else len(lines)
        transcript.write_text("".join(f"{line}\n" for line in lines[:before]))

    finished = rehearsal.claudeloop("resume", timeout=COMMAND)
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    # The session no CLI could resume was started afresh, not resumed and not failed.
    answered = {e["session_id"] for e in finished.events() if e["type"] == "turn.finished"}
    assert session is not None
    assert session not in answered
    assert len(answered) == 1
    assert "turn.failed" not in finished.event_types()
    assert finished.result["plan"] == {"done": 3, "total": 3}


@pytest.mark.scenario("three_steps")
def test_a_run_whose_session_vanished_says_how_to_go_on_and_goes_on_in_a_new_one(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    capped = rehearsal.run(str(plan), "--max-turns", "1", *FAST_WAITS, timeout=COMMAND)
    assert capped.exit_code == 3, capped.stderr
    session = capped.result["session_id"]
    assert (rehearsal.project / "step1.txt").exists()
    for transcript in transcripts(rehearsal):
        transcript.unlink()  # as Claude Code's cleanup after cleanupPeriodDays does

    refused = rehearsal.claudeloop("resume", "--max-turns", "9", timeout=COMMAND)
    assert refused.exit_code == 1, refused.stderr
    said = refused.result["reason"]
    assert said.startswith(f"Claude Code cannot resume session {session}: it has no transcript")
    assert "cleanupPeriodDays" in said
    assert "`claudeloop resume --new-session` goes on in a new session" in said
    assert "\n" not in said
    assert "Traceback" not in refused.stderr
    summary = (refused.run_directory() / "summary.md").read_text()
    assert "--new-session" in summary.split("## To continue", 1)[1]
    assert not [r for r in rehearsal.requests() if r["kind"] == "turn" and r["turn"] > 1]

    finished = rehearsal.claudeloop("resume", "--new-session", "--max-turns", "9", timeout=COMMAND)
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    events = finished.events()
    (replaced,) = [e for e in events if e["type"] == "session.replaced"]
    assert replaced["session_id"] == session
    assert replaced["reason"] == "claudeloop resume --new-session"
    after = events[events.index(replaced) :]
    started = [e["session_id"] for e in after if e["type"] == "turn.started"]
    assert started[0] is None
    assert session not in started
    # The plan and the ledger went on: the first run's turn is still counted.
    assert finished.result["plan"] == {"done": 3, "total": 3}
    assert finished.result["turns"] > capped.result["turns"]
    assert finished.result["dollars"] > capped.result["dollars"]
    assert finished.result["gone_sessions"] == [session]
    summary = (finished.run_directory() / "summary.md").read_text()
    assert f"Sessions let go of: {session}" in summary
