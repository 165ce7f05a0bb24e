"""A run's boundary on this machine (domain.confinement, adapters/sandbox.py): the posture
of this start, Claude Code's settings for it, the checks inside bubblewrap, and the
refusal of checks that would run unconfined (the `Sandbox` of `run` and `resume`)."""

from __future__ import annotations

import functools
import json
import os
import platform
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from claudeloop.adapters import sandbox
from claudeloop.adapters.claude_code.blocked import Lines
from claudeloop.application.errors import UsageError
from claudeloop.domain.confinement import (
    CommandsRefused,
    Confined,
    Posture,
    Unavailable,
    Unconfined,
    checks_refusal,
    posture,
)

if TYPE_CHECKING:
    from claudeloop.adapters.verification_commands import VerificationCommands
    from claudeloop.application.records import RunSpec


@functools.cache
def _machine(path: str | None) -> Unavailable | None:
    return sandbox.unavailable({"PATH": path} if path is not None else {})


def machine_sandbox() -> Unavailable | None:
    """Why the sandbox cannot run on this machine (None: it can), asked once per PATH."""
    return _machine(os.environ.get("PATH"))


def start_posture(spec: RunSpec) -> Posture:
    """Where this start runs the model's commands and the checks."""
    return posture(spec.sandbox, machine_sandbox() if spec.sandbox.on else None)


def refuse_unconfined_checks(spec: RunSpec) -> None:
    """A run whose checks would run unconfined is refused, never run (exit 2)."""
    has_checks = bool(spec.verify.checks)
    chosen = start_posture(spec)
    if (why := checks_refusal(chosen, has_checks=has_checks)) is not None:
        raise UsageError(why)
    if isinstance(chosen, Confined) and has_checks and shutil.which("bwrap") is None:
        # macOS confines the model's commands with Seatbelt; claudeloop's own layer
        # around its checks is bubblewrap, which is Linux's.
        raise UsageError(
            f"--verify runs code the model wrote, and claudeloop confines its checks with "
            f"bubblewrap, which {platform.system()} lacks; say --sandbox off to run the "
            "checks unconfined"
        )


@dataclass(frozen=True, slots=True)
class TurnBoundary:
    """What the gateway passes Claude Code for the boundary, and reads back."""

    settings: str | None
    lines: Lines | None


def _reads(spec: RunSpec, home: Path) -> list[str]:
    """Outside the tree, what commands may read: the toolchains, and a worktree's git
    directory (its `.git` file points there; git reads it, never writes it)."""
    from claudeloop.adapters.git_checkpoint import repository_top

    reads = sandbox.home_reads(home, spec.sandbox.allow_read)
    if spec.worktree is not None and (top := repository_top(spec.cwd)) is not None:
        reads.append(str(top / ".git"))
    return reads


def turn_boundary(
    spec: RunSpec, chosen: Posture, environments: Sequence[Mapping[str, str]]
) -> TurnBoundary:
    """Claude Code's settings for `chosen`, the secrets of `environments` kept from its
    commands."""
    home = Path.home()
    reads = _reads(spec, home)
    settings = sandbox.claude_settings(
        chosen,
        run_dir=spec.cwd / ".claudeloop",
        reads=reads,
        secret_names=sandbox.secret_names(*environments),
    )
    lines: Lines | None = None
    match chosen:
        case Confined() | CommandsRefused():
            lines = Lines(hidden=(str(home),), visible=(str(spec.work_dir), *reads))
        case Unconfined():
            pass
    return TurnBoundary(json.dumps(settings) if settings is not None else None, lines)


def check_wrapper(spec: RunSpec, chosen: Posture) -> sandbox.CheckBoundary | None:
    """How the checks run inside the boundary (None: unconfined, --sandbox off)."""
    bwrap = shutil.which("bwrap")
    match chosen:
        case Confined() | CommandsRefused() if bwrap is not None:
            home = Path.home()
            return sandbox.CheckBoundary(
                work_dir=spec.work_dir,
                run_dir=spec.cwd / ".claudeloop",
                home=home,
                reads=tuple(_reads(spec, home)),
                bwrap=bwrap,
            )
        case _:
            return None


def run_checks(
    spec: RunSpec, checks_dir: Path, redact: Callable[[str], str]
) -> VerificationCommands:
    """The checks of a Done, run in the run's work directory inside its boundary, each
    noted in `checks_dir` while it runs (so the run's next driver ends one a crash left)."""
    from claudeloop.adapters.verification_commands import VerificationCommands

    return VerificationCommands(
        spec.work_dir,
        timeout_seconds=spec.verify_timeout_seconds,
        redact=redact,
        note=checks_dir / "running.json",
        boundary=check_wrapper(spec, start_posture(spec)),
    )
