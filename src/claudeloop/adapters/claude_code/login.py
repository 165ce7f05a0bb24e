"""When the stored claude.ai login ends, as the Claude Code CLI itself reports it.

The CLI puts the date on each result (`credential_expires_at`), but claude-agent-sdk
0.2.189 drops that field when it parses a result; `claude auth status --json` reports
the same value as `loginExpiresAt` (a quarter of a second, no request to any server).
It is null for an API key, a token from the environment and another provider's
credentials: only a stored claude.ai login has an end the CLI knows.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

_TIMEOUT_SECONDS = 30.0


def bundled_cli() -> Path | None:
    """The Claude Code executable shipped inside claude-agent-sdk's wheel, if there."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        return None
    candidate = Path(next(iter(spec.submodule_search_locations))) / "_bundled" / "claude"
    return candidate if candidate.is_file() else None


def login_ends_at(cli_path: Path | None, env: Mapping[str, str]) -> datetime | None:
    """The end of the stored claude.ai login the CLI would use with `env`, or None when
    none is known (no such login, or the CLI could not say: nothing to warn of)."""
    executable = cli_path or bundled_cli()
    if executable is None:
        return None
    try:
        completed = subprocess.run(
            [str(executable), "auth", "status", "--json"],
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return ends_at_from_status(completed.stdout)


def ends_at_from_status(text: str) -> datetime | None:
    """`loginExpiresAt` of `claude auth status --json`'s output, as an aware instant."""
    try:
        status = json.loads(text)
    except ValueError:
        return None
    value = status.get("loginExpiresAt") if isinstance(status, dict) else None
    if not isinstance(value, str):
        return None
    try:
        instant = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return instant if instant.utcoffset() is not None else instant.replace(tzinfo=UTC)
