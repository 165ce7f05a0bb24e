"""The other headers the CLI reads, through the real CLI and the rehearsal API: an
answer in a grace period goes on with a warning, and the organization's daily cap is a
wait until the day's reset, never credits (docs/architecture/claude-code-signals.md)."""

from __future__ import annotations

import json
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


@pytest.mark.scenario("daily_cap_until_lift_at_2")
def test_a_daily_cap_without_a_reset_is_probed_as_a_wait_until_it_lifts(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS, "--window-probe-interval", "1s")
    wait_for(
        lambda: sum(r["kind"] == "probe" for r in rehearsal.requests()) >= 2,
        "two probes refused by the daily cap",
        timeout=120,
    )
    rehearsal.server.lift()
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, err
    assert json.loads(out)["outcome"] == "done"
    (log,) = (rehearsal.project / ".claudeloop").rglob("events.jsonl")
    every = [json.loads(line) for line in log.read_text().splitlines()]
    events = [e for e in every if e["type"] in ("wait.started", "probe.finished")]
    assert events[0]["type"] == "wait.started"
    said = "the organization's usage is paused for the day (its daily cap), no reset announced"
    assert events[0]["capacity"] == said
    assert not any("credits" in e["capacity"] for e in events)
    probes = [e for e in events if e["type"] == "probe.finished"]
    assert probes[-1]["capacity"] == "available"
    assert all(p["capacity"] == said for p in probes[:-1])
    refused = [r for r in rehearsal.requests() if r["gate"] == "daily_cap"]
    assert {(r["kind"], r["turn"]) for r in refused if r["kind"] == "turn"} == {("turn", 2)}


@pytest.mark.scenario("daily_cap_reset_at_2")
def test_a_daily_cap_with_its_reset_announced_waits_for_that_reset(rehearsal: Rehearsal) -> None:
    plan = write_plan(rehearsal.project)
    # A probe interval longer than the wait: the one probe is the one at the reset, not
    # one the interval brought first (on a quick machine, before the gate ended).
    finished = rehearsal.run(str(plan), *FAST_WAITS, "--window-probe-interval", "60s")
    assert finished.exit_code == 0, finished.stderr
    (wait,) = [e for e in finished.events() if e["type"] == "wait.started"]
    assert wait["capacity"].startswith(
        "the organization's usage is paused for the day (its daily cap) until "
    )
    requests = rehearsal.requests()
    gate = rehearsal.server.state()["gates"][0]
    refused = [r for r in requests if r["gate"] == "daily_cap"]
    assert [(r["kind"], r["turn"]) for r in refused] == [("turn", 2)]
    after = requests[requests.index(refused[-1]) + 1 :]
    # Nothing until the announced reset, then one probe that finds the day begun.
    assert after[0]["kind"] == "probe"
    assert datetime.fromisoformat(after[0]["at"]) >= datetime.fromisoformat(gate["ended_at"])
