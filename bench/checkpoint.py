"""A commit per turn on a big repository: a checkpoint (`git add`, the secret scan of
what changed, `git commit`, and the reconciling look at the branch's last trailer) of a
worktree of a repository of 10,000 files, against a turn of the bundled Claude Code CLI
on the rehearsal API, measured in the same run and said as a ratio (target: <= 5 %)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.overhead import SHELL_LOOP, VERDICT_SCHEMA, bundled_cli, environment, scenario_data
from claudeloop.adapters.git_checkpoint import GitCheckpoints, make_worktree
from claudeloop.domain.checkpoints import commit_message, trailers
from claudeloop.rehearsal import RehearsalServer, parse_scenario

FILES = 10_000
CHECKPOINTS = 9
TURNS = 5
SECRETS = ("bench-secret-value-0123456789",)


@dataclass(frozen=True)
class Checkpointing:
    files: int
    checkpoint_seconds: float  # median, three files changed and one added
    unchanged_seconds: float  # median, a turn that changed nothing
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


def _checkpoints(root: Path) -> tuple[float, float]:
    project = _repository(root)
    made = make_worktree(project, "bench", root=root / "state", carry=False)
    branch = GitCheckpoints(
        made.work_dir, "bench", holds_secret=lambda text: any(s in text for s in SECRETS), own=True
    )
    changed: list[float] = []
    unchanged: list[float] = []
    for turn in range(1, CHECKPOINTS + 1):
        for n in range(3):
            target = made.work_dir / f"pkg{(turn * 7 + n) % 100:03d}" / "module000.py"
            target.write_text(f"VALUE = {turn}\n")
        (made.work_dir / f"new_{turn}.py").write_text("NEW = True\n")
        started = time.perf_counter()
        branch.last_turn()
        branch.commit(commit_message(f"turn {turn}", turn, trailers("bench", turn, 0.01)))
        changed.append(time.perf_counter() - started)
        started = time.perf_counter()
        branch.last_turn()
        branch.commit(commit_message("nothing", turn, trailers("bench", turn, 0.0)))
        unchanged.append(time.perf_counter() - started)
    return statistics.median(changed), statistics.median(unchanged)


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
        changed, unchanged = _checkpoints(work)
        return Checkpointing(
            files=FILES,
            checkpoint_seconds=changed,
            unchanged_seconds=unchanged,
            turn_seconds=_turn_seconds(work),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def lines(result: Checkpointing) -> list[str]:
    return [
        "## A commit per turn",
        "",
        f"A checkpoint of a `--worktree` run on a repository of {result.files:,} files "
        "(git add, the secret scan of what changed, git commit, the look at the branch's "
        "last trailer), against one turn of the bundled Claude Code CLI on the rehearsal "
        "API, in the same run.",
        "",
        "| step | median | share of a turn |",
        "|---|---|---|",
        f"| a rehearsal turn (`claude -p --resume`, mean of {TURNS}) | "
        f"{result.turn_seconds:.2f} s | 100 % |",
        f"| checkpoint: 3 files changed, 1 added | {result.checkpoint_seconds * 1000:.0f} ms | "
        f"{result.ratio * 100:.1f} % |",
        f"| checkpoint: nothing changed (no commit) | {result.unchanged_seconds * 1000:.0f} ms | "
        f"{result.unchanged_seconds / result.turn_seconds * 100:.1f} % |",
        "",
        f"- {'met' if result.ratio <= 0.05 else 'MISSED'}: a checkpoint costs <= 5 % of a "
        "rehearsal turn",
    ]


if __name__ == "__main__":
    print("\n".join(lines(run())))
