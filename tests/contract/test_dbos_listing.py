"""What DBOS's public client lists of the fleet's runs, in claudeloop's words: on a fleet
set up before claudeloop kept its own queue, its runs are copied from this list once
(`held` in adapters/fleet/dbos_app.py). Pinned on SQLite and PostgreSQL with a run in
every state a real DBOS executor leaves it in (queued, running, done, exit N, failed,
cancelled), with the DBOS installed (`make canary` runs it with the newest)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from claudeloop.adapters.fleet import dbos_app, queue
from claudeloop.adapters.fleet.engine import Engine
from claudeloop.adapters.fleet.leases import Leases
from claudeloop.adapters.fleet.queue import Order, add
from tests.adapters.fleet.test_engine_fleet import engine, fleet_database

__all__ = ["engine", "fleet_database"]  # the fixture, on both databases, and what it needs

# A worker's workflow of the same name, application and version, whose outcome the
# order's cwd says; the one that hangs is left running (PENDING under the executor)
# when the executor dies, as a worker killed mid-run leaves it.
EXECUTOR = """
import os, sys, time
from dbos import DBOS

DBOS(config={"name": "claudeloop", "system_database_url": sys.argv[1],
              "executor_id": "pin-worker", "application_version": "fleet-1",
              "log_level": "ERROR"})

@DBOS.workflow(name="claudeloop.run", max_recovery_attempts=None)
def run(order):
    if order["cwd"] == "/hangs":
        time.sleep(120)
    if order["cwd"] == "/fails":
        raise RuntimeError("the child could not start")
    return int(order["cwd"].removeprefix("/exit"))

DBOS.launch()
DBOS.register_queue("claudeloop-runs", worker_concurrency=8, on_conflict="always_update")
for _ in range(600):
    left = DBOS.list_workflows(status=["ENQUEUED", "PENDING"], load_input=False)
    if [w.workflow_id for w in left] == ["hangs"]:
        os._exit(0)
    time.sleep(0.1)
os._exit(1)
"""


def _order(cwd: str) -> Order:
    return Order(cwd, ["PLAN.md", "--max-turns", "3"], account="0123456789abcdef")


@pytest.mark.slow
def test_what_dbos_lists_is_what_a_fleet_of_before_copies_into_its_queue(
    engine: Engine, tmp_path: Path
) -> None:
    for run_id, cwd in [("done", "/exit0"), ("exit3", "/exit3"), ("fails", "/fails")]:
        add(engine, run_id, _order(cwd))
    add(engine, "hangs", _order("/hangs"))
    script = tmp_path / "executor.py"
    script.write_text(EXECUTOR)
    ran = subprocess.run(
        [sys.executable, str(script), engine.connect_url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    add(engine, "queued", _order("/exit0"))
    add(engine, "cancelled", _order("/exit0"))
    queue.cancel(engine, "cancelled")

    held = {row.run_id: row for row in dbos_app.held(engine)}
    assert {run_id: (row.status, row.exit_code) for run_id, row in held.items()} == {
        "done": ("finished", 0),
        "exit3": ("finished", 3),
        "fails": ("failed", None),
        "hangs": ("running", None),
        "queued": ("queued", None),
        "cancelled": ("cancelled", None),
    }
    assert held["hangs"].worker == "pin-worker"
    assert held["queued"].worker is None
    assert {row.account for row in held.values()} == {"0123456789abcdef"}
    assert Order.from_json(json.loads(held["exit3"].order)) == _order("/exit3")

    # A fleet of before: its runs only in DBOS, copied into claudeloop's queue once.
    leases = Leases(engine)
    try:
        with leases._begin() as c:
            c.execute("DROP TABLE claudeloop_queue")
    finally:
        leases.close()
    queue.init_schema(engine)
    assert {run.run_id: (run.state, run.worker) for run in queue.runs(engine)} == {
        "done": ("done", "pin-worker"),
        "exit3": ("exit 3", "pin-worker"),
        "fails": ("failed", "pin-worker"),
        "hangs": ("running", "pin-worker"),
        "queued": ("queued", None),
        "cancelled": ("cancelled", None),
    }
    assert [run.run_id for run in queue.runs(engine)][:4] == ["done", "exit3", "fails", "hangs"]
