"""`config show`, configuration errors of `run` and `resume`, the profile rule of
`resume`, and `doctor` without a model probe: in-process, no Claude Code turn."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.loop import Outcome, Phase, RunState
from tests.cli.conftest import Invocation
from tests.cli.test_user_errors import assert_one_line_error

Invoke = Callable[..., Invocation]

PROFILES = """
[profiles.local]
preset = "ollama"
model = "qwen3"
auth_token = "tok-secret-123456"

[profiles.bigger]
preset = "vllm"
model = "qwen3-235b"
"""


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_config_show_names_where_each_value_came_from(
    claudeloop: Invoke, tmp_path: Path, isolated_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_config.mkdir()
    (isolated_config / "config.toml").write_text('max_wait = "8h"\nmodel = "opus"\n')
    (tmp_path / "claudeloop.toml").write_text('profile = "local"\nmax_turns = 30\n' + PROFILES)
    monkeypatch.setenv("CLAUDELOOP_MAX_DOLLARS", "4.5")
    result = claudeloop("config", "show", "--cwd", tmp_path, "--json")
    assert result.exit_code == 0, result.err
    data = json.loads(result.out)
    settings = data["settings"]
    project_file = str(tmp_path / "claudeloop.toml")
    assert settings["profile"] == {"value": "local", "from": project_file}
    assert settings["max_turns"] == {"value": 30, "from": project_file}
    assert settings["max_dollars"] == {"value": 4.5, "from": "env CLAUDELOOP_MAX_DOLLARS"}
    assert settings["max_wait"] == {"value": "8h", "from": str(isolated_config / "config.toml")}
    assert settings["model"] == {"value": "qwen3", "from": f"[profiles.local] in {project_file}"}
    assert settings["permission_mode"] == {"value": "acceptEdits", "from": "default"}
    backend = data["backend"]
    assert backend["profile"] == "local"
    assert backend["base_url"] == "http://localhost:11434"
    assert backend["env"]["ANTHROPIC_AUTH_TOKEN"] == "****"
    assert data["profiles"]["local"]["auth_token"] == "****"
    assert "tok-secret-123456" not in result.out
    flagged = json.loads(
        claudeloop("config", "show", "--cwd", tmp_path, "--json", "--profile", "bigger").out
    )
    assert flagged["settings"]["profile"] == {"value": "bigger", "from": "flag --profile"}


def test_config_show_as_text_masks_secrets_too(claudeloop: Invoke, tmp_path: Path) -> None:
    (tmp_path / "claudeloop.toml").write_text('profile = "local"\n' + PROFILES)
    result = claudeloop("config", "show", "--cwd", tmp_path)
    assert result.exit_code == 0, result.err
    assert "tok-secret-123456" not in result.out
    assert "ANTHROPIC_AUTH_TOKEN=****" in result.out
    assert "max_turns               -  (default)" in result.out
    assert "marker fallback: off; cost: zero" in result.out


def test_config_show_refuses_a_bad_file_in_one_line(claudeloop: Invoke, tmp_path: Path) -> None:
    (tmp_path / "claudeloop.toml").write_text("max_turns = 0\n")
    result = claudeloop("config", "show", "--cwd", tmp_path)
    assert_one_line_error(result, "claudeloop.toml", "max_turns = 0", "a whole number above 0")


def test_run_refuses_a_bad_file_before_anything_starts(claudeloop: Invoke, tmp_path: Path) -> None:
    (tmp_path / "claudeloop.toml").write_text('[profiles.local]\npreset = "olama"\nmodel = "q"\n')
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    assert_one_line_error(result, "profiles.local.preset", '"olama"', "ollama, lmstudio")
    assert not (tmp_path / ".claudeloop").exists()


def test_run_refuses_a_profile_whose_token_variable_is_unset(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    (tmp_path / "claudeloop.toml").write_text(
        '[profiles.proxy]\npreset = "litellm"\nmodel = "m"\nauth_token_env = "NO_SUCH_TOKEN_X"\n'
    )
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path, "--profile", "proxy")
    assert_one_line_error(result, "auth_token_env", "NO_SUCH_TOKEN_X is not set")


def test_run_refuses_an_undefined_profile(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path, "--profile", "gpu")
    assert_one_line_error(result, "profile 'gpu' (from flag --profile) is not defined")


def test_a_bad_variable_is_a_one_line_error(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDELOOP_MAX_TURNS", "many")
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    assert_one_line_error(result, "CLAUDELOOP_MAX_TURNS", "many", "whole number above 0")


def test_wait_settings_that_contradict_each_other_name_their_sources(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    (tmp_path / "claudeloop.toml").write_text(
        'credits_probe_interval = "5m"\ncredits_probe_ceiling = "1m"\n'
    )
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    assert_one_line_error(
        result,
        "credits_probe_ceiling",
        f"credits_probe_ceiling from {tmp_path / 'claudeloop.toml'}",
    )


def finished_run(cwd: Path, profile: str) -> RunDirectory:
    run_id = "20261130-090000-bbbbbb"
    directory = RunDirectory.create(cwd, run_id)
    directory.save(
        RunRecord(
            run_id=run_id,
            spec=RunSpec(cwd=cwd, task="t", profile=profile, model="qwen3"),
            state=RunState(
                phase=Phase.FAILED,
                outcome=Outcome.BACKEND_MISCONFIGURED,
                reason="the model was not found",
            ),
            started_at=datetime.now(UTC),
            session_id="sess-1",
        )
    )
    return directory


def test_resume_refuses_a_profile_a_file_now_selects(claudeloop: Invoke, tmp_path: Path) -> None:
    finished_run(tmp_path, "local")
    (tmp_path / "claudeloop.toml").write_text('profile = "bigger"\n' + PROFILES)
    result = claudeloop("resume", "--cwd", tmp_path)
    assert_one_line_error(
        result,
        "run 20261130-090000-bbbbbb was made with profile 'local'",
        f"{tmp_path / 'claudeloop.toml'} selects 'bigger'",
        "--profile local to keep its backend or --profile bigger to switch",
    )


def test_resume_refuses_a_profile_a_variable_now_selects(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    finished_run(tmp_path, "local")
    (tmp_path / "claudeloop.toml").write_text(PROFILES)
    monkeypatch.setenv("CLAUDELOOP_PROFILE", "bigger")
    result = claudeloop("resume", "--cwd", tmp_path)
    assert_one_line_error(result, "env CLAUDELOOP_PROFILE selects 'bigger'")


def test_resume_refuses_a_profile_no_file_defines_any_more(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    finished_run(tmp_path, "gone")
    result = claudeloop("resume", "--cwd", tmp_path)
    assert_one_line_error(result, "made with profile 'gone', which no configuration file defines")


def test_doctor_without_a_probe_finds_nothing_listening(claudeloop: Invoke, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    (tmp_path / "claudeloop.toml").write_text(
        f'[profiles.local]\npreset = "llamacpp"\nbase_url = "{url}"\nmodel = "qwen3"\n'
    )
    result = claudeloop("doctor", "--cwd", tmp_path, "--profile", "local", "--no-probe")
    assert result.exit_code == 78
    lines = result.out.splitlines()
    names = [line[6:].split()[0] for line in lines[:-1]]
    assert names == [
        "cli", "sdk", "config", "profile", "credentials", "login", "backend", "model",
        "sandbox", "run",
    ]  # fmt: skip
    backend = next(line for line in lines if line[6:].startswith("backend"))
    assert backend == (
        f"FAIL  backend      nothing answers at {url} (connection refused) — fix: start "
        "`llama-server -m MODEL.gguf --jinja --port 8080` or fix `base_url` in [profiles.local]"
    )
    assert lines[-1] == "claudeloop doctor: 1 check failed (exit 78)"
    assert "skip  model        not probed (--no-probe)" in lines


def test_doctor_names_a_backend_without_the_password_of_its_url(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    url = f"http://me:canary-url-pw1@127.0.0.1:{unused_port()}"
    (tmp_path / "claudeloop.toml").write_text(
        f'[profiles.local]\npreset = "llamacpp"\nbase_url = "{url}"\nmodel = "qwen3"\n'
    )
    shown = claudeloop("doctor", "--cwd", tmp_path, "--profile", "local", "--no-probe")
    data = claudeloop("doctor", "--cwd", tmp_path, "--profile", "local", "--no-probe", "--json")
    assert shown.exit_code == data.exit_code == 78
    backend = next(line for line in shown.out.splitlines() if line[6:].startswith("backend"))
    assert backend.startswith("FAIL  backend      nothing answers at http://me:[redacted]@127")
    checks = {check["name"]: check for check in json.loads(data.out)["checks"]}
    assert "http://me:[redacted]@127" in checks["profile"]["detail"]
    assert "canary-url-pw1" not in shown.out + shown.err + data.out + data.err


@pytest.mark.parametrize(
    ("ends_in_hours", "line"),
    [
        (24 * 30, "ok    login        the stored claude.ai login ends by "),
        (24 * 2, "warn  login        the Claude login ends by "),
        (-1, "FAIL  login        the Claude login has probably ended "),
    ],
)
def test_doctor_says_when_the_stored_login_ends_against_the_longest_run(
    claudeloop: Invoke,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ends_in_hours: int,
    line: str,
) -> None:
    """The real CLI reads the login's end from its own store; with no max_wait a run
    could wait out a seven-day window, so a login ending in two days is warned of."""
    config = tmp_path / "claude"
    config.mkdir()
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    login = {
        "accessToken": "doctor-access-token-not-real",
        "refreshToken": "doctor-refresh-token-not-real",
        "expiresAt": now_ms + 8 * 3600 * 1000,
        "refreshTokenExpiresAt": now_ms + ends_in_hours * 3600 * 1000,
        "scopes": ["user:inference", "user:profile"],
        "subscriptionType": "max",
    }
    (config / ".credentials.json").write_text(json.dumps({"claudeAiOauth": login}))
    for name in ("CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{unused_port()}")
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    result = claudeloop("doctor", "--cwd", tmp_path, "--no-probe")
    (said,) = [shown for shown in result.out.splitlines() if shown[6:].startswith("login")]
    assert said.startswith(line), said
    if ends_in_hours < 24 * 30:
        assert said.endswith("— fix: log in again with `claudeloop login`"), said


def test_doctor_reports_an_invalid_file_and_exits_2(claudeloop: Invoke, tmp_path: Path) -> None:
    (tmp_path / "claudeloop.toml").write_text("colour = 1\n")
    result = claudeloop("doctor", "--cwd", tmp_path, "--json")
    assert result.exit_code == 2
    data = json.loads(result.out)
    checks = {check["name"]: check for check in data["checks"]}
    assert checks["config"]["status"] == "fail"
    assert "unknown key colour" in checks["config"]["detail"]
    assert checks["profile"]["status"] == "skip"
    assert checks["run dir"]["status"] == "ok"


def test_config_show_says_what_a_done_must_pass_and_the_brake(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    (tmp_path / "claudeloop.toml").write_text(
        'verify = ["make test", "ruff check ."]\nverify_timeout = "2m"\nreview = true\n'
    )
    shown = json.loads(claudeloop("config", "show", "--cwd", tmp_path, "--json").out)["settings"]
    assert shown["verify"]["value"] == ["make test", "ruff check ."]
    assert shown["verify_timeout"]["value"] == "2m"
    assert shown["review"]["value"] is True
    assert shown["stall_turns"] == {"value": 3, "from": "default"}
    assert shown["same_failure"] == {"value": 3, "from": "default"}
    text = claudeloop("config", "show", "--cwd", tmp_path).out
    # As claudeloop.toml writes them, not as Python prints them.
    assert 'verify                  ["make test", "ruff check ."]  (' in text
    assert 'verify_timeout          "2m"  (' in text
    assert "review                  true  (" in text
    assert "update_plan             false  (default)" in text
    assert "stall_turns             3  (default)" in text


def test_run_refuses_an_empty_verification_command_before_any_turn(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    (tmp_path / "claudeloop.toml").write_text('verify = [""]\n')
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    assert_one_line_error(result, "claudeloop.toml", "verify.0", "none empty")
    assert not (tmp_path / ".claudeloop").exists()


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--verify", ""), "is empty"),
        (("--verify", "pytest 'unclosed"), "cannot be split into words"),
        (("--stall-turns", "-1"), "--stall-turns"),
        (("--verify-timeout", "soon"), "--verify-timeout"),
    ],
)
def test_a_bad_verification_flag_is_one_line_before_any_turn(
    claudeloop: Invoke, tmp_path: Path, flags: tuple[str, ...], said: str
) -> None:
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path, *flags)
    assert_one_line_error(result, said)
    assert not (tmp_path / ".claudeloop").exists()


def test_verification_flags_and_keys_reach_the_runs_spec(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claudeloop.application.driving import WiredRun

    kept: list[RunRecord] = []

    def drive(wired: WiredRun, record: RunRecord, **_: object) -> RunRecord:
        wired.close()
        kept.append(record)
        return record

    monkeypatch.setattr("claudeloop.application.driving.drive_run", drive)
    (tmp_path / "claudeloop.toml").write_text('verify = ["make lint"]\nsame_failure = 4\n')
    claudeloop(
        "run", "--prompt", "x", "--cwd", tmp_path, "--verify", "make test", "--verify",
        "ruff check .", "--review", "--stall-turns", "0", "--verify-timeout", "90s",
    )  # fmt: skip
    (record,) = kept
    rules = record.spec.verify
    assert [check.text for check in rules.checks] == ["make test", "ruff check ."]
    assert rules.review is True
    assert (rules.stagnation.stall_turns, rules.stagnation.same_failure) == (0, 4)
    assert record.spec.verify_timeout_seconds == 90.0


def test_resume_changes_only_the_verification_settings_a_flag_or_variable_gives(
    tmp_path: Path,
) -> None:
    from claudeloop.adapters.config.loading import load_configuration
    from claudeloop.application.run_spec import set_by, verification
    from claudeloop.domain.loop import VerifyRules
    from claudeloop.domain.stagnation import StagnationSettings
    from claudeloop.domain.verification import CheckCommand

    started = RunSpec(
        cwd=tmp_path,
        task="x",
        verify=VerifyRules(
            checks=(CheckCommand.parse("make test"),),
            review=True,
            stagnation=StagnationSettings(stall_turns=5, same_failure=2),
        ),
        verify_timeout_seconds=30.0,
    )
    environ = {"CLAUDELOOP_CONFIG_DIR": str(tmp_path / "user"), "CLAUDELOOP_STALL_TURNS": "0"}
    config = load_configuration(cwd=tmp_path, flags={"verify": ["pytest -x"]}, environ=environ)
    rules, timeout = verification(set_by(config, kinds=("flag", "env")), started)
    assert [check.text for check in rules.checks] == ["pytest -x"]
    assert rules.review is True  # kept
    assert (rules.stagnation.stall_turns, rules.stagnation.same_failure) == (0, 2)
    assert timeout == 30.0


def test_doctor_says_whether_the_cli_is_the_tested_one(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claudeloop.domain.tested_cli import TESTED_CLAUDE_CODE, TESTED_SDK

    # The bundled CLI of this venv is the locked one (tests/test_lock.py).
    result = claudeloop("doctor", "--cwd", tmp_path, "--no-probe", "--json")
    (cli,) = [check for check in json.loads(result.out)["checks"] if check["name"] == "cli"]
    assert cli["status"] == "ok"
    assert cli["detail"].startswith(f"Claude Code {TESTED_CLAUDE_CODE} at ")
    assert cli["detail"].endswith(": the version this claudeloop was tested with")

    # Another one, newer: a note with the way back, not a failure.
    script = tmp_path / "claude"
    script.write_text("#!/bin/sh\necho '2.1.999 (Claude Code)'\n")
    script.chmod(0o755)
    monkeypatch.setenv("CLAUDELOOP_CLI_PATH", str(script))
    result = claudeloop("doctor", "--cwd", tmp_path, "--no-probe", "--json")
    (cli,) = [check for check in json.loads(result.out)["checks"] if check["name"] == "cli"]
    assert cli["status"] == "warn"
    assert cli["detail"].endswith(
        f": newer than {TESTED_CLAUDE_CODE}, the version this claudeloop was tested with"
    )
    assert f"pip install claude-agent-sdk=={TESTED_SDK}" in cli["fix"]
    text = claudeloop("doctor", "--cwd", tmp_path, "--no-probe")
    assert any(line.startswith("warn  cli ") for line in text.out.splitlines())


def test_version_names_the_bundled_cli_and_whether_it_is_the_tested_one(
    claudeloop: Invoke,
) -> None:
    from claudeloop.domain.tested_cli import TESTED_CLAUDE_CODE

    result = claudeloop("--version")
    assert result.exit_code == 0
    first, second = result.out.splitlines()
    assert first.startswith("claudeloop ")
    assert second == (
        f"Claude Code {TESTED_CLAUDE_CODE} (bundled with claude-agent-sdk): the version this "
        "claudeloop was tested with"
    )
