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


def make_private_directory(path: Path) -> None:
    """`path` made a directory, with each directory made on the way owner-only (0700)
    whatever the umask: `Path.mkdir(parents=True, mode=...)` gives the mode to the last
    one alone, leaving `$XDG_STATE_HOME/claudeloop` readable by all. Directories that
    were there are left as they are."""
    missing: list[Path] = []
    at = path
    while not at.is_dir():
        missing.append(at)
        if at.parent == at:
            break
        at = at.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue  # made by another process meanwhile: theirs to keep
        os.chmod(directory, 0o700)  # the umask may have taken bits off
