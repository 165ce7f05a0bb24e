"""One hierarchy for the errors a user can cause or meet. Each carries the exit code the
command line documents; `claudeloop` prints its message as one line and exits with it,
so no layer translates another's errors just to say them (httpx's one base exception is
the model)."""

from __future__ import annotations


class ClaudeloopError(Exception):
    """One line for the person, and the exit code for the shell (1 unless said)."""

    exit_code: int = 1

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(ClaudeloopError):
    """A flag, file, key or value that cannot be used: the message names it and what
    would be accepted (exit 2)."""

    exit_code = 2


class NoCredentials(ClaudeloopError):
    """Claude Code has no credentials at all: a run would be refused at its first turn,
    so it does not start (exit 77, the code of refused credentials)."""

    exit_code = 77
