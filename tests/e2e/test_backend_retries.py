"""The CLI's own retries (ten by default, minutes of backoff) against a run's promises:
a probe is one short request, so --max-wait holds, and a stop ends a turn stuck in
retries at once, saying what it was waiting for. These tests leave
CLAUDE_CODE_MAX_RETRIES unset, as a user's environment does."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.e2e.conftest import Rehearsal, wait_for

pytestmark = pytest.mark.e2e


def default_retries(rehearsal: Rehearsal) -> Rehearsal:
    rehearsal.env.pop("CLAUDE_CODE_MAX_RETRIES", None)
    rehearsal.env["CLAUDELOOP_CONFIG_DIR"] = str(rehearsal.project.parent / "user-config")
    return rehearsal


def events_of(project: Path) -> list[dict[str, object]]:
    runs = project / ".claudeloop" / "runs"
    logs = list(runs.glob("*/events.jsonl")) if runs.is_dir() else []
    if not logs:
        return []
    return [json.loads(line) for line in logs[0].read_text().splitlines() if line.strip()]


@pytest.mark.scenario("window_then_overloaded_probes")
def test_max_wait_holds_when_every_probe_meets_an_overload(rehearsal: Rehearsal) -> None:
    # The wait's one probe is due at --max-wait's end: were it retried by the CLI (ten
    # times, with minutes of backoff), the run would end long after its max-wait.
    finished = default_retries(rehearsal).run(
        "--prompt", "Write step1.txt", "--window-probe-interval", "1s", "--max-wait", "1s"
    )
    assert finished.exit_code == 4, finished.stderr
    assert finished.result["outcome"] == "max_wait_exceeded"
    probes = [r for r in rehearsal.requests() if r["kind"] == "probe"]
    assert probes
    # One request per probe: the CLI did not retry any of them on its own.
    probe_events = [e for e in finished.events() if e["type"] == "probe.finished"]
    assert len(probes) == len(probe_events)


@pytest.mark.scenario("overloaded_from_start")
def test_stop_ends_a_turn_stuck_in_the_clis_retries_and_says_so(rehearsal: Rehearsal) -> None:
    process = default_retries(rehearsal).start("run", "--prompt", "Write step1.txt")
    try:
        wait_for(
            lambda: any(e["type"] == "turn.retrying" for e in events_of(rehearsal.project)),
            "the CLI to retry the overloaded request",
        )
        stop = rehearsal.claudeloop("stop")
        assert stop.exit_code == 0, stop.stderr
        # The CLI's ten retries would take minutes; the stop ends the turn within seconds.
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    assert process.returncode == 130, err
    assert json.loads(out)["outcome"] == "stopped"
    events = events_of(rehearsal.project)
    retrying = [e for e in events if e["type"] == "turn.retrying"]
    assert retrying[0]["error_status"] == 529
    (failed,) = [e for e in events if e["type"] == "turn.failed"]
    assert str(failed["reason"]).startswith(
        "stopped while Claude Code was retrying a failed request (attempt "
    )
    assert "529" in str(failed["reason"])
    assert [r for r in rehearsal.requests() if r["kind"] == "probe"] == []
