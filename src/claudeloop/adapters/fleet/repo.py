"""A run queued with --repo: its working tree travels through git.

The worker clones the repository into a directory of its own and works on the run's
branch, `claudeloop/RUN_ID`: the branch as last pushed when it exists (a takeover, or
a run handed back), else a new one from --branch (default: the remote's default
branch). The run commits each answered turn itself, as `--checkpoint` does
(adapters/git_checkpoint/: the same commits, trailers and refusals as a `--worktree`
run's), and the worker pushes the branch after each turn; only a run queued before
that, whose record does not checkpoint, has its work committed by the worker, as work
in progress, through the same code. The run's own files (`.claudeloop/`) are never
committed: they travel through the engine.

Git runs as the worker's user, with its configuration and credentials (SSH keys, a
credential helper); a URL that carries a password is refused where it is queued.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from claudeloop.adapters.git_checkpoint import GitFailed, commit_all
from claudeloop.adapters.private_file import make_private_directory
from claudeloop.adapters.redaction import Redactor

_TIMEOUT_SECONDS = 300


class RepoFailed(RuntimeError):
    """A git command failed; the message is one line: what was done and what git said."""


def run_branch(run_id: str) -> str:
    return f"claudeloop/{run_id}"


def _git(
    directory: Path | None, *args: str, env: Mapping[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    command = ["git", *(["-C", str(directory)] if directory else []), *args]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_SECONDS,
            check=False,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RepoFailed(f"git {args[0]}: {error}") from None
    if check and done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        raise RepoFailed(f"git {args[0]}: {said[-1] if said else f'exit {done.returncode}'}")
    return done


def prepare(url: str, branch: str | None, run_id: str, directory: Path) -> None:
    """A clone of `url` in `directory` on the run's branch, as last pushed when the
    remote has it (what is in `directory` already is replaced by it: another worker
    went on since)."""
    if not (directory / ".git").is_dir():
        make_private_directory(directory.parent)
        _git(None, "clone", "--quiet", url, str(directory))
    exclude = directory / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    if ".claudeloop/" not in (exclude.read_text() if exclude.exists() else ""):
        with exclude.open("a") as file:
            file.write("\n.claudeloop/\n")
    ours = run_branch(run_id)
    _git(directory, "fetch", "--quiet", "origin")
    pushed = _git(directory, "rev-parse", "--verify", "--quiet", f"origin/{ours}", check=False)
    if pushed.returncode == 0:
        _git(directory, "checkout", "--quiet", "-B", ours, f"origin/{ours}")
        _git(directory, "reset", "--quiet", "--hard", f"origin/{ours}")
        return
    start = f"origin/{branch}" if branch else "origin/HEAD"
    if _git(directory, "rev-parse", "--verify", "--quiet", start, check=False).returncode != 0:
        raise RepoFailed(f"git checkout: no branch {branch or 'HEAD'} in {url}")
    _git(directory, "checkout", "--quiet", "-B", ours, start)


def push(directory: Path, run_id: str, message: str, *, commit: bool = True) -> None:
    """Push the run's branch (a commit a failed push left behind goes with it);
    `commit`: first commit what changed in the working tree, if anything (a run that
    does not commit its turns itself)."""
    if commit:
        # A file holding a secret of this worker's environment stays behind, as a
        # run's own commits leave it (git_checkpoint): a push would carry it off.
        secrets = Redactor.from_environment()
        try:
            commit_all(directory, message, holds_secret=secrets.knows_one_in)
        except GitFailed as failed:
            raise RepoFailed(str(failed)) from None
    _git(directory, "push", "--quiet", "origin", f"HEAD:refs/heads/{run_branch(run_id)}")
