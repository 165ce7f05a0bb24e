"""One account, many loops: three concurrent `claudeloop run` processes on one account
(same base URL and token, same state directory, each its own project) and one rehearsal
API whose window closes at the first turn 2 until the test lifts it. Two loops start
together and race into the window as it closes; the third starts once one of them has
met it, so it starts into a window already known closed.

What reaches the closed window is counted from the server's own log (each turn request
carries the directory of the loop that sent it):

- turns: at most one per loop, and only a turn that loop had started before any loop
  had finished a refused turn, i.e. already in flight before any loop could know (a loop
  publishes what it learnt before its runner reports the turn); the third loop, none;
- probes: no more than one loop's own count of closed-window probe results, while every
  loop went through at least one, so the others' results came from the board.

After the lift all three finish their plans (exit 0).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from claudeloop.adapters.shared_capacity import account_key
from tests.e2e.conftest import FAST_WAITS, Rehearsal, cli_env, wait_for, write_plan
from tests.e2e.preloaded import Running, start_claudeloop

pytestmark = pytest.mark.e2e

LOOPS = 3


def events(project: Path) -> list[dict[str, Any]]:
    """The run's events so far (a line being written is skipped)."""
    runs = project / ".claudeloop" / "runs"
    found: list[dict[str, Any]] = []
    for path in runs.glob("*/events.jsonl") if runs.is_dir() else ():
        for line in path.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                found.append(json.loads(line))
    return found


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def refusals(project: Path) -> list[dict[str, Any]]:
    return [
        event
        for event in events(project)
        if event["type"] == "turn.finished" and event["verdict"] == "refused"
    ]


def closed_probes(project: Path) -> int:
    return sum(
        1
        for event in events(project)
        if event["type"] == "probe.finished" and event["capacity"] != "available"
    )


@pytest.mark.scenario("window_until_lift_at_2")
def test_loops_on_one_account_send_nothing_into_a_window_another_found_closed(
    rehearsal: Rehearsal, tmp_path: Path
) -> None:
    state = tmp_path / "shared-state"
    projects = [tmp_path / f"loop{n}" for n in range(1, LOOPS + 1)]
    loops: list[Running] = []

    def start(number: int) -> None:
        project = projects[number - 1]
        project.mkdir()
        plan = write_plan(project)
        # Each its own HOME (its own Claude Code config), the same account.
        env = cli_env(rehearsal.server.base_url, tmp_path / f"home{number}")
        env["CLAUDELOOP_STATE_DIR"] = str(state)
        command = ["run", str(plan), *FAST_WAITS]
        command += ["--window-probe-interval", "2s", "--cwd", str(project), "--json"]
        loops.append(start_claudeloop(command, env, cwd=project))

    try:
        # Two loops start together and race into the window as it closes; the third
        # starts once one of them has met it.
        start(1)
        start(2)
        wait_for(
            lambda: any(refusals(project) for project in projects[:2]),
            "a loop to meet the closed window",
            timeout=90,
        )
        start(3)
        try:
            wait_for(
                lambda: all(closed_probes(project) >= 1 for project in projects),
                "every loop to have a probe result of the closed window",
                timeout=120,
            )
        except BaseException:
            for project in projects:
                print(project.name, [(e["type"], e.get("capacity")) for e in events(project)])
                for log in project.glob(".claudeloop/runs/*/debug.log"):
                    print(log.read_text()[-3000:])
            print(rehearsal.requests())
            for loop in loops:
                if loop.poll() is not None:
                    print("exited", loop.returncode, loop.communicate())
            raise
        rehearsal.server.lift()
        finished = [loop.communicate(timeout=150) for loop in loops]
    finally:
        for loop in loops:
            if loop.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(loop.pid, signal.SIGKILL)
                loop.wait(10)

    for loop, (stdout, stderr), project in zip(loops, finished, projects, strict=True):
        assert loop.returncode == 0, stderr
        result = json.loads(stdout)
        assert (result["outcome"], result["plan"]) == ("done", {"done": 3, "total": 3})
        for n in (1, 2, 3):
            assert (project / f"step{n}.txt").read_text() == f"step {n}\n"

    requests = rehearsal.requests()
    assert all(r["kind"] != "turn" or r["cwd"] for r in requests)
    by_directory = {str(project.resolve()): project for project in projects}
    gate_turns = [r for r in requests if r["kind"] == "turn" and r["gate"]]
    gate_probes = [r for r in requests if r["kind"] == "probe" and r["gate"]]
    assert gate_turns, "the window closed on a turn"
    assert {r["gate"] for r in gate_turns + gate_probes} == {"window_silent"}

    # Turns: one per loop at most, each started before any loop finished a refused turn.
    per_loop = Counter(r["cwd"] for r in gate_turns)
    assert set(per_loop) <= set(by_directory)
    assert max(per_loop.values()) == 1, per_loop
    # The loop that started after the window closed sent none at all.
    assert str(projects[2].resolve()) not in per_loop
    first_refusals = {}
    for directory, project in by_directory.items():
        refused = refusals(project)[0]
        started = next(
            e
            for e in events(project)
            if e["type"] == "turn.started" and e["turn"] == refused["turn"]
        )
        first_refusals[directory] = (instant(started["ts"]), instant(refused["ts"]))
    known_closed = min(finished_at for _, finished_at in first_refusals.values())
    for directory in per_loop:
        started_at, _ = first_refusals[directory]
        assert started_at < known_closed, (directory, first_refusals)

    # Probes: the closed window saw no more probes than one loop's share of them.
    shares = [closed_probes(project) for project in projects]
    assert min(shares) >= 1
    assert len(gate_probes) <= max(shares) < sum(shares), (len(gate_probes), shares)

    # The third loop's refused turn was held back, and its log says so, not "sent".
    held = refusals(projects[2])[0]
    assert held["sent"] is False
    logged = subprocess.run(
        [sys.executable, "-m", "claudeloop", "logs", "--cwd", str(projects[2])],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert f"turn {held['turn']}: held back: " in logged.stdout, logged.stdout

    open_probes = [r for r in requests if r["kind"] == "probe" and not r["gate"]]
    print(  # the measured counts, for `pytest -s`
        f"\nrefused turns sent: {len(gate_turns)} of {LOOPS} loops; probes into the closed "
        f"window: {len(gate_probes)}; closed probe results per loop: {shares}; probes "
        f"after the lift: {len(open_probes)}"
    )


@pytest.mark.scenario("window_until_lift_at_2")
def test_a_run_beside_a_stuck_holder_of_the_capacity_lock_goes_on_and_answers_sigterm(
    rehearsal: Rehearsal, tmp_path: Path
) -> None:
    state = tmp_path / "shared-state"
    rehearsal.env["CLAUDELOOP_STATE_DIR"] = str(state)
    (state / "capacity").mkdir(parents=True)
    # Another process (stuck, or a debugger on it) keeps this account's record locked.
    lock_path = state / "capacity" / f"{account_key(rehearsal.env, None)}.lock"
    descriptor = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    process: Running | None = None
    try:
        plan = write_plan(rehearsal.project)
        process = rehearsal.start("run", str(plan), *FAST_WAITS, "--window-probe-interval", "60s")
        # Turn 1 went through; turn 2 meets the closed window, and its news is being
        # offered to the locked record when the SIGTERM comes.
        wait_for(lambda: any(r["gate"] for r in rehearsal.requests()), "turn 2 to meet the window")
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        os.close(descriptor)
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
    assert process.returncode == 143, err  # SIGTERM's, as a shell reports it
    assert json.loads(out)["outcome"] == "stopped"
    assert (rehearsal.project / "step1.txt").read_text() == "step 1\n"
    assert [r for r in rehearsal.requests() if r["kind"] == "probe"] == []
    finished = [e.get("verdict") for e in events(rehearsal.project) if e["type"] == "turn.finished"]
    # Both turns were answered and recorded before the run ended: nothing froze.
    assert finished[:2] == ["continue", "refused"]
    assert events(rehearsal.project)[-1]["type"] == "run.finished"
    (debug,) = rehearsal.project.glob(".claudeloop/runs/*/debug.log")
    assert "going on without sharing this turn's news" in debug.read_text()
    assert not (state / "capacity" / f"{account_key(rehearsal.env, None)}.json").exists()


def stopped_while_waiting(rehearsal: Rehearsal) -> None:
    """A run meets the closed window at turn 2, waits (a probe interval far off), and is
    stopped with `claudeloop stop`: its driver is gone, its sighting stays on the board."""
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS, "--window-probe-interval", "30s")
    try:
        wait_for(
            lambda: any(e["type"] == "wait.started" for e in events(rehearsal.project)),
            "the run to wait for the closed window",
            timeout=90,
        )
        stop = rehearsal.claudeloop("stop")
        assert stop.exit_code == 0, stop.stderr
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
    assert process.returncode == 130, err


@pytest.mark.scenario("window_until_lift_at_2")
def test_a_stopped_run_resumed_after_the_lift_sends_a_turn_at_once(
    rehearsal: Rehearsal, tmp_path: Path
) -> None:
    rehearsal.env["CLAUDELOOP_STATE_DIR"] = str(tmp_path / "shared-state")
    stopped_while_waiting(rehearsal)
    before = len(events(rehearsal.project))
    rehearsal.server.lift()
    resumed = rehearsal.claudeloop("resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert resumed.result["outcome"] == "done"
    after = events(rehearsal.project)[before:]
    types = [event["type"] for event in after]
    # Its own sighting of the closed window holds it back no more: the first thing the
    # resumed run does is a turn, sent, not a wait. (A stopped run goes on as if begun
    # again, with its ledger, and its log says it was resumed.)
    assert types[:3] == ["run.resumed", "sandbox.set", "turn.started"], types
    assert len({event["run_id"] for event in events(rehearsal.project)}) == 1  # the same run
    first = next(event for event in after if event["type"] == "turn.finished")
    assert (first["sent"], first["verdict"]) == (True, "continue"), first
    assert "wait.started" not in types, types
    assert [r for r in rehearsal.requests() if r["kind"] == "probe"] == []


@pytest.mark.scenario("window_until_lift_at_2")
def test_a_run_beside_a_gone_runs_sighting_checks_it_with_one_probe_at_once(
    rehearsal: Rehearsal, tmp_path: Path
) -> None:
    rehearsal.env["CLAUDELOOP_STATE_DIR"] = str(tmp_path / "shared-state")
    stopped_while_waiting(rehearsal)
    rehearsal.server.lift()
    # A new run of the same account in another directory, after the first's driver is gone.
    other = tmp_path / "other"
    other.mkdir()
    plan = write_plan(other)
    command = [sys.executable, "-m", "claudeloop", "run", str(plan), *FAST_WAITS]
    command += ["--window-probe-interval", "30s", "--cwd", str(other), "--json"]
    finished = subprocess.run(
        command, env=rehearsal.env, capture_output=True, text=True, timeout=150, check=False
    )
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout)["outcome"] == "done"
    types = [event["type"] for event in events(other)]
    assert "wait.started" not in types, types
    first = next(event for event in events(other) if event["type"] == "turn.finished")
    assert (first["sent"], first["verdict"]) == (True, "continue"), first
    # The gone run's closed window was checked by one probe, before the new run's turn.
    requests = rehearsal.requests()
    probes = [n for n, r in enumerate(requests) if r["kind"] == "probe"]
    first_turn = next(
        n
        for n, r in enumerate(requests)
        if r["kind"] == "turn" and r["cwd"] == str(other.resolve())
    )
    assert len(probes) == 1, requests
    assert probes[0] < first_turn
