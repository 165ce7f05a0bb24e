"""A run's worktree: where a `--worktree` run works, on its branch `claudeloop/RUN_ID`,
in the user state directory (`CLAUDELOOP_STATE_DIR/worktrees/`), never in the checkout.
`refuse_no_repository` and `into_worktree` are the `Repository` of `run` and `resume`
(application/launching.py)."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from claudeloop.adapters.git_checkpoint.git_cli import (
    IDENTITY,
    RUN_FILES,
    GitFailed,
    git,
    has_identity,
    out,
    run_branch,
)
from claudeloop.application.errors import UsageError

if TYPE_CHECKING:
    from claudeloop.adapters.run_directory.layout import RunDirectory
    from claudeloop.application.records import RunRecord, RunSpec


def worktrees_root(environ: Mapping[str, str]) -> Path:
    """CLAUDELOOP_STATE_DIR/worktrees, else the user state directory's."""
    override = environ.get("CLAUDELOOP_STATE_DIR")
    if override:
        return Path(override).expanduser() / "worktrees"
    import platformdirs

    return Path(platformdirs.user_state_dir("claudeloop")) / "worktrees"


@dataclass(frozen=True, slots=True)
class Worktree:
    """A run's worktree: `work_dir` is where the run works (the worktree, or the same
    subdirectory of it that the run was started in), `top` the worktree's root."""

    top: Path
    work_dir: Path
    branch: str
    # The branch of the checkout it was made from (None: a detached HEAD).
    base_branch: str | None
    # Uncommitted changes of the checkout that were left behind (--worktree-from head).
    left_behind: bool


def branch_exists(top: Path, branch: str) -> bool:
    done = git(top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
    return done.returncode == 0


def repository_top(cwd: Path) -> Path | None:
    """The top of the repository `cwd` is in (None: not in one, or no git)."""
    try:
        done = git(cwd, "rev-parse", "--show-toplevel", check=False)
    except GitFailed:
        return None
    if done.returncode != 0:
        return None
    return Path(done.stdout.decode(errors="surrogateescape").strip())


def make_worktree(
    cwd: Path, run_id: str, *, root: Path, carry: bool, merging: str | None = None
) -> Worktree:
    """A worktree of the repository `cwd` is in, on `claudeloop/RUN_ID` made from HEAD,
    under `root`; `carry`: the checkout's uncommitted changes (untracked files too) are
    copied into it, else left behind. `merging`: a branch merged into it at once, its
    conflicts left in the files for the run to resolve (its first commit concludes the
    merge). The checkout itself is not changed."""
    top = repository_top(cwd)
    if top is None:
        raise UsageError(
            f"--worktree: {cwd} is not in a git repository (or git is not installed); "
            "run it in a repository, or leave out --worktree"
        )
    if git(top, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
        raise UsageError(
            f"--worktree: the repository {top} has no commit yet to branch from; "
            "commit once, or leave out --worktree"
        )
    branch = run_branch(run_id)
    if (
        git(top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode
        == 0
    ):
        raise UsageError(
            f"--worktree: the branch {branch} already exists in {top}; pick another "
            "--run-id, or delete the branch"
        )
    base = git(top, "symbolic-ref", "--short", "--quiet", "HEAD", check=False)
    base_branch = base.stdout.decode().strip() or None if base.returncode == 0 else None
    common = out(top, "rev-parse", "--path-format=absolute", "--git-common-dir")
    key = hashlib.sha256(common.encode(errors="surrogateescape")).hexdigest()[:8]
    path = root / f"{top.name}-{key}" / run_id
    path.parent.mkdir(parents=True, exist_ok=True)
    git(top, "worktree", "add", "--quiet", "-b", branch, str(path), "HEAD")
    dirty = out(top, "status", "--porcelain", "--", ":/", *RUN_FILES) != ""
    if carry and dirty:
        _carry(top, path)
    if merging is not None:
        identity = () if has_identity(path) else IDENTITY
        done = git(path, *identity, "merge", "--no-ff", "--no-commit", merging, check=False)
        started = git(path, "rev-parse", "--verify", "--quiet", "MERGE_HEAD", check=False)
        if started.returncode != 0:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            raise GitFailed(f"git merge {merging}: {said[-1] if said else 'it did not start'}")
    inside = cwd.resolve().relative_to(top.resolve())
    return Worktree(
        top=path,
        work_dir=path / inside,
        branch=branch,
        base_branch=base_branch,
        left_behind=dirty and not carry,
    )


def _carry(top: Path, worktree: Path) -> None:
    """The checkout's uncommitted changes into the worktree: the diff of tracked files
    against HEAD, then a copy of each untracked file git does not ignore."""
    diff = git(top, "diff", "HEAD", "--binary", "--", ":/", *RUN_FILES).stdout
    if diff:
        git(worktree, "apply", "--binary", "--whitespace=nowarn", stdin=diff)
    listed = git(top, "ls-files", "--others", "--exclude-standard", "-z", "--", ":/", *RUN_FILES)
    for name in listed.stdout.split(b"\0"):
        if not name:
            continue
        relative = os.fsdecode(name)
        target = worktree / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(top / relative, target, follow_symlinks=False)


def restore_worktree(worktree: Path, run_id: str, *, repository: Path) -> None:
    """The run's worktree again where a resume expects it, from the run's branch, when
    it is gone (a person removed it); nothing when it is there."""
    if (worktree / ".git").exists():
        return
    top = repository_top(repository)
    if top is None:
        raise UsageError(
            f"the run's worktree {worktree} is gone and {repository} is no git repository "
            "to make it again from"
        )
    git(top, "worktree", "prune")
    try:
        git(top, "worktree", "add", "--quiet", str(worktree), run_branch(run_id))
    except GitFailed as failed:
        raise UsageError(
            f"the run's worktree {worktree} is gone and cannot be made again: {failed}"
        ) from None


def refuse_no_repository(spec: RunSpec) -> None:
    """--checkpoint commits on the current branch: the directory must be in a repository."""
    if spec.checkpoint and spec.worktree is None and repository_top(spec.cwd) is None:
        raise UsageError(
            f"--checkpoint: {spec.cwd} is not in a git repository (or git is not "
            "installed); run it in a repository, or leave out --checkpoint"
        )


def into_worktree(
    directory: RunDirectory, record: RunRecord, *, carry: bool, merging: str | None = None
) -> tuple[RunRecord, bool]:
    """The record of a --worktree run, its worktree made (on claudeloop/RUN_ID from
    HEAD, under the user state directory) and saved in it; a plan file inside the
    repository is read from the worktree's copy. Also whether uncommitted changes of
    the checkout were left behind. A worktree that cannot be made leaves no run."""
    spec = record.spec
    try:
        made = make_worktree(
            spec.cwd,
            record.run_id,
            root=worktrees_root(os.environ),
            carry=carry,
            merging=merging,
        )
    except BaseException:
        shutil.rmtree(directory.path, ignore_errors=True)
        raise
    plan_path = spec.plan_path
    top = repository_top(spec.cwd)
    if plan_path is not None and top is not None and plan_path.is_relative_to(top):
        # The worktree's copy, when HEAD has one; else the checkout's (never committed).
        copy = made.top / plan_path.relative_to(top)
        plan_path = copy if copy.is_file() else plan_path
    spec = replace(
        spec,
        worktree=made.work_dir,
        base_branch=made.base_branch,
        checkpoint=True,
        plan_path=plan_path,
    )
    record = replace(record, spec=spec)
    directory.save(record)
    return record, made.left_behind
