"""What changed in a working tree since the last look, as the kernel's inotify says.

A checkpoint of a big repository spends most of its time in `git add --all` looking at
every file (10,000 `lstat`s take about 22 ms on the machine the benchmark runs on) to
find the few a turn changed. While a run works, its tree is watched instead: every
directory of it has an inotify watch, and after a turn `changes()` says which paths were
created, written, removed, moved or had their mode changed, so the commit stages those
alone (adapters/git_checkpoint/checkpoints.py). The watch is read only when asked,
never by a thread: the kernel queues the events of a turn meanwhile.

Whenever the watch cannot say for sure, `changes()` says so (None) and the commit looks
at every file as before: the kernel's queue overflowed (a turn that made more than
`max_queued_events`, 16,384 by default, events), a directory could not be watched (the
user's `max_user_watches` reached, or more than `MAX_DIRECTORIES`), or this is not Linux.
A directory made during the turn is walked when it is seen, its files all counted as
changed: its watch came after its first files. Not seen, as for any inotify user: a file
written through a shared memory map, or by a process in another mount namespace.

`.git` and the run's own `.claudeloop` directories are never watched: neither is ever
committed.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

# More directories than this: the tree is looked at whole, as without a watch (a tree
# with an unignored node_modules, say, would spend its start-up adding watches).
MAX_DIRECTORIES = 20_000
_SKIPPED = frozenset({".git", ".claudeloop"})


@dataclass(frozen=True, slots=True)
class Changed:
    """Paths relative to the tree's top (with `/`), changed since the last look: `paths`
    files (or symlinks) created, written, removed or moved; `gone` directories removed or
    moved away, everything once under them changed too."""

    paths: frozenset[str]
    gone: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.paths or self.gone)


class TreeWatch:
    """The inotify watches of one working tree (see the module's docstring)."""

    def __init__(self, top: Path) -> None:
        from inotify_simple import INotify, flags

        self._flags = flags
        self._mask = (
            flags.CREATE
            | flags.DELETE
            | flags.MODIFY
            | flags.ATTRIB
            | flags.MOVED_FROM
            | flags.MOVED_TO
            | flags.ONLYDIR
            | flags.EXCL_UNLINK
        )
        self._top = top
        self._inotify = INotify(inheritable=False, nonblocking=True)  # no Claude CLI gets it
        self._directories: dict[int, str] = {}  # watch -> directory ("" the top)
        self._paths: set[str] = set()
        self._gone: set[str] = set()
        self._sure = True
        self._watch_all("", into=None)

    @classmethod
    def start(cls, top: Path) -> TreeWatch | None:
        """A watch of the tree under `top`, or None where none can be kept (no inotify,
        too many directories, the user's limit of watches reached)."""
        try:
            watch = cls(top)
        except (ImportError, OSError, AttributeError):
            return None
        if not watch._sure:
            watch.close()
            return None
        return watch

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._inotify.close()

    def changes(self) -> Changed | None:
        """What changed since the last call (or the start); None when the watch cannot
        say for sure, after which it should be closed and a new one started."""
        try:
            events = self._inotify.read(timeout=0)
        except OSError:
            return None
        flags = self._flags
        for event in events:
            if event.mask & flags.Q_OVERFLOW:
                self._sure = False
                break
            directory = self._directories.get(event.wd)
            if directory is None:
                continue  # a watch removed since, or the top's own IGNORED
            if event.mask & flags.IGNORED:
                del self._directories[event.wd]
                continue
            name = event.name
            if not name or name in _SKIPPED:
                continue
            path = f"{directory}/{name}" if directory else name
            if event.mask & flags.ISDIR:
                if event.mask & (flags.CREATE | flags.MOVED_TO):
                    self._watch_all(path, into=self._paths)
                elif event.mask & (flags.DELETE | flags.MOVED_FROM):
                    self._forget(path)
                    self._gone.add(path)
                continue
            self._paths.add(path)
        if not self._sure:
            return None
        changed = Changed(frozenset(self._paths), frozenset(self._gone))
        self._paths.clear()
        self._gone.clear()
        return changed

    def _watch_all(self, start: str, *, into: set[str] | None) -> None:
        """Watch `start` and every directory under it; `into`: its files are counted as
        changed (a directory made during a turn)."""
        pending = [start]
        while pending and self._sure:
            directory = pending.pop()
            if len(self._directories) >= MAX_DIRECTORIES:
                self._sure = False
                return
            try:
                self._directories[self._inotify.add_watch(self._top / directory, self._mask)] = (
                    directory
                )
                entries = list(os.scandir(self._top / directory))
            except (FileNotFoundError, NotADirectoryError):
                continue  # gone again since, or a file now: its parent's events say so
            except OSError:
                self._sure = False  # ENOSPC: the user's max_user_watches is reached
                return
            for entry in entries:
                if entry.name in _SKIPPED:
                    continue
                path = f"{directory}/{entry.name}" if directory else entry.name
                if entry.is_dir(follow_symlinks=False):
                    pending.append(path)
                elif into is not None:
                    into.add(path)

    def _forget(self, directory: str) -> None:
        """The watches of `directory` and under it: a directory moved away keeps its
        watch (it follows the inode), whose events would name paths no longer there."""
        prefix = f"{directory}/"
        for wd, path in list(self._directories.items()):
            if path == directory or path.startswith(prefix):
                del self._directories[wd]
                with contextlib.suppress(OSError):
                    self._inotify.rm_watch(wd)
