"""A task longer than one command-line argument may be (128 KiB on Linux) goes in by
`--prompt -` and reaches Claude Code whole: the SDK writes it to the CLI's stdin as a
stream-json message, so no argv limit applies past claudeloop's own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal

pytestmark = pytest.mark.e2e

LONG_TASK = "Write step1.txt.\n" + "context line\n" * 20_000 + "THE END OF THE LONG TASK\n"


@pytest.mark.scenario("one_step")
def test_a_prompt_over_200_kb_on_stdin_reaches_claude_code_whole(rehearsal: Rehearsal) -> None:
    assert len(LONG_TASK.encode()) > 200_000
    finished = subprocess.run(
        [*rehearsal.command("run", "--prompt", "-", *FAST_WAITS), "--json"],
        input=LONG_TASK,
        env=rehearsal.env,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    # The session's transcript, as Claude Code wrote it, holds the task's last line.
    transcripts = list((Path(rehearsal.env["CLAUDE_CONFIG_DIR"]) / "projects").rglob("*.jsonl"))
    assert transcripts
    assert any("THE END OF THE LONG TASK" in path.read_text() for path in transcripts)
