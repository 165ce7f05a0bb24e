"""A stored claude.ai login that ends: warned of at the start, never waited past, with
the real CLI reading the login's end from its own store and the rehearsal API."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal, write_plan

pytestmark = pytest.mark.e2e


def store_login(rehearsal: Rehearsal, *, ends_in: timedelta) -> None:
    """A claude.ai login stored as `claude /login` leaves it (no token in the
    environment): its access token good for hours, its refresh chain ending `ends_in`
    from now (in the past when negative)."""
    rehearsal.env.pop("CLAUDE_CODE_OAUTH_TOKEN", None)
    config = Path(rehearsal.env["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    now_ms = int(time.time() * 1000)
    login = {
        "claudeAiOauth": {
            "accessToken": "e2e-access-token-not-real",
            "refreshToken": "e2e-refresh-token-not-real",
            "expiresAt": now_ms + 8 * 3600 * 1000,
            "refreshTokenExpiresAt": now_ms + int(ends_in.total_seconds() * 1000),
            "scopes": ["user:inference", "user:profile", "user:sessions:claude_code"],
            "subscriptionType": "max",
        }
    }
    path = config / ".credentials.json"
    path.write_text(json.dumps(login))
    path.chmod(0o600)


@pytest.mark.scenario("one_step")
def test_a_login_that_ends_before_the_run_could_is_warned_of_and_the_run_goes_on(
    rehearsal: Rehearsal,
) -> None:
    store_login(rehearsal, ends_in=timedelta(days=2))
    plan = write_plan(rehearsal.project, items=1)
    # No --max-wait: the run could wait out a seven-day window, past the login's end.
    finished = rehearsal.run(str(plan))
    assert finished.exit_code == 0, finished.stderr
    warnings = [line for line in finished.stderr.splitlines() if "login ends by" in line]
    assert len(warnings) == 1, finished.stderr
    assert warnings[0].startswith("claudeloop: warning: the Claude login ends by ")
    assert "`claudeloop login`" in warnings[0]


@pytest.mark.scenario("window_five_hours_at_1")
def test_a_window_that_reopens_after_the_login_ends_is_never_waited_for(
    rehearsal: Rehearsal,
) -> None:
    store_login(rehearsal, ends_in=timedelta(hours=1))
    plan = write_plan(rehearsal.project, items=1)
    finished = rehearsal.run(str(plan), *FAST_WAITS)
    assert finished.exit_code == 77, finished.stderr
    result = finished.result
    assert result["outcome"] == "auth_failed"
    assert "the Claude login ends at" in result["reason"]
    assert "`claudeloop login`" in result["reason"]
    # The refused turn, then nothing: no wait begun, no probe sent.
    assert "wait.started" not in finished.event_types()
    kinds = [request["kind"] for request in rehearsal.requests()]
    assert "probe" not in kinds
    assert (finished.run_directory() / "summary.md").read_text().count("claudeloop login") >= 1
    status = rehearsal.claudeloop("status")
    assert "claudeloop login" in status.stdout, status.stdout


@pytest.mark.scenario("one_step")
def test_a_login_whose_end_has_passed_ends_the_run_before_any_turn(
    rehearsal: Rehearsal,
) -> None:
    store_login(rehearsal, ends_in=-timedelta(hours=1))
    plan = write_plan(rehearsal.project, items=1)
    finished = rehearsal.run(str(plan), *FAST_WAITS)
    assert finished.exit_code == 77, finished.stderr
    assert "the Claude login ended at" in finished.result["reason"]
    assert "has probably ended" in finished.stderr
    assert [r for r in rehearsal.requests() if r["kind"] == "turn"] == []
    assert not (rehearsal.project / "step1.txt").exists()
