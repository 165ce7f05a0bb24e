"""Per-turn overhead: 20 turns through `claudeloop run` against a plain shell loop of the
bundled `claude -p --resume ID` over the same rehearsal scenario, in one run.

Both talk to the rehearsal API on 127.0.0.1 with the same environment, so the model's
answers cost the same; what differs is what each loop adds around them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.measure import run_measured
from claudeloop.rehearsal import RehearsalServer, parse_scenario

TURNS = 20
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "complete": {"type": "boolean"},
        "remaining_work": {"type": "array", "items": {"type": "string"}},
        "blocked_on": {"type": ["string", "null"]},
        "summary": {"type": "string"},
    },
    "required": ["complete", "remaining_work", "blocked_on", "summary"],
}


def scenario_data(turns: int = TURNS) -> dict[str, object]:
    steps = []
    for n in range(1, turns + 1):
        steps.append(
            {
                "steps": [
                    {"kind": "text", "text": f"Working on part {n}."},
                    {
                        "kind": "verdict",
                        "complete": n == turns,
                        "remaining_work": [f"part {k}" for k in range(n + 1, turns + 1)],
                        "summary": f"Part {n} done.",
                    },
                ]
            }
        )
    return {"description": f"{turns} short turns", "turns": steps}


def bundled_cli() -> Path:
    from claude_agent_sdk import __file__ as sdk_file

    return Path(sdk_file).parent / "_bundled" / "claude"


def environment(base_url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(
        {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "bench-key-not-real",
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
    )
    return env


SHELL_LOOP = """
set -e
out=$("$CLI" -p "Work through the parts." --output-format json --json-schema "$SCHEMA" \
      --permission-mode acceptEdits)
id=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["session_id"])')
i=1
while [ $i -lt "$TURNS" ]; do
  "$CLI" -p "Continue with the remaining parts." --resume "$id" --output-format json \
      --json-schema "$SCHEMA" --permission-mode acceptEdits > /dev/null
  i=$((i + 1))
done
"""


@dataclass(frozen=True)
class Overhead:
    turns: int
    shell_seconds: float
    claudeloop_seconds: float
    claudeloop_peak_rss_mb: float
    claudeloop_cpu_per_turn: float
    claudeloop_turns_answered: int

    @property
    def ratio(self) -> float:
        return self.claudeloop_seconds / self.shell_seconds


def run(turns: int = TURNS) -> Overhead:
    scenario = parse_scenario(json.dumps(scenario_data(turns)), source="bench/overhead", fmt="json")
    work = Path(tempfile.mkdtemp(prefix="claudeloop-bench-"))
    try:
        with RehearsalServer(scenario) as server:
            shell_project = work / "shell"
            shell_project.mkdir()
            env = environment(server.base_url, work / "home-shell")
            env.update(
                {
                    "CLI": str(bundled_cli()),
                    "SCHEMA": json.dumps(VERDICT_SCHEMA),
                    "TURNS": str(turns),
                }
            )
            started = time.perf_counter()
            subprocess.run(
                ["sh", "-c", SHELL_LOOP],
                env=env,
                cwd=shell_project,
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            shell_seconds = time.perf_counter() - started
        with RehearsalServer(scenario) as server:
            project = work / "claudeloop"
            project.mkdir()
            env = environment(server.base_url, work / "home-loop")
            figures = run_measured(
                [
                    sys.executable,
                    "-m",
                    "claudeloop",
                    "run",
                    "--prompt",
                    "Work through the parts.",
                    "--cwd",
                    str(project),
                    "--quiet",
                    "--max-turns",
                    str(turns + 5),
                ],
                env=env,
            )
            answered = server.state()["verdicts"]
        return Overhead(
            turns=turns,
            shell_seconds=shell_seconds,
            claudeloop_seconds=figures.wall_seconds,
            claudeloop_peak_rss_mb=figures.own_peak_rss_mb,
            claudeloop_cpu_per_turn=figures.own_cpu_seconds / max(answered, 1),
            claudeloop_turns_answered=answered,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    result = run()
    print(result, f"ratio {result.ratio:.2f}")
