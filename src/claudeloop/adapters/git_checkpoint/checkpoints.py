"""The `Checkpoints` port on git: a commit per answered turn on the branch checked out
in the run's directory, quick (quick_commit.py) while a watch of the tree can say what
changed, else looking at every file (full_commit.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from claudeloop.adapters.git_checkpoint.full_commit import commit_everything
from claudeloop.adapters.git_checkpoint.git_cli import GitFailed, git
from claudeloop.adapters.git_checkpoint.plumbing import (
    GitLayout,
    Head,
    Streams,
    head_of,
    tracked_paths,
)
from claudeloop.adapters.git_checkpoint.quick_commit import commit_changed
from claudeloop.adapters.tree_watch import Changed, TreeWatch
from claudeloop.application.ports import Checkpoint
from claudeloop.domain.checkpoints import RUN_TRAILER, TURN_TRAILER, turn_of

if TYPE_CHECKING:
    from claudeloop.adapters.redaction import Redactor
    from claudeloop.application.records import RunSpec


class GitCheckpoints:
    """Satisfies the application's `Checkpoints` port: the branch checked out in
    `directory`. `holds_secret`: whether a text holds a secret the run knows; `redact`:
    a text with them masked, as every message is written (it is the model's summary,
    kept in the repository's history and shown by `status`, `git log` and every clone).
    `own`: the worktree is the run's alone, so the locks a kill -9 left in the middle of
    a commit are removed before this process's first one."""

    def __init__(
        self,
        directory: Path,
        run_id: str,
        *,
        holds_secret: Callable[[str], bool],
        redact: Callable[[str], str],
        own: bool = False,
    ) -> None:
        self._directory = directory
        self._run_id = run_id
        self._holds_secret = holds_secret
        self._redact = redact
        self._stale_locks = own  # looked for once: only a killed process leaves them
        self._branch: str | None = None
        self._tree: GitLayout | None = None
        # The turn of this process's own last commit: the branch moves by no one else's
        # commit of this run, so it is asked of git only until then (after a resume).
        self._committed_turn: int | None = None
        # What changed since the last commit (adapters/tree_watch.py); None: not watched
        # yet, or the watch could not say, so the next commit looks at every file.
        self._watch: TreeWatch | None = None
        # HEAD as this process's last commit left it: not asked of git again while only
        # this run commits here (a commit on it by anyone else fails the update of the
        # branch, which is then tried again from HEAD as git says it).
        self._head: Head | None = None
        # The paths in the index while the tree is watched (None: not watched).
        self._tracked: set[str] | None = None
        self._streams: Streams | None = None

    @property
    def branch(self) -> str:
        if self._branch is None:
            done = git(self._directory, "symbolic-ref", "--short", "--quiet", "HEAD", check=False)
            self._branch = done.stdout.decode().strip() or "HEAD"
        return self._branch

    def last_turn(self) -> int:
        if self._committed_turn is not None:
            return self._committed_turn
        pattern = f"^{RUN_TRAILER}: {re.escape(self._run_id)}$"
        done = git(
            self._directory,
            "log",
            "-1",
            f"--format=%(trailers:key={TURN_TRAILER},valueonly)",
            f"--grep={pattern}",
            "HEAD",
            check=False,  # no commit yet: no turn
        )
        return turn_of(done.stdout.decode(errors="replace")) if done.returncode == 0 else 0

    def _commit_changed(
        self, message: str, changed: Changed, tree: GitLayout, tracked: set[str]
    ) -> tuple[Checkpoint, Head | None] | None:
        """The commit of what the watch saw change; None when every file must be looked
        at instead."""
        if not changed:
            return Checkpoint(sha=None), self._head  # nothing changed since the last commit
        for believed in (self._head, None) if self._head is not None else (None,):
            head = believed or head_of(self._directory)
            if head is None:
                return None  # no commit yet
            try:
                return commit_changed(
                    self._directory,
                    message,
                    changed,
                    head,
                    tracked=tracked,
                    holds_secret=self._holds_secret,
                    tree=tree,
                    streams=self._streams_of(tree),
                )
            except GitFailed:
                continue  # HEAD moved by a commit of someone else's: once more from git's
        return None

    def _streams_of(self, tree: GitLayout) -> Streams:
        if self._streams is None:
            self._streams = Streams(tree.top)
        return self._streams

    def close(self) -> None:
        """Stop watching the tree and end the git processes kept for the next commit."""
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        if self._streams is not None:
            self._streams.close()
            self._streams = None

    def commit(self, message: str) -> Checkpoint:
        message = self._redact(message)
        if self._tree is None:
            self._tree = GitLayout.of(self._directory)
        if self._stale_locks:
            self._tree.remove_stale_locks(self.branch)
            self._stale_locks = False
        changed = self._watch.changes() if self._watch is not None else None
        quick = None
        if changed is not None and self._tracked is not None:
            quick = self._commit_changed(message, changed, self._tree, self._tracked)
        if quick is None:
            # Watched from before the look at every file: a change made meanwhile is seen
            # by the look or by the watch, or by both.
            if self._watch is not None:
                self._watch.close()
            self._watch = TreeWatch.start(self._tree.top)
            quick = commit_everything(
                self._directory, message, holds_secret=self._holds_secret, tree=self._tree
            )
            self._tracked = tracked_paths(self._tree.top) if self._watch is not None else None
        done, self._head = quick
        if done.sha is not None:
            said = [line for line in message.splitlines() if line.startswith(f"{TURN_TRAILER}:")]
            if said:
                self._committed_turn = turn_of(said[-1].split(":", 1)[1])
        return done


def run_checkpoints(spec: RunSpec, run_id: str, redactor: Redactor) -> GitCheckpoints | None:
    """A commit per answered turn of a committing run (None: it commits nothing), on the
    worktree's branch or the current one; a file holding a secret it knows stays out."""
    if not spec.checkpoint:
        return None
    return GitCheckpoints(
        spec.work_dir,
        run_id,
        holds_secret=redactor.knows_one_in,
        redact=redactor.text,
        own=spec.worktree is not None,
    )
