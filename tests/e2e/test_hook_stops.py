"""A hook of the user's that stops Claude Code (`prevent_continuation`) stops the run,
with the real CLI running the project's hook and the rehearsal API serving the turns."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal, write_plan

pytestmark = pytest.mark.e2e


@pytest.mark.scenario("three_steps")
def test_a_hook_that_stops_claude_code_ends_the_run_blocked_on_its_reason(
    rehearsal: Rehearsal,
) -> None:
    # The project's UserPromptSubmit hook lets the first prompt through, then says stop
    # once step1.txt exists (as a hook guarding a red build would).
    stop = json.dumps({"continue": False, "stopReason": "step1.txt needs a review by a person"})
    step1 = rehearsal.project / "step1.txt"
    hook = {"type": "command", "command": f"test -f {step1} && echo '{stop}' || true"}
    settings = {"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}}
    (rehearsal.project / ".claude").mkdir()
    (rehearsal.project / ".claude" / "settings.json").write_text(json.dumps(settings))
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS)
    assert finished.exit_code == 1, finished.stderr
    result = finished.result
    assert result["outcome"] == "blocked", result["reason"]
    said = "a hook stopped Claude Code: step1.txt needs a review by a person"
    assert said in result["reason"]
    # The second prompt never reached the model, and no third was sent.
    assert {r["turn"] for r in rehearsal.requests() if r["kind"] == "turn"} == {1}
    verdicts = [e["verdict"] for e in finished.events() if e["type"] == "turn.finished"]
    assert verdicts == ["continue", "blocked"]
    assert said in (finished.run_directory() / "summary.md").read_text()
    status = rehearsal.claudeloop("status")
    assert said in status.stdout, status.stdout
