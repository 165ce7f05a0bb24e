"""What each everyday command costs in CPU, beside `python -c pass` and `claudeloop
--help` measured in the same run: every read-only command on a project with runs, and
the refusals of bad input.

CPU (user + system, the command's process and its children), not wall time: it is what
a command costs whatever else the machine does, and what a busy machine multiplies into
seconds. Each figure is the median of RUNS rounds, each round every command once.
`python -m bench.commands` prints the table alone; `make bench` writes it into RESULTS.md.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

RUNS = 7
FIXTURES = Path(__file__).parent.parent / "tests" / "fixtures"
DONE_RUN = "20261202-142547-0c766e"
# What the issue that made these commands light asked of each: at most this, as --help.
BUDGET_SECONDS = 0.35


@dataclass(frozen=True)
class Cost:
    command: str
    cpu_seconds: float


def cpu_of(command: list[str], *, cwd: Path, env: dict[str, str]) -> float:
    """The CPU `command` used, itself and the processes it waited for."""
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0  # reaped above; Popen must not wait for it again
    return usage.ru_utime + usage.ru_stime


def median_cpus(commands: list[list[str]], *, cwd: Path, env: dict[str, str]) -> list[float]:
    """Each command's median CPU over RUNS rounds, every command once a round: this
    machine's CPU speed drifts by a third over a minute (a VM's neighbours), and rounds
    taken command by command gave one command the slow minute and the next the fast."""
    rounds = [[cpu_of(command, cwd=cwd, env=env) for command in commands] for _ in range(RUNS)]
    return [statistics.median(taken) for taken in zip(*rounds, strict=True)]


def project(root: Path) -> Path:
    """A project with a finished run and a run left waiting, as the tests use them."""
    where = root / "project"
    shutil.copytree(FIXTURES / "run_done_with_checks" / "project", where)
    waiting = FIXTURES / "run_waiting" / "project" / ".claudeloop" / "runs"
    for run in waiting.iterdir():
        shutil.copytree(run, where / ".claudeloop" / "runs" / run.name)
    (where / "PLAN.md").write_text("- [ ] Write step3.txt\n")
    (root / "template").mkdir()
    return where


COMMANDS: tuple[tuple[str, ...], ...] = (
    ("--help",),
    ("status",),
    ("status", "--json"),
    ("runs",),
    ("runs", "--all"),
    ("report",),
    ("logs", DONE_RUN),
    ("sessions",),
    ("export", DONE_RUN),
    ("config", "show"),
    ("doctor", "--help"),
    ("diff", DONE_RUN),
)
REFUSALS: tuple[tuple[str, ...], ...] = (
    ("run", "NOPE.md"),
    ("run", "--prompt", "x", "--max-dollars", "x"),
    ("run", "--prompt", "x", "--profile", "nosuch"),
    ("run", "{template}/PLAN.md", "--cwd", "{template}"),
    ("resume", "--run-id", "20990101-000000-nope00"),
)


def run() -> list[Cost]:
    work = Path(tempfile.mkdtemp(prefix="claudeloop-bench-commands-"))
    try:
        where = project(work)
        template = work / "template"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CLAUDELOOP_")},
            "CLAUDELOOP_CONFIG_DIR": str(work / "config"),
            "CLAUDELOOP_STATE_DIR": str(work / "state"),
            "CLAUDE_CONFIG_DIR": str(work / "claude"),
            "ANTHROPIC_API_KEY": "bench-key-not-real",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        }
        entry = str(Path(sys.executable).parent / "claudeloop")
        subprocess.run(
            [entry, "init", "--cwd", str(template)], env=env, check=True, capture_output=True
        )
        named = {"python -c pass": [sys.executable, "-c", "pass"]}
        for line in (*COMMANDS, *REFUSALS):
            words = [word.format(template=template) for word in line]
            named["claudeloop " + " ".join(line).replace("{template}", "T")] = [entry, *words]
        cpus = median_cpus(list(named.values()), cwd=where, env=env)
        return [Cost(name, cpu) for name, cpu in zip(named, cpus, strict=True)]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def table(costs: list[Cost]) -> list[str]:
    baseline = costs[0].cpu_seconds
    help_cost = next(c.cpu_seconds for c in costs if c.command == "claudeloop --help")
    lines = [
        f"| command | CPU (median of {RUNS}) | python -c pass = 1 | --help = 1 "
        f"| at most {BUDGET_SECONDS} s |",
        "|---|---|---|---|---|",
    ]
    for cost in costs:
        within = "yes" if cost.cpu_seconds <= BUDGET_SECONDS else "NO"
        lines.append(
            f"| `{cost.command}` | {cost.cpu_seconds:.2f} s | "
            f"{cost.cpu_seconds / max(baseline, 0.001):.1f} | "
            f"{cost.cpu_seconds / max(help_cost, 0.001):.2f} | {within} |"
        )
    return lines


if __name__ == "__main__":
    print("\n".join(table(run())))
