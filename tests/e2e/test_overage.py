"""Paid overage and a model's own weekly window, with the real CLI and the rehearsal API."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal, wait_for, write_plan

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param("overage_in_use_at_2", marks=pytest.mark.scenario("overage_in_use_at_2")),
        pytest.param(
            "overage_rejected_window_at_2",
            marks=pytest.mark.scenario("overage_rejected_window_at_2"),
        ),
    ],
)
def test_an_answer_on_paid_overage_stops_the_turns_until_the_window_resets(
    rehearsal: Rehearsal, scenario: str
) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS)
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    assert finished.result["overage_turns"] == 1
    events = finished.events()
    (started,) = [e for e in events if e["type"] == "overage.started"]
    assert started["turn"] == 2
    assert started["action"] == "wait"
    (wait,) = [e for e in events if e["type"] == "wait.started"]
    assert wait["capacity"].startswith("paid overage in use")
    requests = rehearsal.requests()
    gate = rehearsal.server.state()["gates"][0]
    on_overage = [r for r in requests if r["gate"] == "overage_in_use"]
    assert {(r["kind"], r["turn"]) for r in on_overage} == {("turn", 2)}
    after = requests[requests.index(on_overage[-1]) + 1 :]
    # Nothing between the answer on overage and the window's reset, then one probe.
    assert after[0]["kind"] == "probe"
    assert datetime.fromisoformat(after[0]["at"]) >= datetime.fromisoformat(gate["ended_at"])
    summary = (finished.run_directory() / "summary.md").read_text()
    assert "Paid overage: 1 turns answered on it" in summary


@pytest.mark.scenario("overage_in_use_at_2")
def test_a_wind_down_policy_for_paid_overage_ends_the_run_at_the_first_answer_on_it(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS, "--on-limit", "overage_in_use=wind-down")
    assert finished.exit_code == 75, finished.stderr
    assert "overage_in_use limit met" in finished.result["reason"]
    assert finished.result["overage_turns"] == 1
    assert {(r["kind"], r["turn"]) for r in rehearsal.requests()} == {("turn", 1), ("turn", 2)}


@pytest.mark.scenario("overage_in_use_at_2")
def test_a_go_on_policy_for_paid_overage_goes_on_and_says_so(rehearsal: Rehearsal) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS, "--on-limit", "overage_in_use=go-on")
    assert finished.exit_code == 0, finished.stderr
    assert "wait.started" not in finished.event_types()
    (started,) = [e for e in finished.events() if e["type"] == "overage.started"]
    assert started["action"] == "go-on"
    assert {r["kind"] for r in rehearsal.requests()} == {"turn"}  # no probe, no wait


@pytest.mark.scenario("opus_weekly_at_2")
def test_a_model_weekly_window_has_its_own_policy(rehearsal: Rehearsal) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS, "--on-limit", "seven_day_opus=wind-down")
    assert finished.exit_code == 75, finished.stderr
    assert "seven_day_opus limit met" in finished.result["reason"]


@pytest.mark.scenario("overage_until_at_2")
def test_a_spend_cap_until_an_instant_is_waited_out_to_that_instant(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS)
    assert finished.exit_code == 0, finished.stderr
    waits = [e for e in finished.events() if e["type"] == "wait.started"]
    assert waits
    assert all(w["capacity"].startswith("extra-usage limit closed until") for w in waits)


@pytest.mark.scenario("opus_weekly_until_lift_at_2")
def test_switch_model_goes_on_with_another_model_then_back_when_the_window_lifts(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project, items=20)
    process = rehearsal.start(
        "run", str(plan), *FAST_WAITS, "--window-probe-interval", "1s", "--model", "opus",
        "--on-limit", "seven_day_opus=switch-model sonnet",
    )  # fmt: skip
    wait_for(
        lambda: any(
            r["kind"] == "turn" and "sonnet" in (r["model"] or "") for r in rehearsal.requests()
        ),
        "a turn sent to sonnet",
        timeout=120,
    )
    rehearsal.server.lift()
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    assert json.loads(out)["outcome"] == "done"
    (events,) = (rehearsal.project / ".claudeloop").rglob("events.jsonl")
    types = [json.loads(line)["type"] for line in events.read_text().splitlines()]
    assert "model.restored" in types
    assert types.index("model.switched") < types.index("model.restored")
    turns = [r for r in rehearsal.requests() if r["kind"] == "turn"]
    refused = [r for r in turns if r["gate"] == "model_weekly"]
    assert {r["turn"] for r in refused} == {2}  # one turn met the Opus week
    models = ["sonnet" if "sonnet" in (r["model"] or "") else "opus" for r in turns]
    # Opus, then Sonnet while the window is shut, then Opus again after it lifts.
    assert models[0] == "opus"
    assert "sonnet" in models
    assert models[-1] == "opus"
    first_sonnet = models.index("sonnet")
    assert all(r["answered"] for r in turns[first_sonnet:] if "sonnet" in (r["model"] or ""))
