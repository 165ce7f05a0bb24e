"""Replacing a file so that a crash at any moment leaves the old text or the new, never
half of either: a temporary file in the same directory, fsync, rename, fsync of the
directory."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time
from pathlib import Path

# What names a temporary file as claudeloop's: `.NAME.` + mkstemp's eight characters +
# this, so that a leftover in a user's project is told from the user's own files.
TEMPORARY_SUFFIX = ".claudeloop-tmp"
_RANDOM = "[a-z0-9_]{8}"  # what tempfile.mkstemp puts between prefix and suffix


def write_atomically(path: Path, text: str, *, mode: int | None = 0o600) -> None:
    """Replace `path` with `text`. `mode` None keeps the mode the file has (a user's plan
    file keeps its permissions); the default is owner-only, for claudeloop's own files."""
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def remove_leftovers(path: Path, *, older_than: float = 0.0, unmarked: bool = False) -> None:
    """Deletes the temporary files a `write_atomically(path, ...)` killed before its rename
    left beside `path`: regular files of this user, named as it names them, last changed
    more than `older_than` seconds ago (a younger one may be another process's, mid-write).
    `unmarked`: also the `.NAME.` + eight characters of versions before the suffix, for a
    directory that is claudeloop's alone (never a user's project)."""
    name = re.escape(f".{path.name}.") + _RANDOM
    pattern = re.compile(f"{name}(?:{re.escape(TEMPORARY_SUFFIX)}){'?' if unmarked else ''}")
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            if not pattern.fullmatch(entry.name) or not entry.is_file(follow_symlinks=False):
                continue
            status = entry.stat(follow_symlinks=False)
            if status.st_uid == os.getuid() and time.time() - status.st_mtime >= older_than:
                os.unlink(entry.path)
