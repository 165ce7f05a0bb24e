"""The one private call of DBOS the fleet relies on, pinned to DBOS's version.

A worker that takes over a dead one asks DBOS to recover that executor's pending
workflows: `recover_pending` in adapters/fleet/dbos_app.py, which calls
`DBOS._recover_pending_workflows` (ADR 0006 says why; DBOS has no public call that does
it). It is not public API: this test fails when a DBOS release changes what it does, and
`make canary` runs it (tests/contract) beside the newest Claude Code. The version it was
last read against is CHECKED: a DBOS of another version fails
`test_dbos_is_the_version_these_pins_were_read_against` until someone reads what changed
in `_recover_pending_workflows` and DBOS's tables (tests/contract/test_dbos_tables.py)
and moves CHECKED. Each executor runs in a process of its own, as workers do (DBOS is
one per process).
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

EXECUTOR = """
import os, sys, time
from dbos import DBOS
from claudeloop.adapters.fleet.dbos_app import recover_pending

url, me, role = sys.argv[1:4]
DBOS(config={"name": "pin", "system_database_url": url, "executor_id": me,
              "application_version": "pin-1", "log_level": "ERROR"})

@DBOS.workflow(name="pin.run", max_recovery_attempts=None)
def run(order: int) -> str:
    if role == "dies":
        print("started", flush=True)
        os._exit(9)  # killed mid-run: the workflow stays PENDING under this executor
    return f"order {order} finished by {me}"

DBOS.launch()
queue = DBOS.register_queue("pin-runs", worker_concurrency=1, on_conflict="always_update")
if role == "dies":
    queue.enqueue(run, 7)
    time.sleep(60)
else:
    count = recover_pending([sys.argv[4]])
    print(count, DBOS.retrieve_workflow(DBOS.list_workflows()[0].workflow_id).get_result(),
          flush=True)
    DBOS.destroy()
"""


# The DBOS release whose private call and tables these pins were read against.
CHECKED = "3.4.0"


def test_dbos_is_the_version_these_pins_were_read_against() -> None:
    assert version("dbos") == CHECKED, (
        f"DBOS is {version('dbos')}, not {CHECKED}: read what changed in "
        "DBOS._recover_pending_workflows and in its tables workflow_status, "
        "workflow_input and workflow_output (adapters/fleet/dbos_app.py relies on them), "
        "run tests/contract/test_dbos_*.py, then move CHECKED"
    )


def _executor(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "executor.py"
    script.write_text(EXECUTOR)
    url = f"sqlite:///{tmp_path / 'fleet.sqlite'}"
    return subprocess.run(
        [sys.executable, str(script), url, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_a_dead_executors_pending_workflow_is_recovered_and_finished_by_another(
    tmp_path: Path,
) -> None:
    died = _executor(tmp_path, "worker-a", "dies")
    assert (died.returncode, died.stdout) == (9, "started\n"), died.stderr
    recovered = _executor(tmp_path, "worker-b", "recovers", "worker-a")
    assert recovered.returncode == 0, recovered.stderr
    assert recovered.stdout == "1 order 7 finished by worker-b\n"
