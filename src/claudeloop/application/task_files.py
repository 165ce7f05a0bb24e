"""A file holding a task (a plan, a prompt file, standard input): the most it may hold,
and how reading one is refused, on the `TaskFiles` port the composition root fills
(adapters/plan_file.py reads one on disk)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

# The most a task (a plan, a prompt file, standard input) may hold. A model's context
# window is far smaller (200k tokens is under 1 MB of text), so this refuses a wrong
# file (a log, a dump) at once rather than sending it turn after turn; and it bounds
# what state.json holds of the task.
TASK_LIMIT_BYTES = 1024 * 1024
TASK_LIMIT = "1 MiB"


class NotATaskFile(OSError):
    """The path is no regular file (a FIFO, a device, a socket); `problem` says what."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class TaskTooLarge(NotATaskFile):
    """A regular file over TASK_LIMIT_BYTES."""


class TaskFiles(Protocol):
    """Files that hold a task."""

    def read_task_text(self, path: Path) -> str:
        """The UTF-8 text of the regular file at `path`, at most TASK_LIMIT_BYTES:
        NotATaskFile (TaskTooLarge), OSError or UnicodeDecodeError when it cannot be."""
        ...
