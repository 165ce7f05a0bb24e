"""Review, rewind and merge of a run's branch: its commits by turn, their diff, the
branch reset to a turn, and the branch merged into the one it came from."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from claudeloop.adapters.git_checkpoint.git_cli import (
    IDENTITY,
    GitFailed,
    git,
    has_identity,
    names,
    out,
)
from claudeloop.application.branch import Merged
from claudeloop.application.errors import UsageError
from claudeloop.domain.checkpoints import RUN_TRAILER, TURN_TRAILER, turn_of


@dataclass(frozen=True, slots=True)
class TurnCommit:
    turn: int
    sha: str
    subject: str


def turn_commits(directory: Path, run_id: str) -> list[TurnCommit]:
    """The commits of run `run_id` on the branch checked out in `directory`, oldest
    first, each with the turn its trailer names."""
    if git(directory, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode:
        return []
    pattern = f"^{RUN_TRAILER}: {re.escape(run_id)}$"
    log = git(
        directory,
        "log",
        "--reverse",
        f"--grep={pattern}",
        f"--format=%H%x1f%s%x1f%(trailers:key={TURN_TRAILER},valueonly,separator=)%x1e",
        "HEAD",
    ).stdout.decode(errors="replace")
    found: list[TurnCommit] = []
    for entry in log.split("\x1e"):
        parts = entry.strip("\n").split("\x1f")
        if len(parts) == 3:
            found.append(TurnCommit(turn=turn_of(parts[2]), sha=parts[0], subject=parts[1]))
    return found


def _start_of(directory: Path, commits: list[TurnCommit]) -> str:
    """The commit the run's first commit was made on (the empty tree for a root)."""
    first = commits[0].sha
    parent = git(directory, "rev-parse", "--verify", "--quiet", f"{first}^", check=False)
    if parent.returncode == 0:
        return parent.stdout.decode().strip()
    return git(directory, "hash-object", "-t", "tree", "/dev/null").stdout.decode().strip()


def run_diff(directory: Path, run_id: str, turn: int | None, *, stat: bool = False) -> str:
    """What the run's commits changed (`turn`: that turn's commit alone), as a patch
    or (`stat`) a diffstat; "" when there is no such commit."""
    commits = turn_commits(directory, run_id)
    if not commits:
        return ""
    if turn is None:
        start, end = _start_of(directory, commits), commits[-1].sha
    else:
        chosen = [commit for commit in commits if commit.turn == turn]
        if not chosen:
            return ""
        end = chosen[-1].sha
        start = _start_of(directory, [chosen[-1]])
    shape = ("--stat",) if stat else ("--stat", "--patch")
    return git(directory, "diff", *shape, start, end).stdout.decode(errors="replace")


def branch_facts(directory: Path, run_id: str) -> dict[str, object]:
    """The branch, its commits of this run and their diffstat, for `status`."""
    commits = turn_commits(directory, run_id)
    shortstat = ""
    if commits:
        done = git(directory, "diff", "--shortstat", _start_of(directory, commits), commits[-1].sha)
        shortstat = done.stdout.decode().strip()
    head = git(directory, "symbolic-ref", "--short", "--quiet", "HEAD", check=False)
    return {
        "branch": head.stdout.decode().strip() or None,
        "commits": [{"turn": c.turn, "sha": c.sha, "subject": c.subject} for c in commits],
        "diffstat": shortstat,
    }


def rewind_to(directory: Path, run_id: str, turn: int, *, own: bool) -> tuple[str, list[int]]:
    """The branch reset to the commit of `turn` (0: to where the run began); returns the
    commit it is on now and the turns undone. `own`: the worktree is the run's, so its
    uncommitted changes go too (else git refuses to lose a person's changes)."""
    commits = turn_commits(directory, run_id)
    if not commits:
        raise UsageError(f"run {run_id} has no commit on its branch to rewind")
    undone = [commit.turn for commit in commits if commit.turn > turn]
    if turn == 0:
        target = _start_of(directory, commits)
    else:
        kept = [commit for commit in commits if commit.turn <= turn]
        if not kept:
            raise UsageError(
                f"--to-turn {turn}: no commit of run {run_id} is of turn {turn} or before; "
                f"its commits are of turns {', '.join(str(c.turn) for c in commits)}, "
                "or 0 for where it began"
            )
        target = kept[-1].sha
    try:
        git(directory, "reset", "--quiet", "--hard" if own else "--keep", target)
    except GitFailed as failed:
        raise UsageError(f"cannot rewind run {run_id}: {failed}") from None
    return target, undone


def merge_branch(repository: Path, branch: str, into: str) -> Merged:
    """`branch` merged into `into`, which must be the checkout's current branch (with
    no uncommitted change to tracked files); a merge that conflicts is undone."""
    current = git(repository, "symbolic-ref", "--short", "--quiet", "HEAD", check=False)
    if current.stdout.decode().strip() != into:
        raise UsageError(
            f"the checkout {repository} is not on {into}, the branch the run came from; "
            f"`git switch {into}` first"
        )
    dirty = git(repository, "status", "--porcelain", "--untracked-files=no").stdout.strip()
    if dirty:
        raise UsageError(
            f"the checkout {repository} has uncommitted changes; commit or stash them first"
        )
    identity = () if has_identity(repository) else IDENTITY
    done = git(
        repository,
        "-c",
        "commit.gpgsign=false",
        *identity,
        "merge",
        "--no-ff",
        "--no-edit",
        "-m",
        f"Merge {branch}",
        branch,
        check=False,
    )
    if done.returncode == 0:
        return Merged(sha=out(repository, "rev-parse", "HEAD"))
    conflicts = tuple(names(repository, "diff", "--name-only", "--diff-filter=U", "-z"))
    git(repository, "merge", "--abort", check=False)
    if not conflicts:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise GitFailed(f"git merge: {said[-1] if said else f'exit {done.returncode}'}")
    return Merged(sha=None, conflicts=conflicts)
