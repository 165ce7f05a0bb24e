"""A project directory as `claudeloop init` sees it: a few files read as text, and new
files created only where none is (application/project_setup.py decides what)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from claudeloop.application.project_setup import TESTS_DIRECTORY, ProjectFiles

# A build file larger than this is no build file a person wrote; it is not read.
_LARGEST_READ = 1024 * 1024


class FolderOnDisk:
    """The `ProjectFolder` of application/project_setup.py on a real directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def files(self, names: tuple[str, ...]) -> ProjectFiles:
        texts: dict[str, str] = {}
        for name in names:
            text = self._text(self.root / name)
            if text is not None:
                texts[name] = text
        return ProjectFiles(
            texts,
            has_tests_directory=(self.root / TESTS_DIRECTORY).is_dir(),
            top_files=self._top_files(),
        )

    def _top_files(self) -> tuple[str, ...]:
        """The names of the regular files at the top; none when it cannot be listed."""
        try:
            with os.scandir(self.root) as entries:
                return tuple(entry.name for entry in entries if entry.is_file())
        except OSError:
            return ()

    @staticmethod
    def _text(path: Path) -> str | None:
        """The file's text; None when it is no regular file, too large or unreadable:
        a rule then finds nothing in it, as in a project without it."""
        try:
            if not path.is_file() or path.stat().st_size > _LARGEST_READ:
                return None
            return path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            return None

    def create(self, name: str, text: str) -> bool:
        """Exclusive creation: a file (or a link, even a dangling one) already at the
        path is never written through."""
        path = self.root / name
        try:
            handle = path.open("x", encoding="utf-8")
        except FileExistsError:
            return False
        try:
            with handle:
                handle.write(text)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        return True
