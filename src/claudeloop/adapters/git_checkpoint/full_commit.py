"""A commit that looks at every file (`git add --all`): a run's first, and any the
watch of the tree cannot vouch for; also the fleet's `--repo` commits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from claudeloop.adapters.git_checkpoint.git_cli import RUN_FILES, git, out
from claudeloop.adapters.git_checkpoint.plumbing import (
    GitLayout,
    Head,
    holds,
    name_status,
    unstage,
    write_commit,
)
from claudeloop.application.ports import Checkpoint


def commit_all(
    directory: Path,
    message: str,
    *,
    holds_secret: Callable[[str], bool] | None = None,
    tree: GitLayout | None = None,
) -> Checkpoint:
    """Commit every change of the working tree of `directory` (the whole repository's,
    untracked files too) but the run files and the files holding a secret. The commit
    is written with git's plumbing (write-tree, commit-tree, update-ref): no hook, no
    signing, and no second look at every file of a big tree as `git commit` takes."""
    done, _ = commit_everything(
        directory, message, holds_secret=holds_secret, tree=tree or GitLayout.of(directory)
    )
    return done


def commit_everything(
    directory: Path,
    message: str,
    *,
    holds_secret: Callable[[str], bool] | None,
    tree: GitLayout,
) -> tuple[Checkpoint, Head | None]:
    """`commit_all`, and HEAD after it (None: not known)."""
    # The untracked cache: a directory unchanged since the last look is not read again.
    git(directory, "-c", "core.untrackedCache=true", "add", "--all", "--", ":/", *RUN_FILES)
    changes = name_status(
        git(
            directory,
            "-c",
            "core.quotePath=false",
            "diff",
            "--cached",
            "--name-status",
            "-z",
            "--no-renames",
        ).stdout
    )
    if not changes:
        return Checkpoint(sha=None), None
    said = git(directory, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
    parent = said.stdout.decode().strip() if said.returncode == 0 else None
    return _commit_staged(directory, message, changes, parent, holds_secret=holds_secret, tree=tree)


def _commit_staged(
    directory: Path,
    message: str,
    changes: list[tuple[str, str]],
    parent: str | None,
    *,
    holds_secret: Callable[[str], bool] | None,
    tree: GitLayout,
    written: str | None = None,
) -> tuple[Checkpoint, Head | None]:
    """The staged `changes` committed on `parent` (`written`: the index's tree, when it
    is known), but the files holding a secret, which are unstaged; and HEAD after it."""
    refused: list[str] = []
    if holds_secret is not None:
        refused = [
            name for kind, name in changes if kind != "D" and holds(tree.top / name, holds_secret)
        ]
    if refused:
        unstage(directory, refused)
        written = None
    committed = tuple(name for _, name in changes if name not in refused)
    if not committed:
        return Checkpoint(sha=None, refused=tuple(refused)), None
    if written is None:
        written = out(directory, "write-tree")
    sha = write_commit(directory, message, written, parent, tree=tree)
    return Checkpoint(sha=sha, files=committed, refused=tuple(refused)), Head(sha, written)
