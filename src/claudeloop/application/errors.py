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


class NoRun(UsageError):
    """No run to act on: none in the working directory, or none a live driver drives.
    `status`, `stop` and `wind-down` say so in a line and exit 0 (there is nothing to
    report or end, and nothing the user typed was wrong); where a run is needed to go on
    (`resume`, `logs`) it stays a usage error, exit 2."""


class NoCredentials(ClaudeloopError):
    """Claude Code has no credentials at all: a run would be refused at its first turn,
    so it does not start (exit 77, the code of refused credentials)."""

    exit_code = 77
