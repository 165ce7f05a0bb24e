"""What confinement costs: a run whose turn runs 20 shell commands, the model's commands
in Claude Code's sandbox (the default) against the same run unconfined (`--sandbox off`
with `bypassPermissions`, so the commands run at all), through `claudeloop run`, the
bundled Claude Code CLI and the rehearsal API, in one command, alternating. Target:
sandboxed / unconfined <= 1.10."""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.overhead import environment
from claudeloop.rehearsal import RehearsalServer, parse_scenario

COMMANDS = 20
ROUNDS = 5
# The kinds of command a task's turn runs: an interpreter, a build tool, files listed
# and read, a small test.
_COMMAND_CYCLE = (
    "python3 -c 'print(sum(range(1000)))'",
    "make --version | head -1",
    "ls -la",
    "cat Makefile",
    "make test",
)


@dataclass(frozen=True)
class SandboxCost:
    sandboxed_seconds: float  # median run, the default posture
    unconfined_seconds: float  # median run, --sandbox off
    commands_ran: tuple[int, int]  # commands that printed their output, each posture

    @property
    def ratio(self) -> float:
        return self.sandboxed_seconds / self.unconfined_seconds


def _scenario() -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        {
            "kind": "tool",
            "name": "Bash",
            "input": {"command": f"echo RAN-{n}; {_COMMAND_CYCLE[n % len(_COMMAND_CYCLE)]}"},
        }
        for n in range(COMMANDS)
    ]
    steps.append({"kind": "verdict", "complete": True, "summary": "ran the commands"})
    return {"turns": [{"steps": steps}]}


def _one_run(root: Path, *, sandboxed: bool) -> tuple[float, int]:
    project = root / "project"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    (project / "Makefile").write_text("test:\n\tpython3 -c 'assert 1 + 1 == 2'\n")
    home = root / "home"
    shutil.rmtree(home, ignore_errors=True)
    scenario = parse_scenario(json.dumps(_scenario()), source="bench/sandbox", fmt="json")
    posture = [] if sandboxed else ["--sandbox", "off", "--permission-mode", "bypassPermissions"]
    with RehearsalServer(scenario) as server:
        env = environment(server.base_url, home)
        env["IS_SANDBOX"] = "1"  # bypassPermissions as root
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "claudeloop", "run", "--prompt", "Run the commands.",
             "--max-turns", "2", *posture, "--cwd", str(project), "--json"],
            env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        seconds = time.perf_counter() - started
    return seconds, len(_ran(home))


def _ran(home: Path) -> set[str]:
    """The commands whose output came back: the markers in the tool results."""
    ran: set[str] = set()
    for transcript in (home / ".claude" / "projects").glob("*/*.jsonl"):
        for line in transcript.read_text().splitlines():
            entry = json.loads(line)
            content = entry.get("message", {}).get("content")
            if entry.get("type") != "user" or not isinstance(content, list):
                continue
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    ran.update(re.findall(r"^RAN-\d+$", str(block.get("content")), re.M))
    return ran


def run() -> SandboxCost:
    root = Path(tempfile.mkdtemp(prefix="claudeloop-bench-sandbox-"))
    try:
        timings: dict[bool, list[float]] = {True: [], False: []}
        ran: dict[bool, int] = {}
        for _ in range(ROUNDS):
            for sandboxed in (True, False):
                seconds, ran[sandboxed] = _one_run(root / str(sandboxed), sandboxed=sandboxed)
                timings[sandboxed].append(seconds)
        return SandboxCost(
            sandboxed_seconds=statistics.median(timings[True]),
            unconfined_seconds=statistics.median(timings[False]),
            commands_ran=(ran[True], ran[False]),
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def lines(result: SandboxCost) -> list[str]:
    return [
        "## Confinement",
        "",
        f"A run whose turn runs {COMMANDS} shell commands (an interpreter, make, ls, cat, a "
        "small test), through `claudeloop run`, the bundled Claude Code CLI and the "
        f"rehearsal API; median of {ROUNDS} runs each, alternating, in the same command.",
        "",
        "| posture | median run | commands that ran |",
        "|---|---|---|",
        f"| unconfined (`--sandbox off`, bypassPermissions) | {result.unconfined_seconds:.2f} s "
        f"| {result.commands_ran[1]} of {COMMANDS} |",
        f"| sandboxed (the default) | {result.sandboxed_seconds:.2f} s "
        f"| {result.commands_ran[0]} of {COMMANDS} |",
        "",
        f"- {'met' if result.ratio <= 1.10 else 'MISSED'}: sandboxed / unconfined = "
        f"{result.ratio:.2f} (target <= 1.10)",
    ]


if __name__ == "__main__":
    print("\n".join(lines(run())))
