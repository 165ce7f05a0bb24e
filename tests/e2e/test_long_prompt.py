"""A task longer than one command-line argument may be (128 KiB on Linux) goes in by
`--prompt -` and reaches Claude Code whole: the SDK writes it to the CLI's stdin as a
stream-json message, so no argv limit applies past claudeloop's own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal
from tests.e2e.patience import COMMAND

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
        timeout=COMMAND,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    # The session's transcript, as Claude Code wrote it, holds the task's last line.
    transcripts = list((Path(rehearsal.env["CLAUDE_CONFIG_DIR"]) / "projects").rglob("*.jsonl"))
    assert transcripts
    assert any("THE END OF THE LONG TASK" in path.read_text() for path in transcripts)


@pytest.mark.scenario("prompt_too_long")
def test_a_prompt_the_model_cannot_take_ends_the_run_at_once(rehearsal: Rehearsal) -> None:
    finished = rehearsal.run("--prompt", "Write step1.txt", *FAST_WAITS, timeout=COMMAND)
    assert finished.exit_code == 78, finished.stderr
    result = finished.result
    assert result["outcome"] == "backend_misconfigured"
    assert result["reason"].startswith(
        "the prompt is too long for the model's context window (Prompt is too long"
    )
    assert "give a shorter task" in result["reason"]
    assert finished.event_types().count("turn.started") == 1
    assert [e["exit_code"] for e in finished.events() if e["type"] == "run.finished"] == [78]
