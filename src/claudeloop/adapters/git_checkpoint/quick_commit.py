"""A commit of only the paths the watch of the tree saw change: staged by name, its
tree the last commit's with those paths changed (adapters/git_tree.py), the branch moved
through the run's own `git update-ref --stdin`. None wherever it cannot be sure: the
caller looks at every file instead (full_commit.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from claudeloop.adapters.git_checkpoint.git_cli import git, names
from claudeloop.adapters.git_checkpoint.plumbing import (
    GitLayout,
    Head,
    Streams,
    holds,
    unstage,
    write_commit,
)
from claudeloop.adapters.git_tree import Entry, OldTrees, edited_tree
from claudeloop.adapters.tree_watch import Changed
from claudeloop.application.ports import Checkpoint

_MAX_CHANGED_PATHS = 2_000


def commit_changed(
    directory: Path,
    message: str,
    changed: Changed,
    head: Head,
    *,
    tracked: set[str],
    holds_secret: Callable[[str], bool] | None,
    tree: GitLayout,
    streams: Streams,
) -> tuple[Checkpoint, Head | None] | None:
    """`commit_everything` looking only at the paths a watch saw change; `tracked`: the paths in
    the index, kept up to date here. None when it cannot be sure (too many paths for a
    command line, or git said something unforeseen): every file is looked at instead.

    The commit holds, of those paths, what `git add --all` stages; its tree is the last
    commit's with those paths changed (adapters/git_tree.py), not the whole index's: a
    file the model staged itself but did not change in the turn is committed at the next
    look at every file."""
    asked = set(changed.paths)
    for gone in changed.gone:
        asked.update(path for path in tracked if path.startswith(f"{gone}/"))
    # A path made and removed within the turn is neither tracked nor there: given to
    # `git add`, it would fail the whole command.
    given = sorted(path for path in asked if path in tracked or os.path.lexists(tree.top / path))
    # A path under what is a file or a link now: `git add` of that file or link removes
    # it (and, for a link, refuses to be given it).
    replaced = {path for path in given if _under_a_file(tree.top, path) in asked}
    if any(_under_a_file(tree.top, path) for path in given if path not in replaced):
        return None
    if replaced:
        given = [path for path in given if path not in replaced]
        tracked.difference_update(replaced)
    if len(given) > _MAX_CHANGED_PATHS:
        return None
    if not given:
        return Checkpoint(sha=None), head
    old = OldTrees(tree.top, head.tree, given)
    try:
        return _stage_and_commit(
            directory,
            message,
            given=given,
            head=head,
            old=old,
            tracked=tracked,
            holds_secret=holds_secret,
            tree=tree,
            streams=streams,
        )
    finally:
        old.close()


def _stage_and_commit(
    directory: Path,
    message: str,
    *,
    given: list[str],
    head: Head,
    old: OldTrees,
    tracked: set[str],
    holds_secret: Callable[[str], bool] | None,
    tree: GitLayout,
    streams: Streams,
) -> tuple[Checkpoint, Head | None] | None:
    literal = ("--literal-pathspecs", "-c", "core.quotePath=false")
    done = git(
        tree.top,
        *literal,
        "-c",
        "advice.addIgnoredFile=false",
        # A few paths: the threads that would look at them side by side cost more.
        "-c",
        "core.preloadIndex=false",
        "add",
        "--all",
        "--pathspec-from-file=-",
        "--pathspec-file-nul",
        stdin=b"\0".join(os.fsencode(path) for path in given),
        env={**os.environ, "LC_ALL": "C", "LANGUAGE": ""},
        check=False,
    )
    # New files git ignores are left out, said on stderr, and the exit is 1.
    if done.returncode != 0 and not (
        done.returncode == 1 and done.stderr.startswith(_IGNORED_SAID)
    ):
        return None
    staged = _staged(git(tree.top, *literal, "ls-files", "--stage", "-z", "--", *given).stdout)
    if staged is None:
        return None  # a conflict in the index: git's own way says what to commit
    changes: dict[str, Entry | None] = {path: staged.get(path) for path in given}
    edited = edited_tree(old, changes, trees_out=streams.trees)
    if edited is None:
        return None
    refused = [
        path
        for path in edited.changed
        if changes[path] is not None
        and holds_secret is not None
        and holds(tree.top / path, holds_secret)
    ]
    if refused:
        unstage(directory, refused)
        for path in refused:
            del changes[path]
        edited = edited_tree(old, changes, trees_out=streams.trees) if changes else None
        if changes and edited is None:
            return None
    for path in given:
        if staged.get(path) is not None:
            tracked.add(path)
        else:
            tracked.discard(path)
    if refused:  # unstaged: in the index again only where the last commit has them
        tracked.difference_update(refused)
        tracked.update(names(tree.top, "--literal-pathspecs", "ls-files", "-z", "--", *refused))
    if edited is None or not edited.changed:
        return Checkpoint(sha=None, refused=tuple(refused)), head
    sha = write_commit(directory, message, edited.tree, head.commit, tree=tree, refs=streams.refs)
    return Checkpoint(sha=sha, files=edited.changed, refused=tuple(refused)), Head(sha, edited.tree)


def _under_a_file(top: Path, path: str) -> str | None:
    """The directory of `path` that is a file or a link now (None: none is)."""
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        directory = "/".join(parts[:depth])
        if not (top / directory).is_dir() or (top / directory).is_symlink():
            return directory if os.path.lexists(top / directory) else None
    return None


def _staged(out: bytes) -> dict[str, Entry] | None:
    """`ls-files --stage -z` as path -> entry; None when a path is in conflict."""
    staged: dict[str, Entry] = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        fields, _, path = record.partition(b"\t")
        said = fields.decode(errors="replace").split()
        if len(said) != 3:
            return None
        mode, sha, stage = said
        if stage != "0":
            return None
        staged[os.fsdecode(path)] = Entry(mode, sha)
    return staged


_IGNORED_SAID = b"The following paths are ignored by one of your .gitignore files:"
