"""What `doctor` answers a script and a person: the exit code of a machine with no
credentials (the one a run started there ends with), the CLI found and the sandbox's
posture as --json fields, and a profile no file defines with the profiles there are."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from claudeloop.domain.tested_cli import TESTED_CLAUDE_CODE
from tests.cli.conftest import Invocation
from tests.cli.test_config_commands import unused_port

Invoke = Callable[..., Invocation]


def test_no_credentials_exits_77_as_a_run_would_even_with_the_backend_unreachable(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "claude"
    config.mkdir()
    for name in ("CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{unused_port()}")
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    result = claudeloop("doctor", "--cwd", tmp_path, "--no-probe", "--json")
    checks = {check["name"]: check["status"] for check in json.loads(result.out)["checks"]}
    assert (checks["credentials"], checks["backend"]) == ("fail", "fail")
    assert result.exit_code == 77
    assert json.loads(result.out)["exit_code"] == 77
    # And what --help says of it.
    helped = " ".join(claudeloop("doctor", "--help").out.split())
    assert "77 no credentials, or they were refused" in helped
    assert "When several fail: the first of 2, 77, 78." in helped


def test_json_gives_the_cli_found_and_the_sandboxs_posture_as_fields(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = json.loads(claudeloop("doctor", "--cwd", tmp_path, "--no-probe", "--json").out)
    cli = data["cli"]
    assert (cli["version"], cli["standing"], cli["tested_version"]) == (
        TESTED_CLAUDE_CODE,
        "tested",
        TESTED_CLAUDE_CODE,
    )
    assert cli["found"] == "bundled with claude-agent-sdk"
    assert Path(cli["path"]).is_file()
    assert data["sandbox"]["posture"] in ("confined", "refused")

    # A newer CLI than the tested one, and the sandbox off in the project's file.
    script = tmp_path / "claude"
    script.write_text("#!/bin/sh\necho '2.1.999 (Claude Code)'\n")
    script.chmod(0o755)
    monkeypatch.setenv("CLAUDELOOP_CLI_PATH", str(script))
    (tmp_path / "claudeloop.toml").write_text('sandbox = "off"\n')
    data = json.loads(claudeloop("doctor", "--cwd", tmp_path, "--no-probe", "--json").out)
    assert data["cli"] == {
        "version": "2.1.999",
        "path": str(script),
        "found": "CLAUDELOOP_CLI_PATH",
        "standing": "newer",
        "tested_version": TESTED_CLAUDE_CODE,
    }
    assert data["sandbox"] == {"posture": "off", "why": None, "fix": None}

    # No CLI that runs: no CLI found, said as null.
    monkeypatch.setenv("CLAUDELOOP_CLI_PATH", str(tmp_path / "nothing-here"))
    data = json.loads(claudeloop("doctor", "--cwd", tmp_path, "--no-probe", "--json").out)
    assert data["cli"] is None


def test_a_refused_sandbox_says_why_and_the_fix_as_fields(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no bubblewrap, no socat on it
    data = json.loads(claudeloop("doctor", "--cwd", tmp_path, "--no-probe", "--json").out)
    sandbox = data["sandbox"]
    assert sandbox["posture"] == "refused"
    assert "not installed" in sandbox["why"]
    assert sandbox["fix"]


@pytest.mark.parametrize(
    ("toml", "fix"),
    [
        (
            "",
            "no profile is defined: select `default` (Claude Code's own environment), or add "
            "a [profiles.nosuch] table with its base_url and model (docs/guides/local-models.md)",
        ),
        (
            '[profiles.local]\nbase_url = "http://127.0.0.1:9"\nmodel = "qwen3"\n'
            '[profiles.lab]\nbase_url = "http://127.0.0.1:9"\nmodel = "qwen3"\n',
            "select one that is defined (lab, local) or `default` (Claude Code's own "
            "environment), or add a [profiles.nosuch] table with its base_url and model "
            "(docs/guides/local-models.md)",
        ),
    ],
)
def test_a_profile_no_file_defines_names_the_ones_there_are(
    claudeloop: Invoke, tmp_path: Path, toml: str, fix: str
) -> None:
    (tmp_path / "claudeloop.toml").write_text(toml)
    result = claudeloop("doctor", "--cwd", tmp_path, "--profile", "nosuch", "--no-probe", "--json")
    assert result.exit_code == 2
    (config,) = [check for check in json.loads(result.out)["checks"] if check["name"] == "config"]
    assert config["status"] == "fail"
    assert config["detail"].startswith("profile 'nosuch' (from flag --profile) is not defined")
    assert config["fix"] == fix
