"""What a person reads in the morning works when pasted: summary.md's "To continue"
command after a budget cap goes on past the cap, through the real CLI."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal

pytestmark = pytest.mark.e2e


@pytest.mark.scenario("three_steps")
def test_the_continue_command_after_a_turn_cap_goes_on_past_the_cap(
    rehearsal: Rehearsal,
) -> None:
    capped = rehearsal.run("--prompt", "Write the three steps", "--max-turns", "2", *FAST_WAITS)
    assert capped.exit_code == 3, capped.stderr
    assert capped.result["turns"] == 2
    summary = (capped.run_directory() / "summary.md").read_text()
    found = re.search(r"## To continue\n\n```sh\n(?P<command>.+)\n```", summary)
    assert found is not None, summary
    words = shlex.split(found["command"])
    assert words[:2] == ["claudeloop", "resume"]
    # The command exactly as printed, with claudeloop run from this checkout.
    resumed = subprocess.run(
        [sys.executable, "-m", "claudeloop", *words[1:]],
        env=rehearsal.env,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    # It says the turn it resumes at, which is not "before its first turn".
    said = next(line for line in resumed.stderr.splitlines() if " resumed in " in line)
    assert said.endswith("at turn 3)"), said
    assert "before its first turn" not in said
    assert "claudeloop: done (exit 0)" in resumed.stderr
    assert (rehearsal.project / "step3.txt").exists()
