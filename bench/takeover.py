"""Takeover time after kill -9: from killing the worker that holds a waiting run to the
run resumed by a worker of another machine (its lease run out, the record and the
transcript fetched from the engine), against the baseline of the same run: the dead
worker started again at once with its own name (DBOS recovers its own pending runs).

Each worker is its own process with its own HOME, state and work directory, as in the
end-to-end tests; the engine is a SQLite file; the run waits for a closed window of the
rehearsal API on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.overhead import environment
from claudeloop.adapters.fleet.engine import parse_engine
from claudeloop.adapters.fleet.leases import Leases
from claudeloop.rehearsal import RehearsalServer, parse_scenario

LEASE_SECONDS = 5
REPEATS = 3
SCENARIO = {
    "description": "One turn, then a window that closes until lifted.",
    "turns": [
        {"steps": [{"kind": "verdict", "complete": False, "remaining_work": ["more"]}]},
        {"steps": [{"kind": "verdict", "complete": True, "remaining_work": []}]},
    ],
    "gates": [{"kind": "window_silent", "at_turn": 2, "until_lift": True}],
}


@dataclass(frozen=True)
class Takeover:
    lease_seconds: float
    takeover_seconds: float  # median, kill -9 to resumed on another machine
    restart_seconds: float  # median, kill -9 to resumed by the same worker started again

    @property
    def ratio(self) -> float:
        return self.takeover_seconds / self.restart_seconds


class Machine:
    def __init__(self, root: Path, base_url: str, engine: str) -> None:
        self.checkout = root / "work" / "app"
        self.checkout.mkdir(parents=True)
        (self.checkout / "PLAN.md").write_text("# Plan\n\n- [ ] Do it\n")
        self.env = environment(base_url, root / "home")
        self.env["CLAUDELOOP_STATE_DIR"] = str(root / "state")
        self.env["IS_SANDBOX"] = "1"
        self.engine = engine

    def worker(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                sys.executable, "-m", "claudeloop", "worker", "--engine", self.engine,
                "--lease", f"{LEASE_SECONDS}s", "--work-root", str(self.checkout.parent),
            ],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip

    def add(self) -> str:
        added = subprocess.run(
            [
                sys.executable, "-m", "claudeloop", "queue", "add", "PLAN.md",
                "--checkout", "app", "--engine", self.engine,
                "--permission-mode", "bypassPermissions",
                "--window-probe-interval", "1h", "--max-wait", "2h",
            ],
            env=self.env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return added.stdout.strip()

    def resumed(self, run_id: str) -> bool:
        events = self.checkout / ".claudeloop" / "runs" / run_id / "events.jsonl"
        try:
            return '"run.resumed"' in events.read_text()
        except OSError:
            return False


def _until(condition: object, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError("the benchmark's run did not get there")
        time.sleep(0.05)


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def once(base_url: str, root: Path, *, another_machine: bool) -> float:
    """Seconds from kill -9 of the holding worker to the run resumed."""
    engine = f"sqlite:///{root / 'fleet.sqlite'}"
    first = Machine(root / "a", base_url, engine)
    second = Machine(root / "b", base_url, engine) if another_machine else first
    started = [first.worker()]
    try:
        run_id = first.add()
        leases = Leases(parse_engine(engine, "bench"))

        def waiting() -> bool:
            stored = leases.stored(run_id)
            return stored is not None and stored.phase == "waiting"

        _until(waiting)
        leases.close()
        if another_machine:
            started.append(second.worker())
            time.sleep(2)  # the other worker up and heart-beating, as in a fleet
        killed = time.monotonic()
        _kill(started[0])
        if not another_machine:
            started.append(second.worker())
        _until(lambda: second.resumed(run_id))
        return time.monotonic() - killed
    finally:
        for process in started:
            _kill(process)


def run() -> Takeover:
    takeovers, restarts = [], []
    scenario = parse_scenario(json.dumps(SCENARIO), source="bench/takeover", fmt="json")
    with RehearsalServer(scenario) as server:
        for repeat in range(REPEATS):
            with tempfile.TemporaryDirectory(prefix="claudeloop-takeover-") as directory:
                root = Path(directory)
                takeovers.append(once(server.base_url, root / "t", another_machine=True))
                restarts.append(once(server.base_url, root / "r", another_machine=False))
            print(f"  takeover {repeat + 1}: {takeovers[-1]:.1f} s, restart {restarts[-1]:.1f} s")
    return Takeover(LEASE_SECONDS, statistics.median(takeovers), statistics.median(restarts))


def table(figures: Takeover) -> list[str]:
    return [
        "## Takeover after kill -9",
        "",
        f"A run waiting for a closed window; its worker killed with kill -9 (median of "
        f"{REPEATS}, a SQLite engine, lease {figures.lease_seconds:g} s). The lease runs "
        "from the dead worker's last heartbeat, up to a sixth of a lease before the kill.",
        "",
        "| the run resumed by | kill -9 to resumed | ratio |",
        "|---|---|---|",
        f"| the same worker started again at once (baseline) | "
        f"{figures.restart_seconds:.1f} s | 1.00 |",
        f"| a worker of another machine, after the lease | "
        f"{figures.takeover_seconds:.1f} s | {figures.ratio:.2f} |",
    ]


if __name__ == "__main__":
    figures = run()
    print(
        f"lease {figures.lease_seconds:g} s: takeover by another machine "
        f"{figures.takeover_seconds:.1f} s, restart of the same worker "
        f"{figures.restart_seconds:.1f} s (ratio {figures.ratio:.2f})"
    )
