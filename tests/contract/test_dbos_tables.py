"""The fleet's queue, read from DBOS's tables without DBOS (`status --engine`, `queue
ls` and the dashboard skip importing it), is what DBOS's own client lists: pinned to
DBOS's version (CHECKED in tests/contract/test_dbos_recovery.py), on SQLite and
PostgreSQL, with a run in every state a real DBOS executor leaves it in (queued,
running, done, exit N, failed, cancelled); and a worker's look at which of its runs were
cancelled (`cancelled_among`) finds what DBOS's client says was. Both are plain SQL on
tables DBOS does not publish (adapters/fleet/dbos_app.py): this fails when a DBOS
release changes them, and `make canary` runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from claudeloop.adapters.fleet import dbos_app, queue
from claudeloop.adapters.fleet.engine import Engine
from claudeloop.adapters.fleet.leases import Leases
from claudeloop.adapters.fleet.queue import Order, add
from claudeloop.application.ports import QueuedRun
from tests.adapters.fleet.test_engine_fleet import engine

__all__ = ["engine"]  # the fixture, on both databases

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


def _as_listed(status: Any) -> QueuedRun:
    """A run as DBOS's own client lists it: the oracle of the read without DBOS."""
    order = Order.from_json(status.input["args"][0])
    return QueuedRun(
        run_id=str(status.workflow_id),
        state=queue.state_of(str(status.status), status.output),
        cwd=order.cwd,
        account=order.account,
        worker=status.executor_id if status.status != "ENQUEUED" else None,
    )


def _order(cwd: str) -> Order:
    return Order(cwd, ["PLAN.md", "--max-turns", "3"], account="0123456789abcdef")


@pytest.mark.slow
def test_the_queue_read_without_dbos_is_what_dbos_lists(engine: Engine, tmp_path: Path) -> None:
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

    read = queue.runs(engine)

    with queue._client(engine) as client:
        listed = [_as_listed(s) for s in client.list_workflows(name=queue.WORKFLOW)]
    # Oldest first; two made in the same millisecond are in either order, in both.
    assert sorted(read, key=str) == sorted(listed, key=str)
    assert [run.run_id for run in read][:4] == ["done", "exit3", "fails", "hangs"]
    assert {run.run_id: run.state for run in read} == {
        "done": "done",
        "exit3": "exit 3",
        "fails": "failed",
        "hangs": "running",
        "queued": "queued",
        "cancelled": "cancelled",
    }
    assert {run.run_id: run.worker for run in read}["hangs"] == "pin-worker"
    assert {run.cwd for run in read} >= {"/exit0", "/exit3", "/fails", "/hangs"}
    assert queue.find(engine, "exit3") == read[1]
    assert queue.find(engine, "nothing") is None
    among = ["cancelled", "queued", "hangs", "done"]
    leases = Leases(engine)
    try:
        looked = leases.read(
            dbos_app.cancelled_among(engine.kind, ", ".join(f":r{n}" for n in range(4))),
            **{f"r{n}": run_id for n, run_id in enumerate(among)},
        )
    finally:
        leases.close()
    with queue._client(engine) as client:
        said = client.list_workflows(workflow_ids=among, status="CANCELLED", load_input=False)
    assert [str(row[1]) for row in looked] == [s.workflow_id for s in said] == ["cancelled"]


def test_a_value_that_names_a_class_is_not_loaded_but_read_as_none() -> None:
    import base64
    import pickle

    plain = base64.b64encode(pickle.dumps({"args": [{"cwd": "/x"}]})).decode()
    names_a_class = base64.b64encode(pickle.dumps(Path("/etc"))).decode()
    assert dbos_app.decoded(plain, "py_pickle") == {"args": [{"cwd": "/x"}]}
    assert dbos_app.decoded(names_a_class, "py_pickle") is None
    assert dbos_app.decoded("not base64 at all!", None) is None
    assert dbos_app.decoded('{"positionalArgs": [1]}', "portable_json") == {"positionalArgs": [1]}
