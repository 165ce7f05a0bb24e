"""What writing a commit takes, whichever way it looked at the files: the working
tree's layout, the commit written with git's plumbing (commit-tree, update-ref), the
git processes a run keeps, and the files holding a secret, unstaged."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from claudeloop.adapters.git_checkpoint.git_cli import IDENTITY, GitFailed, git, out
from claudeloop.adapters.git_stream import GitStream

# A file larger than this is not read for secrets; it is left out of the commit too.
MAX_SCANNED_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class GitLayout:
    """What a commit asks of a working tree once: its top, its git directories, and
    whether git knows who commits."""

    top: Path
    git_dir: Path
    common_dir: Path
    identity: tuple[str, ...]

    @classmethod
    def of(cls, directory: Path) -> GitLayout:
        said = out(
            directory,
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--git-common-dir",
        ).splitlines()
        known = git(directory, "config", "user.email", check=False).stdout.strip() != b""
        return cls(
            top=Path(said[0]),
            git_dir=Path(said[1]),
            common_dir=Path(said[2]),
            identity=() if known else IDENTITY,
        )

    def remove_stale_locks(self, branch: str) -> None:
        for lock in (
            self.git_dir / "index.lock",
            self.git_dir / "HEAD.lock",
            self.common_dir / "refs" / "heads" / f"{branch}.lock",
        ):
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()


def write_commit(
    directory: Path,
    message: str,
    written: str,
    parent: str | None,
    *,
    tree: GitLayout,
    refs: GitStream | None = None,
) -> str:
    """A commit of the tree `written` on `parent`, HEAD moved to it only from `parent`
    (another's commit meanwhile fails it: GitFailed); `refs`: a run's own
    `git update-ref --stdin`, which moves it."""
    # A merge in progress (a run resolving another's conflicts): its commit has both.
    merge_head = tree.git_dir / "MERGE_HEAD"
    other = merge_head.read_text().split()[0] if merge_head.is_file() else None
    sha = (
        git(
            directory,
            *tree.identity,
            "commit-tree",
            "--no-gpg-sign",
            *(("-p", parent) if parent else ()),
            *(("-p", other) if other else ()),
            "-F",
            "-",
            written,
            stdin=message.encode(),
        )
        .stdout.decode()
        .strip()
    )
    if refs is not None and parent:
        moved = refs.ask(
            f"start\0update HEAD\0{sha}\0{parent}\0prepare\0commit\0".encode(), lines=3
        )
        if moved != [b"start: ok", b"prepare: ok", b"commit: ok"]:
            raise GitFailed("git update-ref: HEAD is no longer the commit it was")
    else:
        subject = message.splitlines()[0] if message else "claudeloop"
        git(directory, "update-ref", "-m", f"commit: {subject}", "HEAD", sha, parent or "")
    if other:
        git(directory, "merge", "--quit")  # concluded by the commit above
    return sha


class Streams:
    """The long-lived git processes of a run's quick commits (adapters/git_stream.py)."""

    def __init__(self, top: Path) -> None:
        self.trees = GitStream(top, "mktree", "-z", "--missing", "--batch")
        # One reflog message for them all: a stream's is given once, at its start.
        self.refs = GitStream(
            top, "update-ref", "-z", "--stdin", "-m", "commit: a turn of claudeloop"
        )

    def close(self) -> None:
        self.trees.close()
        self.refs.close()


@dataclass(frozen=True, slots=True)
class Head:
    commit: str
    tree: str


def head_of(directory: Path) -> Head | None:
    done = git(directory, "rev-parse", "HEAD", "HEAD^{tree}", check=False)
    said = done.stdout.decode().split()
    return Head(commit=said[0], tree=said[1]) if done.returncode == 0 and len(said) == 2 else None


def name_status(out: bytes) -> list[tuple[str, str]]:
    """`--name-status -z` as (kind, name) pairs."""
    fields = out.split(b"\0")
    return [
        (fields[index].decode(), os.fsdecode(fields[index + 1]))
        for index in range(0, len(fields) - 1, 2)
    ]


def tracked_paths(directory: Path) -> set[str]:
    """The paths in the index of the repository `directory` is in, from its top."""
    out = git(directory, "ls-files", "-z", "--full-name", "--", ":/").stdout
    return {os.fsdecode(name) for name in out.split(b"\0") if name}


def holds(path: Path, holds_secret: Callable[[str], bool]) -> bool:
    try:
        if path.is_symlink():
            return holds_secret(os.readlink(path))
        if path.stat().st_size > MAX_SCANNED_BYTES:
            return True  # not read, so not known to be free of one
        return holds_secret(path.read_bytes().decode(errors="replace"))
    except OSError:
        return False  # gone since it was staged: git commits what it staged


def unstage(directory: Path, names: list[str]) -> None:
    has_head = (
        git(directory, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0
    )
    literal = [f":(literal,top){name}" for name in names]
    if has_head:
        git(directory, "reset", "--quiet", "HEAD", "--", *literal)
    else:
        git(directory, "rm", "--cached", "--quiet", "--", *literal)
