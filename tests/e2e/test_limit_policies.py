"""Pause before the wall and a policy per limit, with the real CLI and the rehearsal API."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from claudeloop.rehearsal import RehearsalServer, load_scenario
from tests.e2e.conftest import FAST_WAITS, SCENARIOS, Rehearsal, wait_for, write_plan

pytestmark = pytest.mark.e2e


@pytest.mark.scenario("warning_at_2")
def test_a_window_at_its_pause_threshold_is_waited_out_then_the_run_goes_on(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS, "--pause-at", "5h=90%")
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    assert finished.result["turns"] == 3  # the paused turn counted as answered
    waits = [e for e in finished.events() if e["type"] == "wait.started"]
    assert len(waits) == 1
    assert "92% used: paused" in waits[0]["capacity"]
    requests = rehearsal.requests()
    gate = rehearsal.server.state()["gates"][0]
    warned = [r for r in requests if r["gate"] == "warning"]
    after = requests[requests.index(warned[-1]) + 1 :]
    # Nothing between the warned turn and the window's reset, then one probe.
    assert after[0]["kind"] == "probe"
    assert datetime.fromisoformat(after[0]["at"]) >= datetime.fromisoformat(gate["ended_at"])


@pytest.mark.scenario("window_reset_at_2")
def test_a_wind_down_policy_ends_the_run_with_a_handoff_at_the_limit(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS, "--on-limit", "five_hour=wind-down")
    assert finished.exit_code == 75, finished.stderr
    assert finished.result["outcome"] == "wound_down"
    assert "five_hour limit met" in finished.result["reason"]
    assert [r for r in rehearsal.requests() if r["kind"] == "probe"] == []
    summary = (finished.run_directory() / "summary.md").read_text()
    assert "claudeloop resume" in summary


@pytest.mark.scenario("daily_cap_until_lift_at_2")
def test_a_daily_cap_can_be_given_a_policy_from_the_configuration_file(
    rehearsal: Rehearsal,
) -> None:
    # Issue 41: the classifier produced daily_cap, and a policy naming it was refused.
    (rehearsal.project / "claudeloop.toml").write_text('[limits]\ndaily_cap = "wind-down"\n')
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS)
    assert finished.exit_code == 75, finished.stderr
    assert finished.result["outcome"] == "wound_down"
    assert finished.result["reason"].startswith("daily_cap limit met (the organization's usage")
    assert [r for r in rehearsal.requests() if r["kind"] == "probe"] == []


@pytest.mark.scenario("five_window_until_lift_at_2")
def test_a_switch_profile_policy_goes_on_locally_and_comes_back_when_the_window_lifts(
    rehearsal: Rehearsal,
) -> None:
    with RehearsalServer(load_scenario(SCENARIOS / "slow_first_turn.toml")) as local:
        (rehearsal.project / "claudeloop.toml").write_text(
            f'[profiles.local]\nbase_url = "{local.base_url}"\nmodel = "qwen3"\n'
        )
        plan = write_plan(rehearsal.project, items=5)
        process = rehearsal.start(
            "run", str(plan), *FAST_WAITS, "--on-limit", "five_hour=switch-profile local"
        )
        # While the local model works on its first (slow) turn, the window reopens.
        wait_for(lambda: local.state()["turn_requests"] >= 1, "the first turn on the local profile")
        rehearsal.server.lift()
        out, err = process.communicate(timeout=120)
        local_requests = local.state()["requests"]
    assert process.returncode == 0, err
    (events,) = (rehearsal.project / ".claudeloop").rglob("events.jsonl")
    text = events.read_text()
    assert '"profile.switched"' in text
    assert '"profile.restored"' in text
    local_turns = [r for r in local_requests if r["kind"] == "turn"]
    assert local_turns
    assert {r["model"] for r in local_turns} == {"qwen3"}
    primary = rehearsal.requests()
    refused = [r for r in primary if r["gate"] == "window_silent"]
    assert [r["kind"] for r in refused].count("turn") == 1  # one turn met the window
    after_lift = [r for r in primary if r["kind"] == "turn" and r["answered"]]
    assert len(after_lift) >= 2  # turn 1, and the turns back on the run's own backend
    assert json.loads(out)["outcome"] == "done"
