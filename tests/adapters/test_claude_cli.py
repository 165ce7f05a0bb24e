"""The Claude Code executable outside a turn, with small executables of our own in its
place: a "not logged in" is believed only when the CLI says it plainly, and the CLI a
user runs through claudeloop gets its terminal and gives back its exit code."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import pytest

from claudeloop.adapters import claude_cli
from claudeloop.adapters.claude_cli import UNKNOWN, LoginStatus

NOT_LOGGED_IN = '{"loggedIn": false, "authMethod": "none", "configDirectory": "/c"}'


def executable(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "claude"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            f"echo '{NOT_LOGGED_IN}'; exit 1",
            LoginStatus(known=True, logged_in=False, method="none", config_directory="/c"),
        ),
        (
            """echo '{"loggedIn": true, "authMethod": "api_key_helper"}'""",
            LoginStatus(known=True, logged_in=True, method="api_key_helper"),
        ),
        # Anything short of a plain "not logged in" concludes nothing:
        (f"echo '{NOT_LOGGED_IN}'; exit 0", UNKNOWN),  # no failing exit with it
        ("echo 'error: unknown command auth'; exit 1", UNKNOWN),  # an older CLI
        ("echo '[false]'; exit 1", UNKNOWN),
        ("""echo '{"loggedIn": "no"}'; exit 1""", UNKNOWN),
        ("kill -9 $$", UNKNOWN),
    ],
    ids=["none", "helper", "exit 0", "older CLI", "a list", "not a bool", "killed"],
)
def test_login_status_believes_only_a_plain_answer(
    tmp_path: Path, body: str, expected: LoginStatus
) -> None:
    cli = executable(tmp_path, body)
    assert claude_cli.login_status(cli, dict(os.environ), tmp_path) == expected


def test_login_status_of_an_executable_that_does_not_run_is_unknown(tmp_path: Path) -> None:
    assert claude_cli.login_status(tmp_path / "missing", {}, tmp_path) == UNKNOWN


def test_login_status_is_asked_with_the_runs_environment_in_its_directory(
    tmp_path: Path,
) -> None:
    cli = executable(
        tmp_path,
        'printf \'{"loggedIn": true, "authMethod": "%s %s"}\' "$CLAUDE_CONFIG_DIR" "$PWD"',
    )
    env = claude_cli.environment(
        {"CLAUDE_CONFIG_DIR": "/profile"}, {"CLAUDE_CONFIG_DIR": "/ours", "CLAUDECODE": "1"}
    )
    assert env == {"CLAUDE_CONFIG_DIR": "/profile"}  # no CLAUDECODE: no nested session
    status = claude_cli.login_status(cli, {**os.environ, **env}, tmp_path)
    assert status.method == f"/profile {tmp_path}"


def test_the_cli_run_for_the_user_gives_back_its_exit_code(tmp_path: Path) -> None:
    cli = executable(tmp_path, 'echo "$@" > "$0.args"; exit 3')
    assert claude_cli.run_interactively(cli, ["auth", "login", "--sso"], dict(os.environ)) == 3
    assert (tmp_path / "claude.args").read_text() == "auth login --sso\n"


def test_a_cli_a_signal_ended_exits_as_a_shell_reports_it(tmp_path: Path) -> None:
    cli = executable(tmp_path, "kill -TERM $$")
    code = claude_cli.run_interactively(cli, [], dict(os.environ))
    assert code == 128 + signal.SIGTERM


def test_a_cli_that_does_not_run_is_one_line(tmp_path: Path) -> None:
    from claudeloop.application.errors import ClaudeloopError

    with pytest.raises(ClaudeloopError, match=r"missing does not run: No such file"):
        claude_cli.run_interactively(tmp_path / "missing", [], {})


def test_the_cli_is_the_configured_one_else_the_bundled_one(tmp_path: Path) -> None:
    assert claude_cli.executable(tmp_path / "mine") == tmp_path / "mine"
    bundled = claude_cli.bundled_executable()
    assert bundled is not None  # the claude-agent-sdk wheel bundles it
    assert claude_cli.executable(None) == bundled
