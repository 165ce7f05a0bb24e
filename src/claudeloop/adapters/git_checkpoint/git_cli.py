"""Running git: one command, its failure said in one line (GitFailed), and what every
module of a run's branch passes it (who commits, which files are never committed)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

_TIMEOUT_SECONDS = 300
IDENTITY = ("-c", "user.name=claudeloop", "-c", "user.email=claudeloop@localhost")
# Never in a commit: the run directories, wherever they sit in the tree.
# (`**/` matches no directory too; a pathspec naming `.claudeloop` itself would make
# `git add` fail where it is ignored.)
RUN_FILES = (":(exclude,glob,top)**/.claudeloop/**",)


class GitFailed(OSError):
    """A git command failed; the message is one line: what was done and what git said.
    An OSError, so a run it ends is `failed` with the reason, never a traceback."""


def run_branch(run_id: str) -> str:
    return f"claudeloop/{run_id}"


def git(
    directory: Path | None,
    *args: str,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    command = ["git", *(["-C", str(directory)] if directory else []), *args]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            timeout=_TIMEOUT_SECONDS,
            check=False,
            env=dict(env) if env is not None else None,
            input=stdin if stdin is not None else b"",
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitFailed(f"git {args[0]}: {error}") from None
    if check and done.returncode != 0:
        text = done.stderr.decode(errors="replace")
        said = [line for line in text.splitlines() if line.strip()]
        raise GitFailed(f"git {args[0]}: {said[-1] if said else f'exit {done.returncode}'}")
    return done


def out(directory: Path, *args: str) -> str:
    return git(directory, *args).stdout.decode(errors="surrogateescape").strip()


def names(directory: Path, *args: str) -> list[str]:
    out = git(directory, "-c", "core.quotePath=false", *args).stdout
    return [os.fsdecode(name) for name in out.split(b"\0") if name]


def has_identity(directory: Path) -> bool:
    return git(directory, "config", "user.email", check=False).stdout.strip() != b""
