"""Errors a user can cause: one line, a documented exit code, never a traceback."""

from __future__ import annotations

from claudeloop.application.errors import UsageError


class UserError(UsageError):
    """A mistake the user made on the command line: exit 2 unless said otherwise."""
