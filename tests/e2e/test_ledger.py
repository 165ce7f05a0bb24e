"""The ledger after kill -9 and resume equals what the rehearsal API served, with the real
CLI: turns, attempts and dollars, killed during a turn, during a wait and at start-up.

The price of one answer is what the CLI reported for the run's first turn (a first turn
of a first process has nothing restored to confuse it); every answered request costs the
same (the scenario's fixed usage).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import FAST_WAITS, Finished, Rehearsal, wait_for, write_plan
from tests.e2e.test_run_directory import has_state, kill_hard, phase

pytestmark = pytest.mark.e2e


def events_of(project: Path) -> list[dict[str, Any]]:
    (run,) = list((project / ".claudeloop" / "runs").iterdir())
    lines = (run / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def assert_ledger_is_what_was_served(finished: Finished, rehearsal: Rehearsal) -> None:
    assert finished.exit_code == 0, finished.stderr
    result = finished.result
    served = rehearsal.server.state()
    requests = served["requests"]
    answered = [r for r in requests if r["answered"] and r["kind"] in ("turn", "probe")]
    refused = [r for r in requests if r["kind"] == "turn" and r["status"] == 429]
    events = finished.events()
    first = next(e for e in events if e["type"] == "turn.finished")
    first_answers = [r for r in answered if r["kind"] == "turn" and r["turn"] == 1]
    price = first["cost_usd"] / len(first_answers)

    assert result["turns"] == served["verdicts"]
    assert result["attempts"] == served["verdicts"] + len(refused)
    assert result["dollars"] == pytest.approx(price * len(answered), rel=1e-6)
    finished_turns = [e["turn"] for e in events if e["type"] == "turn.finished"]
    assert len(finished_turns) == len(set(finished_turns)), finished_turns


@pytest.mark.scenario("stall_at_2")
def test_killed_during_a_turn_the_resumed_run_bills_every_turn_served(
    rehearsal: Rehearsal,
) -> None:
    # The fresh CLI after the kill restores an older running total: turns billed as a
    # difference of totals came to $0.
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    wait_for(
        lambda: any(r["gate"] == "stall" for r in rehearsal.requests()), "turn 2 to be in flight"
    )
    kill_hard(process)
    finished = rehearsal.claudeloop("resume")
    assert_ledger_is_what_was_served(finished, rehearsal)
    interrupted = [e for e in finished.events() if e["type"] == "turn.interrupted"]
    assert [e["turn"] for e in interrupted] == [2]


@pytest.mark.scenario("window_until_lift_at_2")
def test_killed_during_a_wait_the_resumed_run_bills_every_turn_and_probe_served(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    wait_for(lambda: phase(rehearsal.project) == "waiting", "the run to wait")
    kill_hard(process)
    rehearsal.server.lift()
    finished = rehearsal.claudeloop("resume")
    assert_ledger_is_what_was_served(finished, rehearsal)


@pytest.mark.scenario("three_steps")
def test_killed_at_start_up_the_resumed_run_bills_every_turn_served(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    wait_for(lambda: has_state(rehearsal.project), "the run to save its first record")
    kill_hard(process)
    finished = rehearsal.claudeloop("resume")
    assert_ledger_is_what_was_served(finished, rehearsal)


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
