"""A backend profile resolved into what the Claude Code CLI needs: its environment.

A profile with a `base_url` (or a `preset`, which supplies one) is local. For a local
profile the CLI gets the server's URL and a token (the profile's, or a dummy the server
ignores; a LiteLLM proxy needs a real one: it will not start without a master key),
never the user's ANTHROPIC_API_KEY or login, no nonessential traffic, and
every model variable it reads set to the profile's models, so no side request (a title,
a summary, a subagent) asks the server for a claude-* model it does not have.

The names were read from the bundled CLI (2.1.332) with
`strings claude | grep -E 'ANTHROPIC_DEFAULT|_MODEL'`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from claudeloop.adapters.config.loading import Configuration, DefinedProfile
from claudeloop.adapters.config.schema import ACCEPTED, is_http_url
from claudeloop.adapters.credentials import CREDENTIAL_VARIABLES, PROVIDER_VARIABLES
from claudeloop.application.errors import ConfigError
from claudeloop.application.settings import DEFAULT_PROFILE, MODEL

BASE_URL_VARIABLE = "ANTHROPIC_BASE_URL"

PRESET_URLS: dict[str, str] = {
    "ollama": "http://localhost:11434",
    "lmstudio": "http://localhost:1234",
    "llamacpp": "http://localhost:8080",
    "vllm": "http://localhost:8000",
    "litellm": "http://localhost:4000",
}
# Servers that run the model on the user's machine: the CLI's price table says nothing
# true about them. A LiteLLM proxy may front a paid service, so it keeps the reported cost.
_FREE_PRESETS = frozenset({"ollama", "lmstudio", "llamacpp", "vllm"})
# Local servers ignore the token but the CLI will not start without one.
DUMMY_TOKEN = "claudeloop-local"
# Servers that check the token: a LiteLLM proxy refuses to start without a master key.
_TOKEN_PRESETS = frozenset({"litellm"})

MAIN_MODEL_VARIABLES = (
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_FABLE_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
    "CLAUDE_CODE_WORKFLOW_SUBAGENT_MODEL",
    "CLAUDE_CODE_AUTO_MODE_MODEL",
)
SMALL_MODEL_VARIABLES = ("ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL")
# Credentials and providers of the user's own setup that must not reach a local server.
# Not the auth token: it is the one a local server is given (the profile's, or a dummy).
BLANKED_FOR_LOCAL = (
    *(name for name in CREDENTIAL_VARIABLES if name != "ANTHROPIC_AUTH_TOKEN"),
    *PROVIDER_VARIABLES,
)


@dataclass(frozen=True, slots=True)
class BackendProfile:
    """How the CLI reaches one backend, ready to merge over the process environment."""

    name: str = DEFAULT_PROFILE
    # "[profiles.NAME] in FILE", or "built-in" for the default profile.
    where: str = "built-in"
    base_url: str | None = None
    preset: str | None = None
    model: str | None = None
    small_fast_model: str | None = None
    # Which credentials the CLI will use, in words; never the value.
    credentials: str = "inherited from the environment"
    env: Mapping[str, str] = field(default_factory=dict)
    marker_fallback: bool = True
    zero_cost: bool = False

    @property
    def local(self) -> bool:
        return self.base_url is not None


DEFAULT_BACKEND = BackendProfile()


def resolve_profile(
    configuration: Configuration, environ: Mapping[str, str], *, model: str | None = None
) -> BackendProfile:
    """The selected profile of `configuration`; `model` is the run's main model (default:
    the effective `model` setting)."""
    defined = configuration.profile
    if defined is None:
        return DEFAULT_BACKEND
    chosen = model if model is not None else configuration.get(MODEL)
    return profile_backend(defined, environ, model=chosen)


def profile_backend(
    defined: DefinedProfile, environ: Mapping[str, str], *, model: str | None
) -> BackendProfile:
    table = defined.table
    base_url = table.base_url or (PRESET_URLS[table.preset] if table.preset else None)
    main = model or table.model
    small = table.small_fast_model or main
    token, credentials = _token(defined, environ, local=base_url is not None)
    env: dict[str, str] = {}
    if base_url is not None:
        env.update(dict.fromkeys(BLANKED_FOR_LOCAL, ""))
        env["ANTHROPIC_BASE_URL"] = base_url
        env["ANTHROPIC_AUTH_TOKEN"] = token or DUMMY_TOKEN
        env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
        if main is not None:
            env.update(dict.fromkeys(MAIN_MODEL_VARIABLES, main))
        if small is not None:
            env.update(dict.fromkeys(SMALL_MODEL_VARIABLES, small))
    elif token is not None:
        env["ANTHROPIC_AUTH_TOKEN"] = token
    if table.max_output_tokens is not None:
        env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(table.max_output_tokens)
    if table.context_window is not None:
        # The window the CLI assumes for a model it does not know, and the one it
        # compacts the conversation to fit, so a long run compacts before the server
        # refuses the prompt.
        env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] = str(table.context_window)
        env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(table.context_window)
    env.update(table.extra_env)
    local = base_url is not None
    marker_fallback = (
        table.done_marker_fallback if table.done_marker_fallback is not None else not local
    )
    cost = table.cost or ("zero" if table.preset in _FREE_PRESETS else "reported")
    return BackendProfile(
        name=defined.name,
        where=defined.where,
        base_url=base_url,
        preset=table.preset,
        model=main,
        small_fast_model=small,
        credentials=credentials,
        env=env,
        marker_fallback=marker_fallback,
        zero_cost=cost == "zero",
    )


def _token(
    defined: DefinedProfile, environ: Mapping[str, str], *, local: bool
) -> tuple[str | None, str]:
    table = defined.table
    if table.auth_token is not None:
        return table.auth_token, f"auth token from {defined.where}"
    if table.auth_token_env is not None:
        value = environ.get(table.auth_token_env, "")
        if not value:
            raise ConfigError(
                f"{defined.where}: auth_token_env = {table.auth_token_env!r}, but "
                f"{table.auth_token_env} is not set; export it or use auth_token"
            )
        return value, f"auth token from ${table.auth_token_env}"
    if table.preset in _TOKEN_PRESETS:
        raise ConfigError(
            f'{defined.where}: preset "{table.preset}" needs the proxy\'s key: set '
            'auth_token_env = "LITELLM_MASTER_KEY" (a variable holding it) or auth_token'
        )
    if local:
        return None, "a dummy auth token (the server needs none)"
    return None, "inherited from the environment"


def base_url_problem(
    env: Mapping[str, str], profile: BackendProfile, environ: Mapping[str, str]
) -> str | None:
    """Why the URL Claude Code would be pointed at is no URL, in one line naming where
    it was set; None when it is one, or none is set. The CLI takes any text: 'not a
    url' made three errored turns before the run gave up."""
    value = env.get(BASE_URL_VARIABLE)
    if value is not None:
        if value == profile.base_url:
            return None  # checked when the file was read
        where = f"extra_env.{BASE_URL_VARIABLE} in {profile.where}"
    else:
        value = environ.get(BASE_URL_VARIABLE)
        if not value:
            return None  # Anthropic's API
        where = f"environment variable {BASE_URL_VARIABLE}"
    if is_http_url(value):
        return None
    return f"{where}={_shown_url(value)}: expected {ACCEPTED['base_url']}"


def _shown_url(value: str) -> str:
    # A user:password@ in what was meant as a URL is not shown.
    userinfo = urlsplit(value).netloc.rpartition("@")[0] if "://" in value else ""
    shown = value.replace(userinfo, "****", 1) if userinfo else value
    text = repr(shown)
    return text if len(text) <= 80 else text[:77] + "..."
