"""Whether claudeloop can write where a run keeps its files, asked before any turn: a
run that learns it cannot save its state after an hour of work has lost that hour."""

from __future__ import annotations

import tempfile
from pathlib import Path

from claudeloop.adapters.run_directory.layout import runs_root


def why_not_writable(directory: Path) -> str | None:
    """None when a file can be made in `directory`; otherwise why not, in a few words."""
    if not directory.is_dir():
        return f"{directory} is not a directory"
    try:
        # A file really made, not os.access: a read-only mount or a full disk answers too.
        with tempfile.TemporaryFile(dir=directory):
            return None
    except OSError as error:
        return f"{directory} cannot be written ({error.strerror or error})"


def why_no_runs_root(cwd: Path) -> str | None:
    """None when `<cwd>/.claudeloop/runs` exists and can be written or can be made;
    otherwise why not: the deepest part that exists is a file, or cannot be written."""
    root = runs_root(cwd)
    existing = root
    while not existing.is_dir() and existing not in (cwd, existing.parent):
        if existing.exists() or existing.is_symlink():
            return f"{existing} is not a directory, so {root} cannot be made; move {existing} aside"
        existing = existing.parent
    return why_not_writable(existing)
