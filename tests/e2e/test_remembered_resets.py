"""A refusal that omits its reset, after answers that announced it: the real CLI, the
rehearsal API, and claudeloop's default probe interval (5 minutes). The probe comes
just after the reset the answers announced, not a probe interval later, and a run
killed with kill -9 during that wait resumes to the same instant."""

from __future__ import annotations

import json
import os
import signal
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Finished, Rehearsal, wait_for, write_plan

pytestmark = pytest.mark.e2e

SCENARIO = "window_silent_after_announced_reset"
# The default reset grace: the probe is due this long after the reset.
GRACE = timedelta(seconds=2)


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def state_of(project: Path) -> dict[str, Any]:
    runs = project / ".claudeloop" / "runs"
    for run in runs.iterdir() if runs.is_dir() else ():
        path = run / "state.json"
        if path.exists():
            return dict(json.loads(path.read_text()))
    return {}


def waiting(project: Path) -> bool:
    return bool(state_of(project).get("state", {}).get("phase") == "waiting")


def assert_waited_for_the_announced_reset(rehearsal: Rehearsal, finished: Finished) -> None:
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    requests = rehearsal.requests()
    [gate] = rehearsal.server.state()["gates"]
    reset = instant(gate["ended_at"])  # the 5-hour window's reset, as the answers said
    refused = [r for r in requests if r["gate"] == "window_silent"]
    # One turn met the closed window; no turn, and no probe, went into it after that.
    assert [r["kind"] for r in refused] == ["turn"]
    probes = [r for r in requests if r["kind"] == "probe"]
    assert len(probes) == 1
    assert probes[0]["gate"] is None  # it found the window open
    assert instant(probes[0]["at"]) >= reset
    # The next productive turn came after that probe, and the run finished.
    after = [r for r in requests if r["kind"] == "turn" and instant(r["at"]) > reset]
    assert after, "a turn must follow the probe"
    assert all(r["gate"] is None for r in after)
    assert min(instant(r["at"]) for r in after) >= instant(probes[0]["at"])
    waits = [e for e in finished.events() if e["type"] == "wait.started"]
    assert waits
    # The refusal named no reset; the wait is for the one the answers announced.
    assert "no reset announced" in waits[0]["capacity"]
    for wait in waits:
        assert instant(wait["probe_at"]) - reset == GRACE
    assert finished.result["turns"] == 3


@pytest.mark.scenario(SCENARIO)
def test_a_silent_refusal_is_probed_just_after_the_reset_the_answers_announced(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    # Every wait setting at its default: a probe interval would be 5 minutes.
    finished = rehearsal.run(str(plan))
    assert_waited_for_the_announced_reset(rehearsal, finished)
    saved = state_of(rehearsal.project)["state"]["announced_resets"]
    assert set(saved) >= {"five_hour", "seven_day"}


@pytest.mark.scenario(SCENARIO)
def test_a_run_killed_during_that_wait_resumes_to_the_same_reset(rehearsal: Rehearsal) -> None:
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan))
    try:
        wait_for(lambda: waiting(rehearsal.project), "the run to wait for the window")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    saved = state_of(rehearsal.project)["state"]
    assert "five_hour" in saved["announced_resets"]
    assert [r for r in rehearsal.requests() if r["kind"] == "probe"] == []
    finished = rehearsal.claudeloop("resume")
    assert "run.resumed" in finished.event_types()
    assert_waited_for_the_announced_reset(rehearsal, finished)
    resumed_waits = [e for e in finished.events() if e["type"] == "wait.started"]
    assert resumed_waits[-1]["probe_at"] == saved["next_probe_at"]
