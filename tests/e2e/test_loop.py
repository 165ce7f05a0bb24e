"""The loop end to end: exit codes, events and files, against the real Claude Code CLI."""

from __future__ import annotations

import itertools
import json
import re
import shlex
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal, write_plan
from tests.e2e.patience import COMMAND

pytestmark = pytest.mark.e2e


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


@pytest.mark.scenario("three_steps")
def test_happy_plan_is_done_with_three_files_and_plan_three_of_three_and_no_secret_kept(
    rehearsal: Rehearsal, tmp_path: Path
) -> None:
    # Secrets in the environment, and a stand-in for the CLI that prints them on stderr
    # before running the real one: none of them reaches the run directory.
    canaries = {
        "CLAUDE_CODE_OAUTH_TOKEN": "canary-oauth-7f3a9c1e5b",
        "ANTHROPIC_AUTH_TOKEN": "canary-auth-token-22d81f",
        "MY_SERVICE_API_KEY": "canary-service-key-91bc3",
    }
    rehearsal.env.update(canaries)
    from claude_agent_sdk import __file__ as sdk_file

    real = Path(sdk_file).parent / "_bundled" / "claude"
    wrapper = tmp_path / "claude-wrapper"
    wrapper.write_text(
        "#!/bin/sh\n"
        'echo "token=$CLAUDE_CODE_OAUTH_TOKEN auth=$ANTHROPIC_AUTH_TOKEN '
        'key=$MY_SERVICE_API_KEY sk-ant-api03-abcdefghijklmnop" >&2\n'
        f'exec "{real}" "$@"\n'
    )
    wrapper.chmod(0o755)
    rehearsal.env["CLAUDELOOP_CLI_PATH"] = str(wrapper)
    plan = write_plan(rehearsal.project)
    before = plan.read_text()
    finished = rehearsal.run(str(plan), *FAST_WAITS, timeout=COMMAND)
    assert finished.exit_code == 0, finished.stderr
    result = finished.result
    assert result["outcome"] == "done"
    assert result["turns"] == 3
    assert result["plan"] == {"done": 3, "total": 3}
    for n in (1, 2, 3):
        assert (rehearsal.project / f"step{n}.txt").read_text() == f"step {n}\n"
    assert plan.read_text() == before  # never rewritten
    types = finished.event_types()
    assert types[0] == "run.started"
    assert types[-1] == "run.finished"
    assert types.count("turn.finished") == 3
    sessions = {e["session_id"] for e in finished.events() if e["type"] == "turn.finished"}
    assert len(sessions) == 1  # one Claude session throughout
    run = finished.run_directory()
    assert (run / "summary.md").read_text().count("done") >= 1
    debug = (run / "debug.log").read_text()
    assert "[redacted]" in debug  # the wrapper's line reached the log, masked
    for path in run.iterdir():
        text = path.read_text()
        for canary in [*canaries.values(), "sk-ant-api03-abcdefghijklmnop"]:
            assert canary not in text, f"{canary} leaked into {path.name}"


@pytest.mark.scenario("window_reset_at_2")
def test_window_with_reset_waits_past_the_reset_probes_and_resumes_the_session(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    # A probe interval longer than the window: the announced reset alone decides.
    finished = rehearsal.run(
        str(plan), *FAST_WAITS, "--window-probe-interval", "60s", "--update-plan", timeout=COMMAND
    )
    assert finished.exit_code == 0, finished.stderr
    # Asked to update the plan, the run checked its items off in the file.
    assert plan.read_text().count("- [x] Write step") == 3
    assert "# Plan" in plan.read_text()
    assert finished.result["outcome"] == "done"
    requests = rehearsal.requests()
    rejected_turns = [r for r in requests if r["kind"] == "turn" and r["gate"] == "window"]
    assert len(rejected_turns) == 1  # no turn sent into the closed window after the first
    gate = rehearsal.server.state()["gates"][0]
    probes = [r for r in requests if r["kind"] == "probe"]
    assert probes, "a probe must precede the resumed turn"
    assert instant(probes[0]["at"]) >= instant(gate["ended_at"])  # first probe after reset
    assert len(probes) == 1  # and it found the window open
    waits = [e for e in finished.events() if e["type"] == "wait.started"]
    assert len(waits) >= 1
    assert "5-hour window" in waits[0]["capacity"]
    sessions = {e["session_id"] for e in finished.events() if e["type"] == "turn.finished"}
    assert len(sessions) == 1


@pytest.mark.scenario("window_silent_at_2")
def test_window_without_reset_probes_at_the_interval_until_it_lifts(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(
        str(plan), *FAST_WAITS, "--window-probe-interval", "1s", timeout=COMMAND
    )
    assert finished.exit_code == 0, finished.stderr
    requests = rehearsal.requests()
    probes = [r for r in requests if r["kind"] == "probe"]
    assert len(probes) == 2  # the gate refuses the turn and a probe; the next finds it open
    assert probes[-1]["gate"] is None  # the last probe saw the window open
    assert all(p["gate"] == "window_silent" for p in probes[:-1])
    turns_in_gate = [r for r in requests if r["kind"] == "turn" and r["gate"]]
    assert len(turns_in_gate) == 1


@pytest.mark.scenario("credits_at_2_two_probes", credentials="api_key")
def test_credits_out_back_off_and_resume_within_one_probe_of_the_top_up(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(
        str(plan), *FAST_WAITS, "--credits-probe-ceiling", "2s", timeout=COMMAND
    )
    assert finished.exit_code == 0, finished.stderr
    requests = rehearsal.requests()
    probes = [r for r in requests if r["kind"] == "probe"]
    refused = [p for p in probes if p["gate"] == "credits"]
    assert len(refused) == 2  # the gate refuses the turn and two probes
    # The planned gaps grow (1 s, 1.5 s) and stop at the 2 s ceiling (not 2.25 s).
    waits = [e for e in finished.events() if e["type"] == "wait.started"]
    planned = [(instant(e["probe_at"]) - instant(e["ts"])).total_seconds() for e in waits]
    assert len(planned) == 3, planned
    assert all(later >= earlier - 0.2 for earlier, later in itertools.pairwise(planned))
    assert planned[1] > planned[0]
    assert planned[2] == pytest.approx(2, abs=0.2)
    # Exactly one probe (the one that saw the top-up) between the lift and the next turn.
    after_rejection = requests[requests.index(refused[0]) :]
    first_ok_turn = next(r for r in after_rejection if r["kind"] == "turn" and r["answered"])
    between = [
        r
        for r in after_rejection[: after_rejection.index(first_ok_turn)]
        if r["kind"] == "probe" and r["gate"] is None
    ]
    assert len(between) == 1
    assert "credits" in waits[0]["capacity"]


@pytest.mark.scenario("auth")
def test_bad_credentials_exit_77_after_one_turn_without_probing(rehearsal: Rehearsal) -> None:
    finished = rehearsal.run("--prompt", "Write hello.txt", *FAST_WAITS, timeout=COMMAND)
    assert finished.exit_code == 77, finished.stderr
    assert finished.result["outcome"] == "auth_failed"
    requests = rehearsal.requests()
    assert [r for r in requests if r["kind"] == "probe"] == []
    assert finished.result["attempts"] == 1


@pytest.mark.scenario("model_missing")
def test_missing_model_exit_78(rehearsal: Rehearsal) -> None:
    finished = rehearsal.run(
        "--prompt", "Write hello.txt", "--model", "qwen-nope", *FAST_WAITS, timeout=COMMAND
    )
    assert finished.exit_code == 78, finished.stderr
    assert finished.result["outcome"] == "backend_misconfigured"
    assert "model" in finished.result["reason"]
    assert [r for r in rehearsal.requests() if r["kind"] == "probe"] == []


@pytest.mark.scenario("blocked")
def test_blocked_verdict_exit_1_with_the_blocker_in_the_summary(rehearsal: Rehearsal) -> None:
    finished = rehearsal.run("--prompt", "Deploy to staging", *FAST_WAITS, timeout=COMMAND)
    assert finished.exit_code == 1, finished.stderr
    assert finished.result["outcome"] == "blocked"
    assert "deploy key" in finished.result["blocked_on"]
    summary = (finished.run_directory() / "summary.md").read_text()
    assert "deploy key" in summary


@pytest.mark.scenario("five_steps")
def test_turn_caps_say_what_is_left_and_the_run_goes_on_by_session_and_by_the_summary(
    rehearsal: Rehearsal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One five-turn run capped twice: `sessions` lists its Claude session,
    `resume --session-id` finds the run by it and stops at its own cap saying what is
    left, and the summary's "To continue" command, pasted, goes on past the cap."""
    plan = write_plan(rehearsal.project, items=5)
    first = rehearsal.run(str(plan), *FAST_WAITS, "--max-turns", "1", timeout=COMMAND)
    assert first.exit_code == 3, first.stderr
    session = first.result["session_id"]
    listed = rehearsal.claudeloop("sessions")
    assert listed.exit_code == 0, listed.stderr
    (entry,) = [entry for entry in json.loads(listed.stdout) if entry["session_id"] == session]
    # Whole for machines (the text listing cuts it at 100): the SDK's is the last prompt.
    assert len(entry["summary"]) > 100, entry
    # claudeloop reads Claude Code's session files itself: the SDK's listing is the oracle.
    from claude_agent_sdk import list_sessions

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", rehearsal.env["CLAUDE_CONFIG_DIR"])
    oracle = list_sessions(directory=str(rehearsal.project), limit=20)
    assert [(e["session_id"], e["summary"]) for e in json.loads(listed.stdout)] == [
        (info.session_id, info.summary.strip()) for info in oracle
    ]

    capped = rehearsal.claudeloop(
        "resume", "--session-id", session, "--max-turns", "3", timeout=COMMAND
    )
    assert capped.exit_code == 3, capped.stderr
    result = capped.result
    assert result["session_id"] == session
    assert result["outcome"] == "budget_exhausted"
    assert result["turns"] == 3  # the first turn's ledger carried over
    assert result["remaining_work"] == ["Write step4.txt", "Write step5.txt"]
    summary = (capped.run_directory() / "summary.md").read_text()
    assert "Write step5.txt" in summary
    found = re.search(r"## To continue\n\n```sh\n(?P<command>.+)\n```", summary)
    assert found is not None, summary
    words = shlex.split(found["command"])
    assert words[:2] == ["claudeloop", "resume"]

    # The command exactly as printed, with claudeloop run from this checkout.
    resumed = subprocess.run(
        [sys.executable, "-m", "claudeloop", *words[1:]],
        env=rehearsal.env,
        capture_output=True,
        text=True,
        timeout=COMMAND,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    # It says the turn it resumes at, which is not "before its first turn".
    said = next(line for line in resumed.stderr.splitlines() if " resumed in " in line)
    assert said.endswith("at turn 4)"), said
    assert "before its first turn" not in said
    assert "claudeloop: done (exit 0)" in resumed.stderr
    assert (rehearsal.project / "step5.txt").exists()
