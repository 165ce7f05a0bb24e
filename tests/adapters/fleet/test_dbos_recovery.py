"""The one private call of DBOS the fleet relies on, pinned for the range we allow.

A worker that takes over a dead one asks DBOS to recover that executor's pending
workflows (`DBOS._recover_pending_workflows`, adapters/fleet/worker.py; ADR 0006 says
why). It is not public API: this test fails first when a DBOS release within
`dbos>=3.4,<4` changes what it does. Each executor runs in a process of its own, as
workers do (DBOS is one per process).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXECUTOR = """
import os, sys, time
from dbos import DBOS

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
    handles = DBOS._recover_pending_workflows([sys.argv[4]])
    print(len(handles), handles[0].get_result(), flush=True)
    DBOS.destroy()
"""


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
