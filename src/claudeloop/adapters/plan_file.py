"""The plan file on disk: read after every turn, written only when the user asks; and
how any file holding a task (a plan, a prompt file) is read."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from claudeloop.adapters.atomic_file import write_atomically
from claudeloop.application.task_files import (
    TASK_LIMIT,
    TASK_LIMIT_BYTES,
    NotATaskFile,
    TaskTooLarge,
)
from claudeloop.domain.plan import WorkPlan


def read_task_text(path: Path) -> str:
    """The UTF-8 text of the regular file at `path`, at most TASK_LIMIT_BYTES.

    Checked before it is opened and again on what was opened, which is opened without
    blocking: a FIFO would otherwise hang until a writer came, and a device (/dev/zero)
    be read until the memory ran out. Raises NotATaskFile (TaskTooLarge when too large),
    another OSError (IsADirectoryError for a directory), or UnicodeDecodeError."""
    _check(os.stat(path))  # before the open: opening some devices does something
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _check(os.fstat(descriptor))  # what was opened, should the path have changed
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(TASK_LIMIT_BYTES + 1)
    finally:
        os.close(descriptor)
    if len(data) > TASK_LIMIT_BYTES:  # it grew since
        raise TaskTooLarge(f"is {too_large(len(data))}")
    return data.decode("utf-8")


def too_large(size: int) -> str:
    """Why a task of `size` bytes is refused, in the words every source of it uses."""
    return f"{size:,} bytes; a task may hold at most {TASK_LIMIT} ({TASK_LIMIT_BYTES:,} bytes)"


def _check(status: os.stat_result) -> None:
    if stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory")
    if not stat.S_ISREG(status.st_mode):
        raise NotATaskFile(f"is not a regular file but {_kind(status.st_mode)}")
    if status.st_size > TASK_LIMIT_BYTES:
        raise TaskTooLarge(f"is {too_large(status.st_size)}")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "something else"


class PlanFileOnDisk:
    def read(self, path: Path) -> WorkPlan | None:
        try:
            return WorkPlan.parse(read_task_text(path))
        except (OSError, UnicodeDecodeError):
            # Moved, replaced by something that is no plan, or mid-edit by the model:
            # the run keeps the plan it knows.
            return None

    def write(self, path: Path, plan: WorkPlan) -> None:
        write_atomically(path, plan.render(), mode=None)
