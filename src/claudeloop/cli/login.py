"""`claudeloop login` and `claudeloop claude ARGS`: the Claude Code CLI bundled in the
SDK's wheel, run on the user's terminal with the environment a run would give it; and
the check, before a run's first turn, that it has any credentials at all."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from claudeloop.application.errors import UsageError
from claudeloop.application.settings import MODEL
from claudeloop.cli.bootstrap import (
    CREDENTIAL_VARIABLES,
    PROVIDER_VARIABLES,
    Backend,
    backend_for,
    claude_cli,
)
from claudeloop.cli.bootstrap.configuration import backend_profile, configuration, no_credentials
from claudeloop.cli.errors import NoCredentials


def refuse_no_credentials(backend: Backend, cwd: Path) -> None:
    """Exit 77 before any turn when Claude Code would find no credentials: it would only
    answer "Not logged in" to the first turn, which no login could have refused. Any
    doubt lets the run start (a false "no credentials" is worse than none)."""
    if backend.local:
        return  # a local server gets the profile's token or a dummy: no Claude login
    env = claude_cli.environment(backend.env, os.environ)
    if any(env.get(name) for name in (*CREDENTIAL_VARIABLES, *PROVIDER_VARIABLES)):
        return  # the common case, told without starting the CLI
    cli = claude_cli.executable(backend.cli_path)
    if cli is None:
        return  # the run says there is no CLI, in its own words
    status = claude_cli.login_status(cli, env, cwd)
    if status.known and not status.logged_in:
        raise NoCredentials(no_credentials(status.config_directory))


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
