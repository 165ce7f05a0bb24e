from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from claudeloop.cli.main import main


@pytest.fixture(autouse=True)
def isolated_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No test reads the real user's config.toml or their CLAUDELOOP_* variables."""
    for name in list(os.environ):
        if name.startswith("CLAUDELOOP_") and name != "CLAUDELOOP_CLI_PATH":
            monkeypatch.delenv(name)
    user_config = tmp_path / "user-config"
    monkeypatch.setenv("CLAUDELOOP_CONFIG_DIR", str(user_config))
    # Nor shares capacity with the user's real loops.
    monkeypatch.setenv("CLAUDELOOP_STATE_DIR", str(tmp_path / "state"))
    # Should a test start a turn by mistake, it meets a closed loopback port at once,
    # never the real service.
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    # And has credentials, so a run gets past the check for none at all: a key that only
    # ever meets that closed port. The tests of no credentials delete it.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "cli-tests-key-not-real")
    # Nor the user's own Claude login: a run asks the CLI when the stored one ends.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    return user_config


@dataclass
class Invocation:
    exit_code: int
    out: str
    err: str


@pytest.fixture
def claudeloop(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Runs the real entry point in-process and returns exit code, stdout and stderr."""

    def invoke(*args: str | Path) -> Invocation:
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        captured = capsys.readouterr()
        return Invocation(code, captured.out, captured.err)

    return invoke
