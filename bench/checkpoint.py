"""A commit per turn on a big repository: a checkpoint of a worktree of a repository of
10,000 files (what the tree watch saw change staged by `git add`, the secret scan of it,
the commit's trees and the commit written, the branch moved), against a turn of the
bundled Claude Code CLI on the rehearsal API, measured in the same run and said as a
ratio (target: <= 5 %); and, as the baseline, the same commit looking at every file, as
one does where the tree cannot be watched."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.overhead import SHELL_LOOP, VERDICT_SCHEMA, bundled_cli, environment, scenario_data
from claudeloop.adapters.git_checkpoint import GitCheckpoints, commit_all, make_worktree
from claudeloop.application.ports import Checkpoint
from claudeloop.domain.checkpoints import commit_message, trailers
from claudeloop.rehearsal import RehearsalServer, parse_scenario

FILES = 10_000
CHECKPOINTS = 15
TURNS = 8
SECRETS = ("bench-secret-value-0123456789",)


@dataclass(frozen=True)
class Checkpointing:
    files: int
    first_seconds: float  # the run's first checkpoint: every file looked at, the watch begun
    checkpoint_seconds: float  # median of the next, three files changed and one added
    unchanged_seconds: float  # median, a turn that changed nothing
    every_file_seconds: float  # median, a commit looking at every file (no watch)
    turn_seconds: float  # a rehearsal turn of the bundled CLI, mean of TURNS

    @property
    def ratio(self) -> float:
        return self.checkpoint_seconds / self.turn_seconds


def _repository(root: Path) -> Path:
    project = root / "repo"
    for n in range(FILES):
        path = project / f"pkg{n // 100:03d}" / f"module{n % 100:03d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {n}\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    for step in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run(["git", *step], cwd=project, env=env, check=True)
    return project


def _holds_secret(text: str) -> bool:
    return any(secret in text for secret in SECRETS)


def _timed_turns(work_dir: Path, turns: range, commit: Callable[[str], object]) -> list[float]:
    """Each turn's three files changed and one added, and the seconds its commit took."""
    seconds = []
    for turn in turns:
        for n in range(3):
            target = work_dir / f"pkg{(turn * 7 + n) % 100:03d}" / "module000.py"
            target.write_text(f"VALUE = {turn}\n")
        (work_dir / f"new_{turn}.py").write_text("NEW = True\n")
        started = time.perf_counter()
        commit(commit_message(f"turn {turn}", turn, trailers("bench", turn, 0.01)))
        seconds.append(time.perf_counter() - started)
    return seconds


def _checkpoints(root: Path) -> tuple[float, float, float, float]:
    """The first checkpoint, the median of the next, of a turn that changed nothing,
    and of a commit looking at every file (as without a watch), in seconds."""
    project = _repository(root)
    made = make_worktree(project, "bench", root=root / "state", carry=False)
    # Its 10,000 files were all just written: until the clock is a second on, git reads
    # every one of them again at each index write ("racily clean" entries, which git
    # cannot tell unchanged by their times), as it would not for a run's worktree,
    # whose first turn takes longer than that.
    time.sleep(1.1)
    branch = GitCheckpoints(
        made.work_dir, "bench", holds_secret=_holds_secret, redact=str, own=True
    )

    def checkpoint(message: str) -> Checkpoint:
        branch.last_turn()  # as the runner asks before each commit
        return branch.commit(message)

    changed = _timed_turns(made.work_dir, range(1, CHECKPOINTS + 1), checkpoint)
    unchanged = []
    for _ in range(CHECKPOINTS):
        started = time.perf_counter()
        checkpoint(commit_message("nothing", CHECKPOINTS, trailers("bench", CHECKPOINTS, 0.0)))
        unchanged.append(time.perf_counter() - started)
    branch.close()
    everything = _timed_turns(
        made.work_dir,
        range(CHECKPOINTS + 1, 2 * CHECKPOINTS + 1),
        lambda message: commit_all(made.work_dir, message, holds_secret=_holds_secret),
    )
    return (
        changed[0],
        statistics.median(changed[1:]),
        statistics.median(unchanged),
        statistics.median(everything),
    )


def _turn_seconds(root: Path) -> float:
    scenario = parse_scenario(
        json.dumps(scenario_data(TURNS)), source="bench/checkpoint", fmt="json"
    )
    project = root / "turns"
    project.mkdir()
    with RehearsalServer(scenario) as server:
        env = environment(server.base_url, root / "home")
        env.update(
            {"CLI": str(bundled_cli()), "SCHEMA": json.dumps(VERDICT_SCHEMA), "TURNS": str(TURNS)}
        )
        started = time.perf_counter()
        subprocess.run(
            ["sh", "-c", SHELL_LOOP],
            env=env,
            cwd=project,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return (time.perf_counter() - started) / TURNS


def run() -> Checkpointing:
    work = Path(tempfile.mkdtemp(prefix="claudeloop-bench-"))
    try:
        first, changed, unchanged, every_file = _checkpoints(work)
        return Checkpointing(
            files=FILES,
            first_seconds=first,
            checkpoint_seconds=changed,
            unchanged_seconds=unchanged,
            every_file_seconds=every_file,
            turn_seconds=_turn_seconds(work),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def lines(result: Checkpointing) -> list[str]:
    return [
        "## A commit per turn",
        "",
        f"A checkpoint of a `--worktree` run on a repository of {result.files:,} files "
        "(what the tree watch saw change staged by git add, the secret scan of it, the "
        "commit's trees and the commit written, the branch moved), against one turn of "
        "the bundled Claude Code CLI on the rehearsal API, in the same run.",
        "",
        "| step | median | share of a turn |",
        "|---|---|---|",
        f"| a rehearsal turn (`claude -p --resume`, mean of {TURNS}) | "
        f"{result.turn_seconds:.2f} s | 100 % |",
        f"| the run's first checkpoint (every file looked at, the watch begun) | "
        f"{result.first_seconds * 1000:.0f} ms | "
        f"{result.first_seconds / result.turn_seconds * 100:.1f} % |",
        f"| checkpoint: 3 files changed, 1 added | {result.checkpoint_seconds * 1000:.0f} ms | "
        f"{result.ratio * 100:.1f} % |",
        f"| checkpoint: nothing changed (no commit) | {result.unchanged_seconds * 1000:.0f} ms | "
        f"{result.unchanged_seconds / result.turn_seconds * 100:.1f} % |",
        f"| baseline: the same commit looking at every file (no watch) | "
        f"{result.every_file_seconds * 1000:.0f} ms | "
        f"{result.every_file_seconds / result.turn_seconds * 100:.1f} % |",
        "",
        f"- {'met' if result.ratio <= 0.05 else 'MISSED'}: a checkpoint costs <= 5 % of a "
        "rehearsal turn",
    ]


if __name__ == "__main__":
    print("\n".join(lines(run())))
