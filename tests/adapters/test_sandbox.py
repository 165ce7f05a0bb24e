"""The boundary on this machine: what Claude Code is told, and bubblewrap around a check,
run for real."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

from claudeloop.adapters.sandbox import (
    CheckBoundary,
    claude_settings,
    home_reads,
    secret_names,
    unavailable,
)
from claudeloop.domain.confinement import CommandsRefused, Confined, Unconfined

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None and os.environ.get("CI") != "true",
    reason="bubblewrap is not installed (make test installs it)",
)


def test_confined_settings_hold_every_line() -> None:
    settings = claude_settings(
        Confined(allow_domains=("pypi.org",)),
        run_dir=Path("/p/.claudeloop"),
        reads=["/h/.pyenv"],
        secret_names={"MY_TOKEN", "ANTHROPIC_API_KEY"},
    )
    assert settings is not None
    sandbox = settings["sandbox"]
    assert sandbox["enabled"] is True
    assert sandbox["autoAllowBashIfSandboxed"] is True
    assert sandbox["allowUnsandboxedCommands"] is False
    assert sandbox["failIfUnavailable"] is True
    assert sandbox["network"] == {"allowedDomains": ["pypi.org"]}
    assert sandbox["filesystem"] == {"allowRead": ["/h/.pyenv"], "denyWrite": ["/p/.claudeloop"]}
    assert sandbox["credentials"]["envVars"] == [
        {"name": "ANTHROPIC_API_KEY", "mode": "deny"},
        {"name": "MY_TOKEN", "mode": "deny"},
    ]
    assert settings["permissions"] == {
        "blockReadsOutsideWorkingDirectories": True,
        "deny": ["Edit(//p/.claudeloop/**)"],
    }


def test_without_a_sandbox_the_shell_is_taken_away_and_off_says_nothing() -> None:
    refused = claude_settings(
        CommandsRefused(why="w", fix="f"), run_dir=Path("/p/.claudeloop"), reads=[], secret_names=()
    )
    assert refused is not None
    assert refused["sandbox"] == {"enabled": False}
    assert refused["permissions"]["deny"][0] == "Bash"
    assert refused["permissions"]["blockReadsOutsideWorkingDirectories"] is True
    assert claude_settings(Unconfined(), run_dir=Path("/p"), reads=[], secret_names=()) is None


def test_secret_names_follow_the_redactors_rule() -> None:
    assert secret_names({"PATH": "x", "MY_SERVICE_PAT": "y"}, {"DB_PASS": "z", "PWD": "/"}) == {
        "MY_SERVICE_PAT",
        "DB_PASS",
    }


def test_home_reads_are_the_toolchains_that_exist_and_what_was_named(tmp_path: Path) -> None:
    (tmp_path / ".pyenv").mkdir()
    (tmp_path / ".cargo" / "bin").mkdir(parents=True)
    (tmp_path / ".cargo" / "credentials.toml").write_text("secret")
    (tmp_path / "sdk").mkdir()
    reads = home_reads(tmp_path, [str(tmp_path / "sdk"), str(tmp_path / "missing")])
    assert reads == [
        str(tmp_path / ".pyenv"),
        str(tmp_path / ".cargo" / "bin"),
        str(tmp_path / "sdk"),
    ]


@pytest.mark.skipif(platform.system() != "Linux", reason="bubblewrap is Linux's sandbox")
def test_no_bubblewrap_on_path_is_said_with_the_install_command(tmp_path: Path) -> None:
    missing = unavailable({"PATH": str(tmp_path)})
    assert missing is not None
    assert missing.why == "bubblewrap and socat not installed"
    assert "bubblewrap socat" in missing.fix or "packager" in missing.fix


@needs_bwrap
def test_a_check_in_bubblewrap_runs_the_tests_and_nothing_else(tmp_path: Path) -> None:
    home, work, outside = tmp_path / "home", tmp_path / "work", tmp_path / "outside"
    for folder in (home / ".ssh", home / ".pyenv", work / ".claudeloop", outside):
        folder.mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("KEY-CANARY")
    (home / ".pyenv" / "tool").write_text("TOOL-READABLE")
    boundary = CheckBoundary(
        work_dir=work,
        run_dir=work / ".claudeloop",
        home=home,
        reads=(str(home / ".pyenv"),),
        bwrap=shutil.which("bwrap") or "bwrap",
    )
    script = (
        f"cat {home}/.ssh/id_rsa; cat {home}/.pyenv/tool; echo made > made.txt; "
        f"echo x > {outside}/x || echo outside-refused; "
        "echo x > .claudeloop/x || echo own-refused; "
        "echo t > /tmp/t && cat /tmp/t; "
        '[ -z "$MY_TOKEN" ] && echo no-token; '
        "ls /proc | grep -c '^[0-9]'"
    )
    env = boundary.environment({**os.environ, "MY_TOKEN": "tok-canary"})
    done = subprocess.run(
        boundary.wrap(["sh", "-c", script]), env=env, capture_output=True, text=True, check=False
    )
    said = done.stdout + done.stderr
    assert "KEY-CANARY" not in said
    assert "TOOL-READABLE" in said
    assert (work / "made.txt").read_text() == "made\n"
    assert "outside-refused" in said
    assert list(outside.iterdir()) == []
    assert "own-refused" in said
    assert "no-token" in said
    assert not (tmp_path / "t").exists()
    # Its own pids: the shell and what it ran, not the machine's.
    assert int(done.stdout.strip().splitlines()[-1]) < 10
