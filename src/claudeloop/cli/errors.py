"""Errors a user can cause: one line, a documented exit code, never a traceback."""

from __future__ import annotations

from claudeloop.application.errors import ClaudeloopError


class NoCredentials(ClaudeloopError):
    """Claude Code has no credentials at all: a run would be refused at its first turn,
    so it does not start (exit 77, the code of refused credentials)."""

    exit_code = 77
