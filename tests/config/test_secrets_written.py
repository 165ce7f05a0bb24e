"""The views of runs mask every secret the configuration files hold as written, read
without checking the settings: every profile's, not the selected one's alone, and a
file's secrets even when a setting beside them is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from claudeloop.adapters.claude_code.backend import backend_for
from claudeloop.adapters.config.files import secrets_written
from claudeloop.adapters.config.reading import (
    backend_profile,
    configuration,
    detours,
    notify_targets,
)
from claudeloop.adapters.redaction import MASK, Redactor
from claudeloop.adapters.run_secrets import run_redactor
from claudeloop.application.records import RunSpec

PROJECT = """\
notify = ["json://me:notify-pass-1@127.0.0.1:9/hook"]

[profiles.local]
preset = "ollama"
base_url = "http://user:url-pass-2@127.0.0.1:11434"
model = "qwen3"
auth_token = "local-token-3abc"

[profiles.box]
base_url = "http://127.0.0.1:4000"
model = "m"
auth_token_env = "BOX_KEY"
extra_env = { DEPLOY_SECRET = "extra-secret-4", PLAIN = "not-a-secret" }
"""


@pytest.fixture
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("CLAUDELOOP_CONFIG_DIR", str(tmp_path / "user"))
    monkeypatch.setenv("BOX_KEY", "box-key-value-5")
    monkeypatch.setenv("CLAUDELOOP_NOTIFY", "json://u:env-notify-pass-6@127.0.0.1:9/h")
    return {
        "CLAUDELOOP_CONFIG_DIR": str(tmp_path / "user"),
        "BOX_KEY": "box-key-value-5",
        "CLAUDELOOP_NOTIFY": "json://u:env-notify-pass-6@127.0.0.1:9/h",
        "MY_SERVICE_PAT": "own-pat-value-7",
    }


def _masks(secrets: tuple[str, ...], text: str) -> str:
    return Redactor(secrets).text(text)


def test_every_profile_s_token_and_every_url_s_password_is_known(
    tmp_path: Path, environment: dict[str, str]
) -> None:
    (tmp_path / "claudeloop.toml").write_text(PROJECT)
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "config.toml").write_text(
        '[profiles.spare]\nbase_url = "http://127.0.0.1:1"\nauth_token = "user-file-token-8"\n'
    )
    found = secrets_written(tmp_path, environment)
    text = (
        "notify-pass-1 url-pass-2 local-token-3abc extra-secret-4 box-key-value-5 "
        "env-notify-pass-6 own-pat-value-7 user-file-token-8"
    )
    assert _masks(found, text) == " ".join([MASK] * 8)
    assert _masks(found, "not-a-secret qwen3") == "not-a-secret qwen3"


def test_a_file_whose_settings_do_not_load_still_has_its_secrets_masked(
    tmp_path: Path, environment: dict[str, str]
) -> None:
    (tmp_path / "claudeloop.toml").write_text(
        'max_turns = "5"\n[profiles.x]\nauth_token = "kept-token-9abc"\n'
    )
    assert _masks(secrets_written(tmp_path, environment), "kept-token-9abc") == MASK


def test_a_file_that_is_no_toml_costs_only_its_own_secrets(
    tmp_path: Path, environment: dict[str, str]
) -> None:
    (tmp_path / "claudeloop.toml").write_text("this is [ not toml\n")
    found = secrets_written(tmp_path, environment)
    assert _masks(found, "own-pat-value-7") == MASK


@pytest.mark.parametrize("profile", [None, "local", "box"])
def test_it_knows_at_least_what_a_run_of_each_profile_knows(
    tmp_path: Path, environment: dict[str, str], profile: str | None
) -> None:
    # The run's own redactor, made from the checked settings, is the reference: every
    # secret it masks, the views mask too.
    (tmp_path / "claudeloop.toml").write_text(PROJECT)
    config = configuration(tmp_path, {"profile": profile})
    backend = backend_for(backend_profile(config, None))
    run = run_redactor(
        RunSpec(cwd=tmp_path, task=""), backend, notify_targets(config), detours(tmp_path)
    )
    views = Redactor(secrets_written(tmp_path, environment))
    for secret in (*backend.env.values(), *environment.values(), "notify-pass-1"):
        if run.text(secret) != secret:
            assert views.text(secret) == run.text(secret), secret
