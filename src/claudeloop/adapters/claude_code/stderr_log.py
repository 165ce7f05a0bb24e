"""Where the CLI's stderr goes: appended to the run's debug log, never the screen."""

from __future__ import annotations

from pathlib import Path

from claudeloop.adapters.private_file import append_line, make_private_directory

# The run directory's own rule for what a secret looks like, so the debug log (which
# lives there) masks exactly what every other file of the run masks.
from claudeloop.adapters.redaction import MASK, Redactor

REDACTED = MASK


class StderrLog:
    """A line sink for the SDK's `stderr` callback.

    The file is opened per line: the CLI writes little to stderr, and a sink that holds
    no handle cannot leak one across the reconnects of a long run.
    """

    def __init__(self, path: Path | None, *, redactor: Redactor | None = None) -> None:
        self._path = path
        self._redactor = redactor or Redactor()

    def __call__(self, line: str) -> None:
        """One line the CLI wrote to stderr."""
        self._append(f"[claude] {line.rstrip()}")

    def note(self, text: str) -> None:
        """One line of claudeloop's own about the CLI (a crash, a failed probe)."""
        self._append(f"[claudeloop] {text}")

    def redact(self, text: str) -> str:
        """`text` with credential values and token-shaped strings masked."""
        return self._redactor.text(text)

    def _append(self, line: str) -> None:
        if self._path is None:
            return
        try:
            make_private_directory(self._path.parent)
            # Owner-only and never through a planted link: the log holds what the CLI said.
            append_line(self._path, self.redact(line))
        except OSError:
            # Losing a debug line must never end a turn.
            return
