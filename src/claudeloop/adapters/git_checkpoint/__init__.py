"""A run's branch in git: the worktree a `--worktree` run works in, and a commit per
answered turn (the `Checkpoints` port), which the fleet's `--repo` commits through too.

A worktree lives in the user state directory (`CLAUDELOOP_STATE_DIR/worktrees/`), not
in the checkout: a worktree inside the checkout would be seen by the checkout's own
tools (a test runner collecting its tests twice, a linter, Claude Code reading the
checkout's CLAUDE.md above the worktree's), and the checkout is never touched but for
its run directory. The branch is `claudeloop/RUN_ID`, made from HEAD.

A commit never holds the run's own files (`.claudeloop/`) nor a file holding a secret
the run knows (its `Redactor`'s values): such a file stays in the working tree,
uncommitted, and the runner says so with a `commit.refused` event.

A run's first commit looks at every file (`git add --all`) and starts a watch of the
tree (adapters/tree_watch.py); each later one stages only the paths the watch saw
change, makes the commit's tree from the last commit's (adapters/git_tree.py) and moves
the branch through a `git update-ref --stdin` kept for the run (adapters/git_stream.py),
so its cost follows what a turn changed, not the tree's size. Wherever that cannot be
sure (the watch overflowed or could not be kept, more than `_MAX_CHANGED_PATHS` paths,
a conflict in the index, git saying anything unforeseen), the commit looks at every
file again. Not seen by the watch, and so committed at the next look at every file: a
file the model staged itself without changing it in the turn, and a write through a
shared memory map.

By concern, one module each: running git (git_cli.py), the worktree (worktree.py),
what writing a commit takes (plumbing.py), the commit that looks at every file
(full_commit.py), the quick one of what the watch saw change (quick_commit.py), the
`Checkpoints` port that chooses between them (checkpoints.py), and review, rewind and
merge of the branch (review.py). The names others use are here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from claudeloop.adapters.git_checkpoint.checkpoints import GitCheckpoints, run_checkpoints
    from claudeloop.adapters.git_checkpoint.full_commit import commit_all
    from claudeloop.adapters.git_checkpoint.git_cli import GitFailed, git, run_branch
    from claudeloop.adapters.git_checkpoint.plumbing import (
        MAX_SCANNED_BYTES,
        GitLayout,
        tracked_paths,
    )
    from claudeloop.adapters.git_checkpoint.review import (
        TurnCommit,
        branch_facts,
        merge_branch,
        rewind_to,
        run_diff,
        turn_commits,
    )
    from claudeloop.adapters.git_checkpoint.worktree import (
        Worktree,
        branch_exists,
        make_worktree,
        repository_top,
        restore_worktree,
        worktrees_root,
    )

__all__ = [
    "MAX_SCANNED_BYTES",
    "GitCheckpoints",
    "GitFailed",
    "GitLayout",
    "TurnCommit",
    "Worktree",
    "branch_exists",
    "branch_facts",
    "commit_all",
    "git",
    "make_worktree",
    "merge_branch",
    "repository_top",
    "restore_worktree",
    "rewind_to",
    "run_branch",
    "run_checkpoints",
    "run_diff",
    "tracked_paths",
    "turn_commits",
    "worktrees_root",
]

# Each name is imported from its module when first asked for: a start refused before it
# commits (the worktree's module alone) does not pay for the commits' machinery.
_HOME = {
    "GitCheckpoints": "checkpoints",
    "run_checkpoints": "checkpoints",
    "commit_all": "full_commit",
    "GitFailed": "git_cli",
    "git": "git_cli",
    "run_branch": "git_cli",
    "MAX_SCANNED_BYTES": "plumbing",
    "GitLayout": "plumbing",
    "tracked_paths": "plumbing",
    "TurnCommit": "review",
    "branch_facts": "review",
    "merge_branch": "review",
    "rewind_to": "review",
    "run_diff": "review",
    "turn_commits": "review",
    "Worktree": "worktree",
    "branch_exists": "worktree",
    "make_worktree": "worktree",
    "repository_top": "worktree",
    "restore_worktree": "worktree",
    "worktrees_root": "worktree",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
