"""Paid overage and a model's own weekly window, with the real CLI and the rehearsal API."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal, write_plan
from tests.e2e.patience import COMMAND

pytestmark = pytest.mark.e2e


@pytest.mark.scenario("overage_at_2_3_and_4")
def test_answers_on_paid_overage_and_a_spend_cap_are_waited_out_to_the_instant_they_end(
    rehearsal: Rehearsal,
) -> None:
    """Turn 2 is answered on overage said one way (the overage-in-use header), turn 3
    the other (a rejected window, overage allowed): each stops the turns until its
    window resets. Turn 4 meets a spend cap until an instant: waited out to it."""
    plan = write_plan(rehearsal.project, items=5)
    finished = rehearsal.run(str(plan), *FAST_WAITS, timeout=COMMAND)
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    assert finished.result["overage_turns"] == 2
    events = finished.events()
    started = [e for e in events if e["type"] == "overage.started"]
    assert [(e["turn"], e["action"]) for e in started] == [(2, "wait"), (3, "wait")]
    waits = [e for e in events if e["type"] == "wait.started"]
    assert [w["capacity"].startswith("paid overage in use") for w in waits[:2]] == [True, True]
    assert waits[2:]
    assert all(w["capacity"].startswith("extra-usage limit closed until") for w in waits[2:])
    requests = rehearsal.requests()
    gates = rehearsal.server.state()["gates"]
    on_overage = [r for r in requests if r["gate"] == "overage_in_use"]
    assert {(r["kind"], r["turn"]) for r in on_overage} == {("turn", 2), ("turn", 3)}
    for turn, gate in ((2, gates[0]), (3, gates[1])):
        last = [r for r in on_overage if r["turn"] == turn][-1]
        after = requests[requests.index(last) + 1 :]
        # Nothing between the answer on overage and the window's reset (announced 4 s
        # after the gate's first answer), then one probe.
        reset = datetime.fromisoformat(gate["started_at"]) + timedelta(seconds=4)
        assert after[0]["kind"] == "probe", turn
        assert datetime.fromisoformat(after[0]["at"]) >= reset
        assert after[1]["kind"] == "turn", turn
    summary = (finished.run_directory() / "summary.md").read_text()
    assert "Paid overage: 2 turns answered on it" in summary


@pytest.mark.scenario("overage_in_use_at_2")
def test_a_wind_down_policy_for_paid_overage_ends_the_run_at_the_first_answer_on_it(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(
        str(plan), *FAST_WAITS, "--on-limit", "overage_in_use=wind-down", timeout=COMMAND
    )
    assert finished.exit_code == 75, finished.stderr
    assert "overage_in_use limit met" in finished.result["reason"]
    assert finished.result["overage_turns"] == 1
    assert {(r["kind"], r["turn"]) for r in rehearsal.requests()} == {("turn", 1), ("turn", 2)}


@pytest.mark.scenario("overage_at_2_opus_weekly_at_3")
def test_a_go_on_policy_for_paid_overage_goes_on_and_a_model_weekly_window_has_its_own(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(
        str(plan), *FAST_WAITS,
        "--on-limit", "overage_in_use=go-on", "--on-limit", "seven_day_opus=wind-down",
        timeout=COMMAND,
    )  # fmt: skip
    # Paid overage from turn 2 on: said once, and turn 3 sent on it at once.
    assert "wait.started" not in finished.event_types()
    (started,) = [e for e in finished.events() if e["type"] == "overage.started"]
    assert started["action"] == "go-on"
    requests = rehearsal.requests()
    assert {r["kind"] for r in requests} == {"turn"}  # no probe, no wait
    assert [r["turn"] for r in requests if r["gate"] == "model_weekly"] == [3]
    # Turn 3 meets the Opus week, whose own policy winds the run down.
    assert finished.exit_code == 75, finished.stderr
    assert "seven_day_opus limit met" in finished.result["reason"]
    assert finished.result["overage_turns"] == 1


@pytest.mark.scenario("opus_weekly_once_at_2")
def test_switch_model_goes_on_with_another_model_then_back_when_the_window_lifts(
    rehearsal: Rehearsal,
) -> None:
    # The Opus week refuses turn 2 and lifts after it: the first check of it (as soon
    # as the next turn boundary) finds it open, and the turns go back to Opus.
    plan = write_plan(rehearsal.project, items=4)
    finished = rehearsal.run(
        str(plan), *FAST_WAITS, "--window-probe-interval", "0.1s", "--model", "opus",
        "--on-limit", "seven_day_opus=switch-model sonnet",
        timeout=COMMAND,
    )  # fmt: skip
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    types = finished.event_types()
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
