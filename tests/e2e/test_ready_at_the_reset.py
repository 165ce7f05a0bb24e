"""Ready at the instant a window reopens (issue 47): the real CLI, the rehearsal API and
a 5-hour window compressed to seconds. Claude Code is started ahead of the probe's
instant, and nothing reaches the service before that instant; the probe is the first
request after it, the resumed turn the next; a stop in the wait ends the run and the
processes started ahead with it. Order and counts, never how long anything took."""

from __future__ import annotations

import json
import os
import signal
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import FAST_WAITS, Finished, Rehearsal, wait_for, write_plan
from tests.e2e.test_run_directory import kill_hard, phase

pytestmark = pytest.mark.e2e

GRACE = timedelta(seconds=1)  # FAST_WAITS's
STARTED_AHEAD = {
    "probe": "probe: sent on the Claude Code process started ahead",
    "turn": "turn: sent on the Claude Code process started ahead",
}


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def debug_log(finished: Finished) -> str:
    path = finished.run_directory() / "debug.log"
    return path.read_text() if path.exists() else ""


@pytest.mark.scenario("window_reset_at_2")
def test_nothing_reaches_the_service_before_the_instant_and_the_probe_is_first_after_it(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    # The reset is announced 4 s ahead; Claude Code is started 2 s before the probe's
    # instant (1 s after the reset), so the wait first sleeps, then gets ready.
    finished = rehearsal.run(
        str(plan), *FAST_WAITS, "--window-probe-interval", "60s", "--ready-ahead", "2s"
    )
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    assert finished.result["turns"] == 3

    requests = rehearsal.requests()
    (refused,) = [r for r in requests if r["gate"] == "window"]
    assert (refused["kind"], refused["turn"]) == ("turn", 2)
    (wait,) = [e for e in finished.events() if e["type"] == "wait.started"]
    probe_at = instant(wait["probe_at"])
    reset = probe_at - GRACE
    after = requests[requests.index(refused) + 1 :]
    # Between the window closing and the reset (the probe's instant, even), nothing.
    assert [r for r in after if instant(r["at"]) < reset] == []
    assert [r for r in after if instant(r["at"]) < probe_at] == []
    # The probe is the first request after the reset and found the window open; the
    # resumed turn follows it, then the rest of the run.
    probe, turn = after[0], after[1]
    assert (probe["kind"], probe["gate"]) == ("probe", None)
    assert (turn["kind"], turn["turn"], turn["step"], turn["gate"]) == ("turn", 2, 0, None)
    assert [r["kind"] for r in requests].count("probe") == 1
    sessions = {e["session_id"] for e in finished.events() if e["type"] == "turn.finished"}
    assert len(sessions) == 1  # the resumed turn is the same session
    # Both went on Claude Code processes started ahead of the instant.
    log = debug_log(finished)
    assert log.count(STARTED_AHEAD["probe"]) == 1
    assert log.count(STARTED_AHEAD["turn"]) == 1


@pytest.mark.scenario("window_reset_at_2")
def test_with_claude_codes_nonessential_traffic_on_still_nothing_before_the_instant(
    rehearsal: Rehearsal,
) -> None:
    # As a user's own environment has it: Claude Code then asks more of the service (a
    # title for the session, say), but only once it has a prompt.
    del rehearsal.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"]
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(
        str(plan), *FAST_WAITS, "--window-probe-interval", "60s", "--ready-ahead", "2s"
    )
    assert finished.exit_code == 0, finished.stderr
    requests = rehearsal.requests()
    (refused,) = [r for r in requests if r["gate"] == "window"]
    (wait,) = [e for e in finished.events() if e["type"] == "wait.started"]
    probe_at = instant(wait["probe_at"])
    after = requests[requests.index(refused) + 1 :]
    assert [r for r in after if instant(r["at"]) < probe_at] == []
    assert after[0]["kind"] == "probe"
    assert any(r["kind"] == "turn" and r["turn"] == 2 and r["gate"] is None for r in after)
    assert debug_log(finished).count(STARTED_AHEAD["probe"]) == 1


@pytest.mark.scenario("window_reset_at_2")
def test_with_ready_ahead_zero_nothing_is_started_ahead_and_the_order_is_the_same(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(
        str(plan), *FAST_WAITS, "--window-probe-interval", "60s", "--ready-ahead", "0"
    )
    assert finished.exit_code == 0, finished.stderr
    requests = rehearsal.requests()
    (refused,) = [r for r in requests if r["gate"] == "window"]
    after = requests[requests.index(refused) + 1 :]
    assert [(r["kind"], r["gate"]) for r in after[:2]] == [("probe", None), ("turn", None)]
    log = debug_log(finished)
    assert STARTED_AHEAD["probe"] not in log
    assert STARTED_AHEAD["turn"] not in log


def _claude_processes_in(project: Path) -> list[int]:
    """The processes working in `project` (the run's Claude Code processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd == project or project in cwd.parents:
            found.append(int(entry.name))
    return found


def _debug_log(rehearsal: Rehearsal) -> str:
    runs = rehearsal.project / ".claudeloop" / "runs"
    for run in runs.iterdir() if runs.is_dir() else ():
        path = run / "debug.log"
        if path.exists():
            return path.read_text()
    return ""


def _events(rehearsal: Rehearsal) -> list[dict[str, Any]]:
    runs = rehearsal.project / ".claudeloop" / "runs"
    for run in runs.iterdir() if runs.is_dir() else ():
        path = run / "events.jsonl"
        if path.exists():
            return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return []


@pytest.mark.scenario("window_until_lift_at_2")
def test_a_stop_in_the_wait_ends_the_run_and_the_processes_started_ahead(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    project = rehearsal.project.resolve()
    # The probe is due 30 s into the wait, within the lead: Claude Code starts at once.
    process = rehearsal.start("run", str(plan), *FAST_WAITS, "--window-probe-interval", "30s")
    try:
        wait_for(lambda: phase(rehearsal.project) == "waiting", "the run to wait", timeout=120)
        # The probe's process and the session's, started ahead and idle.
        wait_for(lambda: "] started ahead: " in _debug_log(rehearsal), "Claude Code started ahead")
        assert len(_claude_processes_in(project)) >= 2
        stopped = rehearsal.claudeloop("stop")
        assert stopped.exit_code == 0, stopped.stderr
        _, err = process.communicate(timeout=60)
    except BaseException:
        kill_hard(process)
        raise
    assert process.returncode == 130, err
    (finished,) = [e for e in _events(rehearsal) if e["type"] == "run.finished"]
    assert finished["outcome"] == "stopped"
    assert [r for r in rehearsal.requests() if r["kind"] == "probe"] == []  # nothing sent
    # Nothing left behind: the processes started ahead ended with the run.
    left = _claude_processes_in(project)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []
