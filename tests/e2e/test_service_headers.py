"""The other headers the CLI reads, through the real CLI and the rehearsal API: an
answer in a grace period goes on with a warning, and the organization's daily cap is a
wait until the day's reset, never credits (docs/architecture/claude-code-signals.md)."""

from __future__ import annotations

import json
import os
import signal
from datetime import datetime

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal, wait_for, write_plan

pytestmark = pytest.mark.e2e


@pytest.mark.scenario("grace_at_2")
def test_answers_in_a_grace_period_go_on_with_a_warning_and_no_wait(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS)
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    types = finished.event_types()
    assert "wait.started" not in types
    assert "probe.finished" not in types
    turns = [e for e in finished.events() if e["type"] == "turn.finished"]
    assert [t["turn"] for t in turns] == [1, 2, 3]
    assert all(t["capacity"] == "available" for t in turns)
    assert turns[0]["usage_warning"] is None
    assert "past its limit (110% used), answered in a grace period" in turns[1]["usage_warning"]
    # One CLI process serves the turns, and it emits a rate-limit event only when the
    # state moves: a grace period that goes on is said on the turn it began.
    assert turns[2]["usage_warning"] is None
    requests = rehearsal.requests()
    assert {r["kind"] for r in requests} == {"turn"}
    assert {r["turn"] for r in requests if r["gate"] == "grace"} == {2, 3}


@pytest.mark.scenario("daily_cap_reset_then_until_lift")
def test_a_daily_cap_waits_for_its_announced_reset_and_without_one_is_probed_until_it_lifts(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    # Turn 2 meets the cap with its reset announced a second later; turn 3 meets it with
    # none, until the test lifts it. The probe interval (3 s) is longer than the first
    # wait (the reset and its grace, 2 s): no probe the interval brings can come before
    # that reset.
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    try:
        wait_for(
            lambda: any(
                r["kind"] == "probe" and r["gate_index"] == 1 for r in rehearsal.requests()
            ),
            "a probe refused by the daily cap without a reset",
            timeout=120,
        )
        rehearsal.server.lift()
        out, err = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    assert process.returncode == 0, err
    assert json.loads(out)["outcome"] == "done"
    (log,) = (rehearsal.project / ".claudeloop").rglob("events.jsonl")
    every = [json.loads(line) for line in log.read_text().splitlines()]
    events = [e for e in every if e["type"] in ("wait.started", "probe.finished")]
    assert not any("credits" in e["capacity"] for e in events)  # a wait, never credits

    # The reset announced: waited for, then one probe, which finds the day begun.
    assert events[0]["type"] == "wait.started"
    assert events[0]["capacity"].startswith(
        "the organization's usage is paused for the day (its daily cap) until "
    )
    assert (events[1]["type"], events[1]["capacity"]) == ("probe.finished", "available")
    requests = rehearsal.requests()
    gate = rehearsal.server.state()["gates"][0]
    refused = [r for r in requests if r["gate_index"] == 0]
    assert [(r["kind"], r["turn"]) for r in refused] == [("turn", 2)]
    after = requests[requests.index(refused[-1]) + 1 :]
    # Nothing until the announced reset, then one probe that finds the day begun.
    assert after[0]["kind"] == "probe"
    assert after[0]["gate"] is None
    assert datetime.fromisoformat(after[0]["at"]) >= datetime.fromisoformat(gate["ended_at"])

    # No reset announced: a wait in those words, probed until the cap lifts.
    second = events[2:]
    said = "the organization's usage is paused for the day (its daily cap), no reset announced"
    assert second[0]["type"] == "wait.started"
    assert all(e["capacity"] == said for e in second if e["type"] == "wait.started")
    probes = [e for e in second if e["type"] == "probe.finished"]
    assert probes[-1]["capacity"] == "available"
    assert len(probes) >= 2  # one refused at least, before the lift
    assert all(p["capacity"] == said for p in probes[:-1])
    refused = [r for r in requests if r["gate_index"] == 1]
    assert {(r["kind"], r["turn"]) for r in refused if r["kind"] == "turn"} == {("turn", 3)}
