"""How the Claude Code CLI is reached for a run: the environment it gets, where the
executable is, and what the backend profile it came from says of it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from claudeloop.adapters.config.profiles import BackendProfile


@dataclass(frozen=True)
class Backend:
    """How the Claude Code CLI is reached: the environment it gets and where it is.

    `zero_cost`: the backend's costs are not money (a model on the user's machine), so
    the ledger counts none. `profile`: the backend profile it was resolved from, for
    the one-line fix when the backend turns out misconfigured."""

    env: Mapping[str, str]
    local: bool = False
    cli_path: Path | None = None
    structured_output: bool = True
    marker_fallback: bool = True
    zero_cost: bool = False
    profile: BackendProfile | None = None


def cli_path_from_environment() -> Path | None:
    """CLAUDELOOP_CLI_PATH names another Claude Code executable (default: the one
    bundled with claude-agent-sdk)."""
    cli_path = os.environ.get("CLAUDELOOP_CLI_PATH")
    return Path(cli_path).expanduser() if cli_path else None


def login_ends(backend: Backend) -> datetime | None:
    """When the stored claude.ai login the backend's CLI would use ends (None: none
    known), as the CLI reports it with the environment a run gives it."""
    from claudeloop.adapters.claude_code.login import login_ends_at

    return login_ends_at(backend.cli_path, {**os.environ, **backend.env})


def backend_for(profile: BackendProfile) -> Backend:
    return Backend(
        env=dict(profile.env),
        local=profile.local,
        cli_path=cli_path_from_environment(),
        marker_fallback=profile.marker_fallback,
        zero_cost=profile.zero_cost,
        profile=profile,
    )
