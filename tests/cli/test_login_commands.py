"""`claudeloop login` and `claudeloop claude ARGS` through the entry point, with a small
executable of our own as the CLI (CLAUDELOOP_CLI_PATH): what it is given, and that its
exit code is claudeloop's. tests/e2e/test_login.py runs the real bundled CLI."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from claudeloop.adapters import backend_advice
from claudeloop.adapters.credentials import CREDENTIAL_VARIABLES, PROVIDER_VARIABLES
from tests.cli.conftest import Invocation
from tests.cli.test_run_directory_commands import waiting_run

Invoke = Callable[..., Invocation]

# It says what it was given: its arguments and the variables a profile sets.
SAYS = (
    'echo "args: $*" > "$0.said"; echo "config: $CLAUDE_CONFIG_DIR" >> "$0.said"; '
    'exit "${FAKE_EXIT:-0}"'
)


@pytest.fixture
def fake_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "fake-claude"
    script.write_text(f"#!/bin/sh\n{SAYS}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CLAUDELOOP_CLI_PATH", str(script))
    return script


def said(fake_cli: Path) -> str:
    told = fake_cli.with_name(fake_cli.name + ".said")
    return told.read_text() if told.exists() else ""


def test_claude_passes_every_argument_and_gives_back_the_exit_code(
    claudeloop: Invoke, fake_cli: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_EXIT", "5")
    result = claudeloop("claude", "--version", "-p", "hi", "--model", "m")
    assert result.exit_code == 5
    assert "args: --version -p hi --model m" in said(fake_cli)


def test_claude_runs_in_the_selected_profiles_environment(
    claudeloop: Invoke,
    fake_cli: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "claudeloop.toml").write_text(
        '[profiles.work]\nextra_env = { CLAUDE_CONFIG_DIR = "/work-login" }\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLAUDELOOP_PROFILE", "work")
    assert claudeloop("claude", "auth", "status").exit_code == 0
    assert "config: /work-login" in said(fake_cli)


def test_login_runs_the_clis_auth_login_with_its_options(
    claudeloop: Invoke, fake_cli: Path, tmp_path: Path
) -> None:
    result = claudeloop("login", "--cwd", tmp_path, "--console", "--email", "a@b.c", "--x")
    assert result.exit_code == 0
    assert "args: auth login --console --email a@b.c --x" in said(fake_cli)


def test_login_refuses_a_local_profile_in_one_line(
    claudeloop: Invoke, fake_cli: Path, tmp_path: Path
) -> None:
    (tmp_path / "claudeloop.toml").write_text(
        '[profiles.gpu]\nbase_url = "http://127.0.0.1:8080"\nmodel = "m"\n'
    )
    result = claudeloop("login", "--cwd", tmp_path, "--profile", "gpu")
    assert result.exit_code == 2
    assert result.err == (
        "claudeloop: error: profile 'gpu' sends the turns to http://127.0.0.1:8080, "
        "which needs no Claude login; pick another with --profile\n"
    )
    assert "args:" not in said(fake_cli)


@pytest.fixture
def no_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No key, no token, no login: the bundled CLI's config directory is empty."""
    for name in (*CREDENTIAL_VARIABLES, *PROVIDER_VARIABLES, "CLAUDELOOP_CLI_PATH"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    return config


def test_a_run_without_credentials_starts_nothing(
    claudeloop: Invoke, tmp_path: Path, no_credentials: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    result = claudeloop("run", "--prompt", "x", "--cwd", project)
    assert result.exit_code == 77
    assert result.err == (
        f"claudeloop: error: {backend_advice.no_credentials(str(no_credentials))}\n"
    )
    assert not (project / ".claudeloop").exists()


def test_a_resume_without_credentials_leaves_the_run_as_it_was(
    claudeloop: Invoke, tmp_path: Path, no_credentials: Path
) -> None:
    run = waiting_run(tmp_path)
    before = (run.path / "state.json").read_text()
    for _ in range(2):  # the lock is let go: the second is refused alike
        result = claudeloop("resume", "--cwd", tmp_path)
        assert result.exit_code == 77
        assert result.err.startswith("claudeloop: error: no Claude credentials found (")
        assert result.err.count("\n") == 1
    assert (run.path / "state.json").read_text() == before


def test_doctor_only_warns_when_the_cli_cannot_tell(
    claudeloop: Invoke, tmp_path: Path, no_credentials: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another executable, or an older CLI without `auth status`: no credential variable
    set is no proof of none (a false "no credentials" is worse than none)."""
    script = tmp_path / "older-claude"
    script.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && echo "1.0.0 (Claude Code)" && exit 0\n'
        "echo 'error: unknown command' >&2; exit 1\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CLAUDELOOP_CLI_PATH", str(script))
    result = claudeloop("doctor", "--cwd", tmp_path, "--no-probe", "--json")
    checks = {check["name"]: check for check in json.loads(result.out)["checks"]}
    assert checks["credentials"]["status"] == "warn"
    fix = checks["credentials"]["fix"]
    assert fix.startswith("if the probe is refused: run `claudeloop login`")
    assert result.exit_code != 77
