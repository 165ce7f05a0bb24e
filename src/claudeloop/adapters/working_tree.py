"""The run's working tree, fingerprinted for the stagnation brake: git's view of it in a
repository, else a cheap scan of file sizes and modification times."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

# The run directories change every turn (state.json, events.jsonl): never evidence.
RUN_DIRECTORY = ".claudeloop"
# Directories no task's progress is measured in, skipped by the scan outside git.
_SKIPPED = {RUN_DIRECTORY, ".git", "node_modules", ".venv", "__pycache__"}
# A scan stops counting here: a huge tree still gives a fingerprint, of its first files.
MAX_SCANNED_FILES = 50_000
_GIT_SECONDS = 30.0


class WorkingTreeOnDisk:
    """Satisfies the application's `WorkingTree` port for `cwd`."""

    def __init__(self, cwd: Path) -> None:
        self._cwd = cwd
        self._git: bool | None = None  # asked once

    def fingerprint(self) -> str | None:
        """A digest of what the tree holds now; None when it cannot be read."""
        try:
            if self._git is None:
                self._git = self._in_git()
            return self._from_git() if self._git else self._scanned()
        except (OSError, subprocess.SubprocessError):
            return None

    def _in_git(self) -> bool:
        try:
            done = self._run_git("rev-parse", "--is-inside-work-tree")
        except (OSError, subprocess.SubprocessError):
            return False  # no git installed, or not a repository
        return done.strip() == b"true"

    def _from_git(self) -> str:
        """HEAD, the status, the diff of tracked files, and the size and time of each
        untracked one: a commit, an edit or a new file each changes it."""
        digest = hashlib.sha256()
        exclude = f":(exclude){RUN_DIRECTORY}"
        head = self._run_git("rev-parse", "--verify", "-q", "HEAD", check=False)
        status = self._run_git(
            "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".", exclude
        )
        digest.update(head + b"\0" + status + b"\0")
        # Streamed into the digest: a diff of gigabytes never sits in memory.
        self._hash_git(digest, "diff", "HEAD", "--binary", "--", ".", exclude)
        for entry in status.split(b"\0"):
            if entry.startswith(b"?? "):
                _stat_into(digest, self._cwd / os.fsdecode(entry[3:]), entry[3:])
        return digest.hexdigest()[:16]

    def _scanned(self) -> str:
        digest = hashlib.sha256()
        seen = 0
        for root, dirs, files in os.walk(self._cwd, onerror=_raise):
            dirs[:] = sorted(name for name in dirs if name not in _SKIPPED)
            for name in sorted(files):
                path = Path(root) / name
                _stat_into(digest, path, os.fsencode(path.relative_to(self._cwd)))
                seen += 1
                if seen >= MAX_SCANNED_FILES:
                    return digest.hexdigest()[:16]
        return digest.hexdigest()[:16]

    def _hash_git(self, digest: hashlib._Hash, *args: str) -> None:
        with subprocess.Popen(
            ["git", *args],
            cwd=self._cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        ) as process:
            assert process.stdout is not None
            while chunk := process.stdout.read(1 << 16):
                digest.update(chunk)
            process.wait(timeout=_GIT_SECONDS)

    def _run_git(self, *args: str, check: bool = True) -> bytes:
        done = subprocess.run(
            ["git", *args],
            cwd=self._cwd,
            capture_output=True,
            timeout=_GIT_SECONDS,
            check=check,
            stdin=subprocess.DEVNULL,
        )
        return done.stdout


def _raise(error: OSError) -> None:
    raise error  # an unreadable tree has no fingerprint, not an empty one


def _stat_into(digest: hashlib._Hash, path: Path, name: bytes) -> None:
    try:
        stat = path.lstat()
    except OSError:
        return  # gone since it was listed
    digest.update(name + b"\0" + f"{stat.st_size}:{stat.st_mtime_ns}".encode() + b"\0")
