"""A run stopped by its turn cap, resumed without raising it: the real CLI against the
rehearsal API. The resume says which cap holds the run, and how to lift it, before it
resumes anything; raised as it says, the run goes on."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal, write_plan
from tests.e2e.patience import COMMAND

pytestmark = pytest.mark.e2e


@pytest.mark.scenario("three_steps")
def test_a_resume_at_the_turn_cap_sends_nothing_and_names_the_cap_and_the_flag(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    first = rehearsal.run(str(plan), *FAST_WAITS, "--max-turns", "2", timeout=COMMAND)
    assert first.exit_code == 3, first.stderr
    run_id = first.result["run_id"]
    sent = len(rehearsal.requests())
    events = len(first.events())

    again = rehearsal.claudeloop("resume", timeout=COMMAND)
    assert again.exit_code == 3, again.stderr
    (told,) = again.stderr.splitlines()
    assert told.startswith(
        f"claudeloop: run {run_id} is at its cap (--max-turns 2, 2 turns answered): "
        "no turn was sent. To go on, raise it above 2: "
    ), told
    assert again.result["refused"] == told.removeprefix("claudeloop: ")
    assert (again.result["outcome"], again.result["exit_code"]) == ("budget_exhausted", 3)
    # Said before anything resumed: no request, no event, no "resumed" line.
    assert len(rehearsal.requests()) == sent
    assert len(first.events()) == events
    assert "resumed" not in again.stderr

    # The command it names, pasted, goes on past the cap to the end of the plan.
    words = shlex.split(told.split(": ", 3)[-1])
    assert words[:3] == ["claudeloop", "resume", run_id]
    assert words[words.index("--max-turns") + 1] == "4"
    resumed = subprocess.run(
        [sys.executable, "-m", "claudeloop", *words[1:], *FAST_WAITS],
        env=rehearsal.env,
        capture_output=True,
        text=True,
        timeout=COMMAND,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert [e["type"] for e in first.events()].count("run.resumed") == 1
