"""A profile becomes the environment the Claude Code CLI runs with."""

from __future__ import annotations

import mmap
from pathlib import Path

import claude_agent_sdk
import pytest

from claudeloop.adapters.config.loading import Configuration, load_configuration
from claudeloop.adapters.config.profiles import (
    BLANKED_FOR_LOCAL,
    DEFAULT_BACKEND,
    DUMMY_TOKEN,
    MAIN_MODEL_VARIABLES,
    PRESET_URLS,
    SMALL_MODEL_VARIABLES,
    BackendProfile,
    resolve_profile,
)
from claudeloop.application.errors import ConfigError

BUNDLED_CLI = Path(str(claude_agent_sdk.__file__)).parent / "_bundled" / "claude"


def configured(tmp_path: Path, table: str, **flags: object) -> Configuration:
    (tmp_path / "claudeloop.toml").write_text(f'profile = "p"\n[profiles.p]\n{table}\n')
    return load_configuration(
        cwd=tmp_path, flags=flags, environ={"CLAUDELOOP_CONFIG_DIR": str(tmp_path / "u")}
    )


def resolved(
    tmp_path: Path, table: str, environ: dict[str, str] | None = None, **flags: object
) -> BackendProfile:
    return resolve_profile(configured(tmp_path, table, **flags), environ or {})


@pytest.mark.parametrize(
    ("preset", "url"), sorted(item for item in PRESET_URLS.items() if item[0] != "litellm")
)
def test_a_preset_needs_only_a_model(tmp_path: Path, preset: str, url: str) -> None:
    profile = resolved(tmp_path, f'preset = "{preset}"\nmodel = "qwen3"')
    assert profile.local
    assert profile.base_url == url
    assert profile.env["ANTHROPIC_BASE_URL"] == url


def test_well_known_urls() -> None:
    assert PRESET_URLS == {
        "ollama": "http://localhost:11434",
        "lmstudio": "http://localhost:1234",
        "llamacpp": "http://localhost:8080",
        "vllm": "http://localhost:8000",
        "litellm": "http://localhost:4000",
    }


def test_a_local_profile_hides_the_users_credentials_and_maps_every_model(
    tmp_path: Path,
) -> None:
    profile = resolved(
        tmp_path, 'base_url = "http://127.0.0.1:9999/"\nmodel = "qwen3"\nsmall_fast_model = "q1"'
    )
    env = profile.env
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9999"
    assert env["ANTHROPIC_AUTH_TOKEN"] == DUMMY_TOKEN
    for name in BLANKED_FOR_LOCAL:
        assert env[name] == ""
    assert env["ANTHROPIC_API_KEY"] == ""
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert {env[name] for name in MAIN_MODEL_VARIABLES} == {"qwen3"}
    assert {env[name] for name in SMALL_MODEL_VARIABLES} == {"q1"}
    assert profile.credentials == "a dummy auth token (the server needs none)"


def test_the_small_model_defaults_to_the_main_one(tmp_path: Path) -> None:
    profile = resolved(tmp_path, 'preset = "ollama"\nmodel = "qwen3"')
    assert profile.env["ANTHROPIC_SMALL_FAST_MODEL"] == "qwen3"
    assert profile.env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == "qwen3"


def test_the_runs_model_replaces_the_profiles_in_every_variable(tmp_path: Path) -> None:
    profile = resolved(tmp_path, 'preset = "ollama"\nmodel = "qwen3"', model="qwen3-coder")
    assert profile.model == "qwen3-coder"
    assert profile.env["ANTHROPIC_MODEL"] == "qwen3-coder"
    assert profile.env["CLAUDE_CODE_SUBAGENT_MODEL"] == "qwen3-coder"


def test_every_model_variable_is_one_the_bundled_cli_reads() -> None:
    if not BUNDLED_CLI.is_file():
        pytest.skip("no bundled Claude Code CLI")
    names = [
        *MAIN_MODEL_VARIABLES,
        *SMALL_MODEL_VARIABLES,
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
        "CLAUDE_CODE_MAX_CONTEXT_TOKENS",
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        *BLANKED_FOR_LOCAL,
    ]
    with (
        BUNDLED_CLI.open("rb") as handle,
        mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
    ):
        missing = [name for name in names if data.find(name.encode()) < 0]
    assert missing == []


def test_token_inline_or_from_a_variable_never_the_dummy(tmp_path: Path) -> None:
    inline = resolved(tmp_path, 'preset = "litellm"\nmodel = "m"\nauth_token = "sk-proxy-123"')
    assert inline.env["ANTHROPIC_AUTH_TOKEN"] == "sk-proxy-123"
    assert inline.credentials.startswith("auth token from [profiles.p] in ")
    from_env = resolved(
        tmp_path,
        'preset = "litellm"\nmodel = "m"\nauth_token_env = "PROXY_KEY"',
        {"PROXY_KEY": "sk-proxy-456"},
    )
    assert from_env.env["ANTHROPIC_AUTH_TOKEN"] == "sk-proxy-456"
    assert from_env.credentials == "auth token from $PROXY_KEY"


def test_the_litellm_preset_needs_a_token_never_the_dummy(tmp_path: Path) -> None:
    # LiteLLM refuses to start without a master key, so a dummy token is always refused.
    with pytest.raises(ConfigError) as refused:
        resolved(tmp_path, 'preset = "litellm"\nmodel = "m"')
    message = str(refused.value)
    assert message.startswith("[profiles.p] in ")
    assert 'preset "litellm" needs the proxy\'s key' in message
    assert 'auth_token_env = "LITELLM_MASTER_KEY"' in message
    assert message.endswith("or auth_token")
    assert "\n" not in message


def test_a_token_variable_that_is_not_set_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="PROXY_KEY is not set"):
        resolved(tmp_path, 'preset = "litellm"\nmodel = "m"\nauth_token_env = "PROXY_KEY"')


def test_output_tokens_context_window_and_extra_env(tmp_path: Path) -> None:
    profile = resolved(
        tmp_path,
        'preset = "llamacpp"\nmodel = "m"\nmax_output_tokens = 4096\ncontext_window = 32768\n'
        'extra_env = { OLLAMA_KEEP_ALIVE = "1h", CLAUDE_CODE_MAX_RETRIES = "3" }',
    )
    env = profile.env
    assert env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "4096"
    assert env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "32768"
    assert env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "32768"
    assert env["OLLAMA_KEEP_ALIVE"] == "1h"
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "3"


@pytest.mark.parametrize(
    ("table", "marker_fallback", "zero_cost"),
    [
        ('preset = "ollama"\nmodel = "m"', False, True),
        ('preset = "lmstudio"\nmodel = "m"', False, True),
        ('preset = "llamacpp"\nmodel = "m"', False, True),
        ('preset = "vllm"\nmodel = "m"', False, True),
        ('preset = "litellm"\nmodel = "m"\nauth_token = "k"', False, False),
        ('base_url = "http://h:1"\nmodel = "m"', False, False),
        (
            'preset = "ollama"\nmodel = "m"\ndone_marker_fallback = true\ncost = "reported"',
            True,
            False,
        ),
        ('base_url = "http://h:1"\nmodel = "m"\ncost = "zero"', False, True),
        ('model = "claude-opus-4-1"', True, False),
    ],
)
def test_marker_fallback_is_off_and_local_models_are_free_unless_said(
    tmp_path: Path, table: str, marker_fallback: bool, zero_cost: bool
) -> None:
    profile = resolved(tmp_path, table)
    assert profile.marker_fallback is marker_fallback
    assert profile.zero_cost is zero_cost


def test_a_profile_without_base_url_keeps_the_users_backend(tmp_path: Path) -> None:
    profile = resolved(tmp_path, 'model = "claude-opus-4-1"\nauth_token = "team-token-1"')
    assert not profile.local
    assert profile.env == {"ANTHROPIC_AUTH_TOKEN": "team-token-1"}


def test_no_profile_is_the_inherited_environment(tmp_path: Path) -> None:
    config = load_configuration(
        cwd=tmp_path, environ={"CLAUDELOOP_CONFIG_DIR": str(tmp_path / "u")}
    )
    assert resolve_profile(config, {}) == DEFAULT_BACKEND
    assert DEFAULT_BACKEND.env == {}
    assert DEFAULT_BACKEND.marker_fallback
    assert not DEFAULT_BACKEND.local
