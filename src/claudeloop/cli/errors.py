"""Errors a user can cause: one line, a documented exit code, never a traceback."""

from __future__ import annotations


class UserError(Exception):
    """Ends the command with `message` on one line and `exit_code` (2 unless said)."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
