"""The backends a rehearsal's turns go to: the rehearsal API on 127.0.0.1 in place of
the service, and a rehearsal API standing in for a local server (Ollama), each with the
rehearsal folder's own home, never the user's credentials."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from claudeloop.adapters.claude_code.backend import Backend, backend_for
from claudeloop.adapters.config.profiles import DUMMY_TOKEN, BackendProfile
from claudeloop.adapters.credentials import CREDENTIAL_VARIABLES, PROVIDER_VARIABLES

# Credential variables that must not reach the rehearsal: it needs none, and a real key
# has no business on a loopback server; nor a provider or a model of the user's setup.
# The OAuth token is blanked too, then set to the rehearsal's own.
BLANKED = (
    *CREDENTIAL_VARIABLES,
    *PROVIDER_VARIABLES,
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
)


def rehearsal_env(base_url: str, home: Path) -> dict[str, str]:
    env = dict.fromkeys(BLANKED, "")
    env.update(
        {
            "ANTHROPIC_BASE_URL": base_url,
            # A subscription-style login makes the CLI read rate-limit headers and report
            # rate-limit events, as it does for most people running long tasks.
            "CLAUDE_CODE_OAUTH_TOKEN": "rehearsal-token",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        }
    )
    return env


def local_backend(base_url: str, home: Path, name: str) -> Backend:
    """The rehearsal's local profile `name`: a rehearsal API standing in for Ollama."""
    env = rehearsal_env(base_url, home)
    env.update(
        {
            "CLAUDE_CODE_OAUTH_TOKEN": "",
            # The dummy token a real local profile sends: "ollama" would be masked as a
            # secret wherever the word appears (`ollama pull` in the fix).
            "ANTHROPIC_AUTH_TOKEN": DUMMY_TOKEN,
            "ANTHROPIC_MODEL": "qwen3",
        }
    )
    profile = BackendProfile(
        name=name,
        where=f"[profiles.{name}] (built into the rehearsal)",
        base_url=base_url,
        preset="ollama",
        model="qwen3",
        small_fast_model="qwen3",
        credentials="a dummy auth token (the server needs none)",
        env=env,
        marker_fallback=False,
        zero_cost=True,
    )
    return backend_for(profile)


def rehearsal_backend(base_url: str, home: Path, *, local_profile: str | None) -> Backend:
    """The backend of a rehearsal's own turns: the local profile `local_profile` when the
    scenario plays a local server's failures, else the rehearsal API as the service."""
    if local_profile is not None:
        return local_backend(base_url, home, local_profile)
    return Backend(env=rehearsal_env(base_url, home))


def local_detours(local_url: str | None, home: Path, name: str) -> Callable[[str], Backend] | None:
    """The detour of a switch-profile policy to the local profile `name` served on
    `local_url` (None: the scenario has no local server)."""
    if local_url is None:
        return None
    return lambda _name: local_backend(local_url, home, name)


def profile_name(backend: Backend) -> str:
    """The profile a rehearsal's run says it is on: the local one's, else "rehearsal"."""
    return backend.profile.name if backend.profile is not None else "rehearsal"
