"""What the ledger counts, with the real CLI. That it equals what the rehearsal API served
after a kill -9 during a turn, a wait or the start-up is asserted by the kill tests of
test_run_directory.py and test_hangups_and_early_kills.py."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Rehearsal, write_plan

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
