"""The `BundledCli` port (application/bundled_cli.py): the Claude Code CLI a backend
names (CLAUDELOOP_CLI_PATH, else the one bundled with claude-agent-sdk, else PATH's),
run interactively with the backend's environment."""

from __future__ import annotations

import os
from collections.abc import Sequence

from claudeloop.adapters import claude_cli
from claudeloop.adapters.claude_code.backend import Backend
from claudeloop.application.errors import UsageError


class BundledCliOfBackend:
    """Satisfies application.bundled_cli.BundledCli."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def local_backend(self) -> tuple[str, str] | None:
        profile = self._backend.profile
        if not self._backend.local or profile is None:
            return None
        return profile.name, str(profile.base_url)

    def run(self, args: Sequence[str]) -> int:
        cli = claude_cli.executable(self._backend.cli_path)
        if cli is None:
            raise UsageError(
                "no Claude Code CLI: none bundled with claude-agent-sdk, none on PATH; "
                "reinstall claudeloop (its claude-agent-sdk wheel bundles it) or set "
                "CLAUDELOOP_CLI_PATH"
            )
        env = claude_cli.environment(self._backend.env, os.environ)
        return claude_cli.run_interactively(cli, args, env)
