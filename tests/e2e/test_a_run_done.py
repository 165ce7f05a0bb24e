"""A real run done, then looked at and steered as a person would the morning after:
from its project's parent folder, by its id alone (the machine's index of runs knows
where it lives), and with the commands that only a live run can take."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.e2e.conftest import FAST_WAITS, Finished, Rehearsal
from tests.e2e.patience import COMMAND

pytestmark = pytest.mark.e2e


def from_parent(rehearsal: Rehearsal, *args: str) -> Finished:
    """`claudeloop ARGS` in the project's parent folder, no --cwd."""
    completed = subprocess.run(
        [sys.executable, "-m", "claudeloop", *args],
        cwd=rehearsal.project.parent,
        env=rehearsal.env,
        capture_output=True,
        text=True,
        timeout=COMMAND,
        check=False,
    )
    return Finished(completed.returncode, completed.stdout, completed.stderr, rehearsal.project)


@pytest.mark.scenario("one_step")
def test_a_run_done_is_found_from_elsewhere_and_no_command_advises_resuming_it(
    rehearsal: Rehearsal,
) -> None:
    done = rehearsal.run("--prompt", "Write step1.txt", *FAST_WAITS, timeout=COMMAND)
    assert done.exit_code == 0, done.stderr
    run_id = done.result["run_id"]

    logs = from_parent(rehearsal, "logs", run_id)
    assert logs.exit_code == 0, logs.stderr
    assert logs.stderr == (
        f"claudeloop: run {run_id} is in {rehearsal.project} (from this machine's index of runs)\n"
    )
    types = [line.split()[2] for line in logs.stdout.splitlines() if line[:1].isdigit()]
    assert types[0] == "run.started"
    assert types[-1] == "run.finished"

    probed = from_parent(rehearsal, "probe-now", run_id)
    assert probed.exit_code == 0, probed.stderr
    assert probed.stdout.strip() == (
        f"claudeloop: run {run_id} is done: a probe now does nothing; more work is a new run "
        "(`claudeloop run`)"
    )
    for args in (("raise", run_id, "--max-turns", "9"), ("note", run_id, "use staging")):
        refused = from_parent(rehearsal, *args)
        assert refused.exit_code == 2, refused.stderr
        told = refused.stderr.splitlines()[-1]
        assert told.startswith(f"claudeloop: error: run {run_id} is done: "), told
        assert "resume" not in told
    # Nothing was asked of the run: its control file was never written.
    assert not any(done.run_directory().glob("control*"))

    gone = from_parent(rehearsal, "logs", "20261207-000000-nope00")
    assert gone.exit_code == 2
    assert gone.stderr == (
        f"claudeloop: error: RUN 20261207-000000-nope00: no such run in "
        f"{rehearsal.project.parent}, nor in this machine's index of runs "
        "(`claudeloop runs --all` lists every run it knows)\n"
    )
