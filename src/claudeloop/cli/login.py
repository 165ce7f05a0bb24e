"""`claudeloop login` and `claudeloop claude ARGS`: the Claude Code CLI bundled in the
SDK's wheel, run on the user's terminal with the environment a run would give it."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from claudeloop.application.errors import UsageError
from claudeloop.application.settings import MODEL
from claudeloop.cli.bootstrap.configuration import backend_profile, configuration
from claudeloop.cli.bootstrap.runs import Backend, backend_for, claude_cli


def login(*, cwd: Path | None, profile: str | None, args: Sequence[str]) -> None:
    """`claude auth login ARGS` of the CLI a run would start, as a run would start it."""
    backend = _backend(cwd, profile)
    if backend.local and backend.profile is not None:
        raise UsageError(
            f"profile {backend.profile.name!r} sends the turns to {backend.profile.base_url}, "
            "which needs no Claude login; pick another with --profile"
        )
    _run(backend, ["auth", "login", *args])


def claude(*, args: Sequence[str]) -> None:
    """The CLI a run would start, with ARGS, as a run would start it (the selected
    profile's environment); its exit code is ours."""
    _run(_backend(None, None), list(args))


def _backend(cwd: Path | None, profile: str | None) -> Backend:
    directory = cwd or Path.cwd()
    config = configuration(directory, {"profile": profile})
    return backend_for(backend_profile(config, config.get(MODEL)))


def _run(backend: Backend, args: list[str]) -> None:
    cli = claude_cli.executable(backend.cli_path)
    if cli is None:
        raise UsageError(
            "no Claude Code CLI: none bundled with claude-agent-sdk, none on PATH; "
            "reinstall claudeloop (its claude-agent-sdk wheel bundles it) or set "
            "CLAUDELOOP_CLI_PATH"
        )
    sys.exit(
        claude_cli.run_interactively(cli, args, claude_cli.environment(backend.env, os.environ))
    )
