"""What claudeloop asks of a backend outside a turn (when its login ends, which account
it spends) is asked with the environment a run gives the CLI: ours with the backend's
over it, without CLAUDECODE, which would make the CLI think it runs inside a session."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from claudeloop.adapters.claude_code.backend import Backend, account, login_ends
from claudeloop.adapters.shared_capacity.board import account_key

ENDS = '{"loggedIn": true, "loginExpiresAt": "2030-01-02T03:04:05Z"}'


def test_the_login_is_asked_of_the_cli_with_the_runs_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = tmp_path / "claude"
    # Says when the login ends only when asked as a run would ask it.
    cli.write_text(
        "#!/bin/sh\n"
        '[ -z "$CLAUDECODE" ] && [ "$CLAUDE_CONFIG_DIR" = /profile ] && '
        f"[ \"$HOME\" = {tmp_path} ] && echo '{ENDS}'\n"
    )
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "/ours")
    monkeypatch.setenv("HOME", str(tmp_path))
    backend = Backend(env={"CLAUDE_CONFIG_DIR": "/profile"}, cli_path=cli)
    assert login_ends(backend) == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_the_account_is_the_backends_over_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://ours.example")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ours")
    backend = Backend(env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    theirs = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "sk-ours"}
    assert account(backend, "opus") == account_key(theirs, "opus")
    assert account(backend, "opus") != account_key({"ANTHROPIC_API_KEY": "sk-ours"}, "opus")
