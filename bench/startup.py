"""Start-up of the everyday commands, and whether status and logs stay flat as a run's
event log grows from 100 events to 100,000."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.measure import median_wall, peak_rss_of_child
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.capacity import WindowExhausted
from claudeloop.domain.loop import Phase, RunState

RUNS = 9


@dataclass(frozen=True)
class Startup:
    help_seconds: float
    version_seconds: float
    status_seconds: float
    status_small_seconds: float
    status_large_seconds: float
    logs_small_mb: float
    logs_large_mb: float


def make_run(cwd: Path, events: int) -> None:
    now = datetime.now(UTC)
    directory = RunDirectory.create(cwd, "20261130-090000-bench0")
    directory.save(
        RunRecord(
            run_id=directory.run_id,
            spec=RunSpec(cwd=cwd, task="bench"),
            state=RunState(
                phase=Phase.WAITING,
                ledger=BudgetLedger(turns=events // 10),
                capacity=WindowExhausted("five_hour", now + timedelta(hours=1)),
                waiting_since=now,
                next_probe_at=now + timedelta(minutes=5),
            ),
            started_at=now,
            session_id="bench-session",
        )
    )
    line = {
        "ts": now.isoformat(),
        "run_id": directory.run_id,
        "type": "turn.finished",
        "turn": 1,
        "capacity": "available",
        "verdict": "continue",
        "cost_usd": 0.01,
        "summary": "Wrote a part of the parser and its tests. " * 4,
    }
    with directory.events_path.open("w") as handle:
        for n in range(events):
            line["turn"] = n
            handle.write(json.dumps(line) + "\n")


def run() -> Startup:
    command = [sys.executable, "-m", "claudeloop"]
    work = Path(tempfile.mkdtemp(prefix="claudeloop-bench-"))
    try:
        small, large = work / "small", work / "large"
        small.mkdir()
        large.mkdir()
        make_run(small, 100)
        make_run(large, 100_000)
        entry = [str(Path(sys.executable).parent / "claudeloop")]
        return Startup(
            help_seconds=median_wall([*entry, "--help"], runs=RUNS),
            version_seconds=median_wall([*entry, "--version"], runs=RUNS),
            status_seconds=median_wall([*entry, "status", "--cwd", str(small)], runs=RUNS),
            status_small_seconds=median_wall([*command, "status", "--cwd", str(small)], runs=RUNS),
            status_large_seconds=median_wall([*command, "status", "--cwd", str(large)], runs=RUNS),
            logs_small_mb=peak_rss_of_child([*command, "logs", "--cwd", str(small)]),
            logs_large_mb=peak_rss_of_child([*command, "logs", "--cwd", str(large)]),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    started = time.perf_counter()
    print(run(), f"in {time.perf_counter() - started:.1f}s")
