"""The dashboard at scale: the list of 1,000 runs, an event on its way to the page, the
dashboard process's memory, and a run's page after 100 events against 100,000.

Runs are made on disk as a driver leaves them (state.json, events.jsonl, the index
entry) in a temporary state directory; the real `claudeloop dashboard` serves them in
a process of its own, and the figures are taken over HTTP on 127.0.0.1: the list's
main part (what the page's script fetches again on news) and the run's page, each a
median of several requests; an event appended to events.jsonl until its line arrives
on the run's event stream (server-sent events), a median of several; the process's
peak RSS from /proc. `python -m bench.dashboard` prints the table; like every
benchmark it never fails the tests.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.measure import _read_status_hwm
from claudeloop.application.run_page import EVENT_TAIL

RUNS = 1000
SMALL, MIDDLE, LARGE = 100, 1_000, 100_000
REQUESTS = 15
EVENTS_SENT = 10


@dataclass(frozen=True)
class DashboardFigures:
    runs: int
    list_seconds: float
    list_rss_mb: float
    event_seconds: float
    small_page_seconds: float
    middle_page_seconds: float
    large_page_seconds: float
    small_rss_mb: float
    large_rss_mb: float

    @property
    def page_ratio(self) -> float:
        """100,000 events against 1,000: both pages show the same last 400 (a run of
        100 shows its 100, so its page is smaller)."""
        return self.large_page_seconds / self.middle_page_seconds

    @property
    def rss_ratio(self) -> float:
        return self.large_rss_mb / self.small_rss_mb


def make_runs(state: Path, work: Path, count: int, events: int) -> list[str]:
    """`count` waiting runs in `work`, each with `events` events, registered in the
    index of `state`; their keys, newest first."""
    from claudeloop.adapters.run_directory import RunDirectory
    from claudeloop.adapters.run_index import RunIndexDirectory
    from claudeloop.application.ports import IndexedRun
    from claudeloop.application.records import RunRecord, RunSpec
    from claudeloop.domain.budget import BudgetLedger
    from claudeloop.domain.capacity import WindowExhausted
    from claudeloop.domain.loop import Phase, RunState
    from claudeloop.domain.plan import WorkPlan

    index = RunIndexDirectory(state / "runs")
    now = datetime.now(UTC)
    keys: list[str] = []
    for number in range(count):
        cwd = work / f"project-{number % 50}"
        started = now - timedelta(minutes=number)
        run_id = started.strftime("%Y%m%d-%H%M%S-") + f"{number:06x}"
        directory = RunDirectory.create(cwd, run_id)
        directory.save(
            RunRecord(
                run_id=run_id,
                spec=RunSpec(cwd=cwd, task="t"),
                state=RunState(
                    phase=Phase.WAITING,
                    ledger=BudgetLedger(turns=3, attempts=4, dollars=0.42),
                    capacity=WindowExhausted("five_hour", now + timedelta(hours=1)),
                    waiting_since=now,
                    next_probe_at=now + timedelta(minutes=5),
                ),
                started_at=started,
                plan=WorkPlan.parse("- [x] a\n- [ ] b\n- [ ] c\n"),
            )
        )
        write_events(directory.events_path, run_id, events)
        entry = IndexedRun(run_id, directory.path, cwd, None, "bench", started)
        index.register(entry)
        keys.append(entry.key)
    return keys


def write_events(path: Path, run_id: str, count: int) -> None:
    at = datetime.now(UTC) - timedelta(hours=1)
    kinds: list[tuple[str, dict[str, Any]]] = [
        ("turn.started", {"turn": 1, "session_id": "s"}),
        ("turn.finished", {"turn": 1, "verdict": "continue", "cost_usd": 0.001, "error": None}),
        ("wait.started", {"capacity": "5-hour window closed", "probe_at": at.isoformat()}),
        ("probe.finished", {"capacity": "5-hour window closed", "cost_usd": 0.0001}),
    ]
    with path.open("w") as handle:
        for number in range(count):
            kind, fields = kinds[number % len(kinds)]
            stamp = (at + timedelta(milliseconds=number)).isoformat()
            handle.write(json.dumps({**fields, "ts": stamp, "run_id": run_id, "type": kind}))
            handle.write("\n")


class Served:
    """`claudeloop dashboard` on the state directory, signed in with its token."""

    def __init__(self, state: Path) -> None:
        env = {**os.environ, "CLAUDELOOP_STATE_DIR": str(state)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "claudeloop", "dashboard", "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        url = self.process.stdout.readline().split(": ", 1)[1].strip()
        address, token = url.removeprefix("http://").split("/?token=")
        self.host, port = address.split(":")
        self.port = int(port)
        self.cookie = f"claudeloop_dashboard_{self.port}={token}"

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=60)

    def get(self, path: str) -> float:
        """Seconds to answer `path` in full."""
        connection = self.connection()
        started = time.perf_counter()
        connection.request("GET", path, headers={"Cookie": self.cookie})
        answer = connection.getresponse()
        body = answer.read()
        seconds = time.perf_counter() - started
        connection.close()
        if answer.status != 200:
            raise RuntimeError(f"{path}: {answer.status} {body[:200]!r}")
        return seconds

    def median(self, path: str) -> float:
        self.get(path)  # the first request warms the imports
        return statistics.median(self.get(path) for _ in range(REQUESTS))

    def peak_rss_mb(self) -> float:
        return _read_status_hwm(self.process.pid) or 0.0

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def event_latency(served: Served, key: str, events: Path) -> float:
    """Median seconds from an event appended to events.jsonl to its line on the stream."""
    connection = served.connection()
    offset = events.stat().st_size
    connection.request(
        "GET", f"/run/{key}/stream?offset={offset}", headers={"Cookie": served.cookie}
    )
    answer = connection.getresponse()
    answer.readline()  # retry:
    answer.readline()
    took: list[float] = []
    for number in range(EVENTS_SENT):
        marker = f"bench-{number}"
        line = {"ts": datetime.now(UTC).isoformat(), "run_id": "r", "type": "notify.failed"}
        started = time.perf_counter()
        with events.open("a") as handle:
            handle.write(json.dumps({**line, "reason": marker}) + "\n")
        while marker not in answer.readline().decode():
            pass
        took.append(time.perf_counter() - started)
        time.sleep(0.3)
    connection.close()
    return statistics.median(took)


def page_and_memory(events: int) -> tuple[float, float]:
    work = Path(tempfile.mkdtemp(prefix="claudeloop-bench-dashboard-"))
    try:
        (key,) = make_runs(work / "state", work, 1, events)
        served = Served(work / "state")
        try:
            seconds = served.median(f"/run/{key}")
            return seconds, served.peak_rss_mb()
        finally:
            served.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run() -> DashboardFigures:
    work = Path(tempfile.mkdtemp(prefix="claudeloop-bench-dashboard-"))
    try:
        keys = make_runs(work / "state", work, RUNS, 20)
        served = Served(work / "state")
        try:
            list_seconds = served.median("/?part=main")
            newest = next((work / "state" / "runs").glob(f"{keys[0]}.json"))
            directory = Path(json.loads(newest.read_text())["directory"])
            event_seconds = event_latency(served, keys[0], directory / "events.jsonl")
            list_rss = served.peak_rss_mb()
        finally:
            served.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    small_page, small_rss = page_and_memory(SMALL)
    middle_page, _ = page_and_memory(MIDDLE)
    large_page, large_rss = page_and_memory(LARGE)
    return DashboardFigures(
        runs=RUNS,
        list_seconds=list_seconds,
        list_rss_mb=list_rss,
        event_seconds=event_seconds,
        small_page_seconds=small_page,
        middle_page_seconds=middle_page,
        large_page_seconds=large_page,
        small_rss_mb=small_rss,
        large_rss_mb=large_rss,
    )


def section(figures: DashboardFigures) -> list[str]:
    return [
        "## The dashboard",
        "",
        f"`claudeloop dashboard` in a process of its own, over HTTP on 127.0.0.1; a median "
        f"of {REQUESTS} requests (or {EVENTS_SENT} events).",
        "",
        "| what | figure | target |",
        "|---|---|---|",
        f"| the list of {figures.runs:,} runs renders | {figures.list_seconds * 1000:.0f} ms "
        "| ≤ 300 ms |",
        f"| an event appended to events.jsonl reaches the page's stream | "
        f"{figures.event_seconds * 1000:.0f} ms | ≤ 1 s |",
        f"| the dashboard's peak RSS, serving the {figures.runs:,} runs | "
        f"{figures.list_rss_mb:.0f} MB | ≤ 100 MB |",
        f"| the dashboard's peak RSS, a run of {SMALL} events | {figures.small_rss_mb:.0f} MB "
        "| ≤ 100 MB |",
        f"| the dashboard's peak RSS, a run of {LARGE:,} events | "
        f"{figures.large_rss_mb:.0f} MB (ratio {figures.rss_ratio:.2f}) | flat |",
        f"| the run's page, {SMALL} events | {figures.small_page_seconds * 1000:.0f} ms | |",
        f"| the run's page, {MIDDLE:,} events | {figures.middle_page_seconds * 1000:.0f} ms | |",
        f"| the run's page, {LARGE:,} events | {figures.large_page_seconds * 1000:.0f} ms "
        f"(ratio to {MIDDLE:,}: {figures.page_ratio:.2f}) | flat |",
        "",
        f"A run's page shows its last {EVENT_TAIL} events, read from the file's end: a run "
        f"of {SMALL} shows all {SMALL}, so its page is the smaller one; from {EVENT_TAIL} "
        "on, the page is the same size whatever the file's. The list's figure is with its "
        "records decoded once (the dashboard decodes a record again only once it was saved "
        "since); it decodes all of them once as it starts, before it prints its URL, so "
        "the first page a browser asks for is as quick as the next.",
    ]


if __name__ == "__main__":
    print("\n".join(section(run())))
