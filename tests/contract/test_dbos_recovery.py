"""A dead worker's runs handed back through DBOS's public API, with the DBOS installed
(`make canary` runs this with the newest DBOS pyproject.toml allows).

A worker that takes over a dead one asks DBOS for the workflows pending under the dead
executor's id (`DBOS.list_workflows`) and resumes each on the runs' queue
(`DBOS.resume_workflow`): `hand_back` in adapters/fleet/dbos_app.py. Here a real DBOS
executor dies mid-run and another, in a process of its own (DBOS is one per process, as
workers are), hands its run back and finishes it from the queue, within the queue's
limits; a run finished is not handed back.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXECUTOR = """
import os, sys, time
from dbos import DBOS
from claudeloop.adapters.fleet.dbos_app import APPLICATION_VERSION, QUEUE, WORKFLOW, hand_back

url, me, role = sys.argv[1:4]
DBOS(config={"name": "claudeloop", "system_database_url": url, "executor_id": me,
              "application_version": APPLICATION_VERSION, "log_level": "ERROR"})

@DBOS.workflow(name=WORKFLOW, max_recovery_attempts=None)
def run(order: int) -> str:
    if role == "dies" and order == 7:
        print("started", flush=True)
        os._exit(9)  # killed mid-run: the workflow stays PENDING under this executor
    return f"order {order} finished by {me}"

DBOS.launch()
queue = DBOS.register_queue(QUEUE, worker_concurrency=1, on_conflict="always_update")
if role == "dies":
    print(queue.enqueue(run, 6).get_result(), flush=True)
    queue.enqueue(run, 7)
    time.sleep(60)
else:
    handed = hand_back([sys.argv[4]])
    results = [DBOS.retrieve_workflow(run_id).get_result() for run_id in handed]
    (seven,) = [w for w in DBOS.list_workflows() if w.input["args"] == (7,)]
    print(handed == [seven.workflow_id], seven.queue_name == QUEUE, results,
          hand_back([sys.argv[4]]), flush=True)
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
def test_a_dead_executors_pending_run_is_handed_back_and_finished_by_another(
    tmp_path: Path,
) -> None:
    died = _executor(tmp_path, "worker-a", "dies")
    assert (died.returncode, died.stdout) == (9, "order 6 finished by worker-a\nstarted\n"), (
        died.stderr
    )
    recovered = _executor(tmp_path, "worker-b", "recovers", "worker-a")
    assert recovered.returncode == 0, recovered.stderr
    # Only the run left pending (7) went back, and once: a second hand-back finds none.
    # On the runs' queue (its limits hold), not DBOS's internal one.
    assert recovered.stdout == "True True ['order 7 finished by worker-b'] []\n"
