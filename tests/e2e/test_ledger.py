"""What the ledger counts, with the real CLI. That it equals what the rehearsal API served
after a kill -9 during a turn's first request, a wait or the start-up is asserted by the
kill tests of test_run_directory.py and test_hangups_and_early_kills.py; here, a kill
after the service had answered part of a turn."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from claudeloop.domain.budget import money
from tests.e2e.conftest import (
    FAST_WAITS,
    Rehearsal,
    assert_ledger_is_what_was_served,
    in_flight_kept,
    wait_for,
    write_plan,
)
from tests.e2e.test_run_directory import kill_hard

pytestmark = pytest.mark.e2e


@pytest.mark.scenario("three_steps", credentials="api_key")
def test_a_price_the_cli_guessed_never_counts_against_max_dollars(rehearsal: Rehearsal) -> None:
    # A LiteLLM profile keeps the cost the CLI reports; for a model name missing from
    # its price table the CLI reports a guess, well above this cap after one turn.
    (rehearsal.project / "claudeloop.toml").write_text(
        "[profiles.proxy]\n"
        'preset = "litellm"\n'
        f'base_url = "{rehearsal.server.base_url}"\n'
        'model = "qwen3"\n'
        'auth_token = "sk-e2e-proxy-key-not-real"\n'  # the proxy will not start without one
    )
    rehearsal.env["CLAUDELOOP_CONFIG_DIR"] = str(rehearsal.project.parent / "user-config")
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), "--profile", "proxy", "--max-dollars", "0.001")
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    assert finished.result["dollars"] == 0
    (guessed,) = [e for e in finished.events() if e["type"] == "cost.guessed"]
    assert guessed["models"] == ["qwen3"]
    assert guessed["guessed_usd"] > 0.001


def answers_kept(rehearsal: Rehearsal) -> int:
    """The answers the run's session transcripts keep, each once."""
    projects = Path(rehearsal.env["CLAUDE_CONFIG_DIR"]) / "projects"
    kept = set()
    for path in projects.glob("*/*.jsonl"):
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if entry.get("type") == "assistant" and entry.get("requestId"):
                    kept.add(entry["requestId"])
    return len(kept)


@pytest.mark.scenario("stall_at_2_step_1")
def test_a_turn_killed_after_part_of_it_was_served_is_billed_for_that_part(
    rehearsal: Rehearsal,
) -> None:
    # Turn 2's first request (writing step2.txt) is answered, its next one hangs: the
    # answered one never reaches a result, only the session's transcript; the one in
    # flight is in neither, and is billed at an estimate.
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    wait_for(lambda: any(r["gate"] == "stall" for r in rehearsal.requests()), "turn 2's stall")
    # Claude Code writes each answer to the transcript a moment after it arrives; a real
    # crash mid-turn comes minutes later, when every answer before it is there.
    wait_for(lambda: answers_kept(rehearsal) == 3, "the transcript to keep turn 2's answer")
    wait_for(lambda: in_flight_kept(rehearsal) == 1, "the transcript to keep the stalled send")
    kill_hard(process)
    partly = [r for r in rehearsal.requests() if r["kind"] == "turn" and r["turn"] == 2]
    assert [r["answered"] for r in partly] == [True, False]
    finished = rehearsal.claudeloop("resume")
    assert_ledger_is_what_was_served(finished, rehearsal, in_flight=1)
    assert "≈, includes" in (finished.run_directory() / "summary.md").read_text()


def streams_cut(rehearsal: Rehearsal) -> int:
    """Answers whose stream the run heard begin and never end (responses.jsonl)."""
    logs = list((rehearsal.project / ".claudeloop" / "runs").glob("*/responses.jsonl"))
    ended: dict[str, bool] = {}
    for line in logs[0].read_text().splitlines() if logs else []:
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if "id" in entry:
                ended[entry["id"]] = ended.get(entry["id"], False) or entry["complete"]
    return sum(not done for done in ended.values())


@pytest.mark.scenario("stall_at_2_step_1")
def test_a_turn_killed_as_an_answer_streams_in_is_billed_whatever_the_transcript_kept(
    rehearsal: Rehearsal,
) -> None:
    # Killed the moment the stalled answer's first event reached claudeloop, without
    # waiting for Claude Code to write anything of it (under load it had not, and the
    # ledger fell short): the stream's own record makes the bill.
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    wait_for(lambda: any(r["gate"] == "stall" for r in rehearsal.requests()), "turn 2's stall")
    wait_for(lambda: streams_cut(rehearsal) == 1, "the stalled answer to begin streaming")
    kill_hard(process)
    billed = [r for r in rehearsal.requests() if r["kind"] == "turn"]
    assert [r["answered"] for r in billed if r["turn"] == 2] == [True, False]
    finished = rehearsal.claudeloop("resume")
    # Every answer the service delivered is billed at its price, and the cut one at the
    # price of its neighbour, as an estimate.
    assert_ledger_is_what_was_served(finished, rehearsal, in_flight=1)
    said = finished.result["said"]["dollars"]
    assert said.endswith(
        f"(≈, includes {money(finished.result['estimated_dollars'])} estimated for a turn cut off)"
    )
    assert f"- Spend: {said}" in (finished.run_directory() / "summary.md").read_text()
    status = subprocess.run(
        [sys.executable, "-m", "claudeloop", "status", "--cwd", str(rehearsal.project)],
        env=rehearsal.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert status.returncode == 0, status.stderr
    assert said in status.stdout
