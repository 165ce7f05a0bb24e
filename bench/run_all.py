"""`make bench`: every benchmark in one run, written to bench/results/.

Benchmarks print figures and ratios against baselines measured in the same run; they
never fail the test suite. RESULTS.md is the table the README shows.
"""

from __future__ import annotations

import platform
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from bench import (
    checkpoint,
    commands,
    dashboard,
    fleet,
    fleet_cost,
    overhead,
    reset,
    sandbox_cost,
    startup,
    takeover,
    verify_memory,
    waiting,
    watchdog,
)

RESULTS = Path(__file__).parent / "results"
README = Path(__file__).parent.parent / "README.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def update_readme(lines: list[str]) -> None:
    """Replace the README's benchmark section with this run's headline tables."""
    text = README.read_text()
    if START not in text or END not in text:
        return
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(head + START + "\n" + "\n".join(lines) + "\n" + END + tail)


def waiting_table(rows: list[waiting.Figures]) -> list[str]:
    lines = [
        "| strategy | episodes | median lateness | p95 lateness | requests / waiting hour "
        "| turns into a closed limit |",
        "|---|---|---|---|---|---|",
    ]
    for f in rows:
        if f.kind == "all":
            lines.append(
                f"| {f.strategy} | {f.episodes} | {waiting.human(f.median_lateness)} | "
                f"{waiting.human(f.p95_lateness)} | {f.requests_per_waiting_hour:.2f} | "
                f"{f.turns_into_closed} |"
            )
    return lines


def targets(rows: list[waiting.Figures]) -> list[str]:
    """The targets of ADR 0005, checked on claudeloop's defaults."""
    by = {(f.strategy, f.kind): f for f in rows}
    mixed = by["claudeloop (defaults)", "all"]
    announced = by["claudeloop (defaults)", "announced reset"]
    silent = by["claudeloop (defaults)", waiting.SILENT_AFTER_RESET]
    checks = [
        ("requests per waiting hour <= 12", mixed.requests_per_waiting_hour <= 12),
        ("median lateness after an announced reset <= 10 s", announced.median_lateness <= 10),
        (
            "median lateness of a silent refusal after an announced reset <= 10 s "
            f"({waiting.human(silent.median_lateness)}; that kind alone makes "
            f"{silent.requests_per_waiting_hour:.2f} requests per waiting hour)",
            silent.median_lateness <= 10,
        ),
        ("median lateness over all kinds <= 60 s", mixed.median_lateness <= 60),
        ("p95 lateness over all kinds <= 5 min", mixed.p95_lateness <= 300),
    ]
    return ["Targets on the mixed corpus (claudeloop defaults):", ""] + [
        f"- {'met' if ok else 'MISSED'}: {name}" for name, ok in checks
    ]


def waiting_section(rows: list[waiting.Figures]) -> list[str]:
    """RESULTS.md's section on waiting, from its heading to the figure."""
    return [
        "## Waiting strategies",
        "",
        f"{len(waiting.corpus())} seeded limit episodes replayed in simulated time; "
        "claudeloop through its real domain policy. Lateness runs from the lift (or from "
        "waking, when the machine slept through it) to the next productive turn. "
        f"`{waiting.SILENT_AFTER_RESET}`: a refusal without a reset (a thin 429) of the "
        "5-hour window, whose reset the answers before it announced; the window opens at "
        "that reset. `slow_lane`: the 5-hour window closes with a slow lane offered; no "
        "unattended loop can take it (only an interactive Claude Code can: "
        "docs/architecture/claude-code-signals.md), so each waits as for any announced "
        "reset. `grace`: the window is past its limit and the service goes on answering in "
        "a grace period; claudeloop reads the CLI's signals through its real classifier and "
        "goes on (before the grace rule it read that answer as the window closed and waited "
        "for its reset), and the peers, which act only on a refusal, go on too.",
        "",
        *waiting_table(rows),
        "",
        *targets(rows),
        "",
        "Median / p95 lateness per episode kind:",
        "",
        *kinds_table(rows),
        "",
        "![median lateness per episode kind](waiting.png)",
    ]


def waiting_only() -> None:
    """`python -m bench.run_all waiting`: the simulated waiting figures alone (seconds,
    and no load on the machine changes them), written over the waiting section of
    RESULTS.md and the README's table; the measured sections stay as last measured."""
    rows = list(waiting.run())
    plot(rows, RESULTS / "waiting.png")
    path = RESULTS / "RESULTS.md"
    text = path.read_text()
    start = text.index("## Waiting strategies")
    end = text.index("\n## ", start)
    section = waiting_section(rows)
    section[2] += (
        f" (This section regenerated alone on {datetime.now(UTC):%Y-%m-%d} by "
        "`python -m bench.run_all waiting`.)"
    )
    path.write_text(text[:start] + "\n".join(section) + "\n" + text[end:])
    readme = README.read_text()
    table = "\n".join(waiting_table(rows))
    readme = re.sub(
        r"\| strategy \| episodes \|.*?\n(?=\n)", table + "\n", readme, count=1, flags=re.S
    )
    README.write_text(readme)
    print("\n".join(section))


def kinds_table(rows: list[waiting.Figures]) -> list[str]:
    kinds = ["announced reset", *waiting.KINDS]
    lines = [
        "| strategy | " + " | ".join(kinds) + " |",
        "|---|" + "---|" * len(kinds),
    ]
    by = {(f.strategy, f.kind): f for f in rows}
    for strategy in waiting.strategies():
        cells = [
            f"{waiting.human(by[strategy, k].median_lateness)} / "
            f"{waiting.human(by[strategy, k].p95_lateness)}"
            for k in kinds
        ]
        lines.append(f"| {strategy} | " + " | ".join(cells) + " |")
    return lines


def plot(rows: list[waiting.Figures], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = ["announced reset", *waiting.KINDS]
    strategies = list(waiting.strategies())
    by = {(f.strategy, f.kind): f for f in rows}
    figure, axis = plt.subplots(figsize=(11, 5))
    width = 0.8 / len(strategies)
    for index, strategy in enumerate(strategies):
        values = [max(by[strategy, k].median_lateness / 60, 0.01) for k in kinds]
        axis.bar([x + index * width for x in range(len(kinds))], values, width, label=strategy)
    axis.set_yscale("log")
    axis.set_ylabel("median lateness (minutes, log scale)")
    axis.set_xticks([x + width * (len(strategies) - 1) / 2 for x in range(len(kinds))], kinds)
    axis.set_title("Lift to next productive turn, per episode kind (simulated, same corpus)")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    started = time.perf_counter()
    RESULTS.mkdir(parents=True, exist_ok=True)
    print("waiting strategies (simulated)...", flush=True)
    rows = list(waiting.run())
    print("per-turn overhead (real CLI, rehearsal API)...", flush=True)
    cost = overhead.run()
    print("start-up and scale...", flush=True)
    start = startup.run()
    print("the CPU of each everyday command and refusal...", flush=True)
    command_costs = commands.run()
    print("a verification command printing 1 GiB...", flush=True)
    verify = verify_memory.run()
    print("takeover after kill -9 (a fleet on SQLite, real CLI, rehearsal API)...", flush=True)
    moved = takeover.run()
    print("a fleet: wake-ups, probes per account, a worker's memory...", flush=True)
    shared = fleet.run()
    print(
        "a fleet's cost on PostgreSQL (real workers and CLI, 1-4 runs, two workers)...", flush=True
    )
    cost_of_fleet = fleet_cost.run()
    print("the dashboard: 1,000 runs, an event's way to the page, its memory...", flush=True)
    board = dashboard.run()
    print("a commit per turn on a repository of 10,000 files...", flush=True)
    committed = checkpoint.run()
    print("a turn of 20 shell commands, sandboxed and not (real CLI, rehearsal API)...", flush=True)
    confined = sandbox_cost.run()
    print("a silent answer and a CLI that never exits (real CLI, about 5 min)...", flush=True)
    silent = watchdog.run()
    print("the instant a window reopens, idle and loaded (real CLI, about 5 min)...", flush=True)
    reopened = reset.run()
    plot(rows, RESULTS / "waiting.png")
    lines = [
        "# Benchmark results",
        "",
        f"`make bench` on {datetime.now(UTC):%Y-%m-%d}, Python {platform.python_version()}, "
        f"{platform.machine()}. Baselines are measured in the same run.",
        "",
        *waiting_section(rows),
        "",
        "## Per-turn overhead",
        "",
        f"{cost.turns} turns of one rehearsal scenario, the real bundled Claude Code CLI.",
        "",
        "| loop | wall time | ratio |",
        "|---|---|---|",
        f"| shell loop of `claude -p --resume ID` (baseline) | {cost.shell_seconds:.1f} s | 1.00 |",
        f"| `claudeloop run` | {cost.claudeloop_seconds:.1f} s | {cost.ratio:.2f} |",
        "",
        f"claudeloop's own peak RSS (without the CLI child): {cost.claudeloop_peak_rss_mb:.0f} MB; "
        f"its CPU per turn: {cost.claudeloop_cpu_per_turn * 1000:.0f} ms.",
        "",
        "## Start-up and scale",
        "",
        "| command | median wall time |",
        "|---|---|",
        f"| `claudeloop --help` | {start.help_seconds * 1000:.0f} ms |",
        f"| `claudeloop --version` | {start.version_seconds * 1000:.0f} ms |",
        f"| `claudeloop status` | {start.status_seconds * 1000:.0f} ms |",
        "",
        "| run directory | `status` time | `logs` peak memory |",
        "|---|---|---|",
        f"| 100 events | {start.status_small_seconds * 1000:.0f} ms | "
        f"{start.logs_small_mb:.0f} MB |",
        f"| 100,000 events | {start.status_large_seconds * 1000:.0f} ms | "
        f"{start.logs_large_mb:.0f} MB |",
        f"| ratio | {start.status_large_seconds / start.status_small_seconds:.2f} | "
        f"{start.logs_large_mb / start.logs_small_mb:.2f} |",
        "",
        "## The CPU of everyday commands",
        "",
        "Each read-only command on a project with two runs, and refusals of bad input: "
        "user + system CPU, beside `python -c pass` and `claudeloop --help` in the same run.",
        "",
        *commands.table(command_costs),
        "",
        "## Verification output",
        "",
        "claudeloop's own peak RSS while a verification command prints (the whole output "
        "goes to a file, redacted; only its last 4 KiB stay in memory).",
        "",
        "| verification command prints | claudeloop's peak RSS | wall time |",
        "|---|---|---|",
        f"| 1 KiB | {verify.small_peak_rss_mb:.0f} MB | |",
        f"| 1 GiB | {verify.big_peak_rss_mb:.0f} MB | {verify.big_seconds:.0f} s |",
        f"| ratio | {verify.ratio:.2f} | |",
        "",
        *takeover.table(moved),
        "",
        *fleet.section(shared),
        "",
        *fleet_cost.section(cost_of_fleet),
        "",
        *dashboard.section(board),
        "",
        *checkpoint.lines(committed),
        "",
        *sandbox_cost.lines(confined),
        "",
        *watchdog.lines(silent),
        "",
        *reset.lines(reopened),
        "",
        f"Whole benchmark: {time.perf_counter() - started:.0f} s.",
    ]
    (RESULTS / "RESULTS.md").write_text("\n".join(lines) + "\n")
    by = {(f.strategy, f.kind): f for f in rows}
    announced = by["claudeloop (defaults)", "announced reset"]
    update_readme(
        [
            f"Latest `make bench` ({datetime.now(UTC):%Y-%m-%d}, this 2-core machine):",
            "",
            *waiting_table(rows),
            "",
            f"After an announced reset claudeloop resumes a median "
            f"{waiting.human(announced.median_lateness)} late. Per turn, `claudeloop run` "
            f"takes {cost.ratio:.2f}x the wall time of a shell loop of `claude -p --resume` "
            f"({cost.turns} turns), with {cost.claudeloop_peak_rss_mb:.0f} MB peak RSS of "
            f"its own; `claudeloop --help` starts in {start.help_seconds * 1000:.0f} ms. "
            f"A turn of {sandbox_cost.COMMANDS} shell commands in the sandbox takes "
            f"{confined.ratio:.2f}x the same turn unconfined. An answer that goes silent "
            f"costs {silent.hang_seconds:.0f} s ({silent.baseline_seconds:.0f} s with "
            "Claude Code's own timeout); one whose first byte never comes "
            f"{silent.no_first_byte_seconds:.0f} s. After an announced reset the next "
            f"turn's request reaches the service {reopened.idle_after.turn_seconds:.1f} s "
            f"later ({reopened.loaded_after.turn_seconds:.1f} s beside two busy processes).",
        ]
    )
    print("\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1:] == ["waiting"]:
        waiting_only()
    else:
        main()
