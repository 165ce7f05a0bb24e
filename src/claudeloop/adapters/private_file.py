"""The files claudeloop writes for itself: owner-only whatever the umask, and never
through a symbolic link someone planted where one of them goes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def open_for_appending(path: Path) -> TextIO:
    """`path` opened to append text; OSError (ELOOP) when it is a symbolic link."""
    descriptor = os.open(path, _APPEND, 0o600)
    try:
        # A file made before, under another umask, is made private too; on the file
        # itself, never on what a link points to.
        os.fchmod(descriptor, 0o600)
        return os.fdopen(descriptor, "a", encoding="utf-8")
    except BaseException:
        os.close(descriptor)
        raise


def append_line(path: Path, line: str) -> None:
    """One line added to `path`, opened for this line alone."""
    with open_for_appending(path) as handle:
        handle.write(line + "\n")
