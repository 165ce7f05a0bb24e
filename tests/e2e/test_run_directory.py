"""A run survives kill -9 and is steered from another terminal (status, logs, stop,
wind-down), with the real CLI and the rehearsal API."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import cast

import pytest

from tests.e2e.conftest import (
    FAST_WAITS,
    Rehearsal,
    assert_ledger_is_what_was_served,
    in_flight_kept,
    wait_for,
    write_plan,
)
from tests.e2e.patience import COMMAND, STATE
from tests.e2e.preloaded import Running

pytestmark = pytest.mark.e2e


def state_of(project: Path) -> dict[str, object]:
    (run,) = list((project / ".claudeloop" / "runs").iterdir())
    return dict(json.loads((run / "state.json").read_text()))


def has_state(project: Path) -> bool:
    runs = project / ".claudeloop" / "runs"
    return runs.is_dir() and any((r / "state.json").exists() for r in runs.iterdir())


def phase(project: Path) -> str:
    return str(state_of(project)["state"]["phase"]) if has_state(project) else "none"  # type: ignore[index]


def sends_kept(rehearsal: Rehearsal) -> int:
    """The requests the run's session transcripts say were sent."""
    config = Path(rehearsal.env["CLAUDE_CONFIG_DIR"])
    return sum(
        json.loads(line).get("type") == "api-request"
        for path in (config / "projects").glob("*/*.jsonl")
        for line in path.read_text().splitlines()
        if line.endswith("}")
    )


# A wait whose probe no test outlives, however loaded the machine.
AN_HOUR_TO_THE_PROBE = ("--window-probe-interval", "1h", "--max-wait", "10h")


def stalled(rehearsal: Rehearsal) -> int:
    return len([r for r in rehearsal.requests() if r["gate"] == "stall"])


def kill_hard(process: Running) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


@pytest.mark.scenario("stall_at_2_twice")
def test_ctrl_c_then_kill_9_mid_turn_and_resume_finishes_with_the_persisted_ledger(
    rehearsal: Rehearsal,
) -> None:
    """Turn 2 stalls twice: the first time a Ctrl-C ends the run at once (a second one
    changes nothing), the second time (the turn sent again by a resume) kill -9; the
    next resume finishes with each turn counted once."""
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    wait_for(lambda: stalled(rehearsal) == 1, "turn 2 to be in flight", timeout=STATE)
    # Claude Code writes that it sent the request a moment after sending it: from then on
    # the request cut off is known, and billed at an estimate once resumed.
    wait_for(
        lambda: in_flight_kept(rehearsal) == 1,
        "the transcript to keep the stalled send",
        timeout=STATE,
    )
    process.send_signal(signal.SIGINT)  # only claudeloop: it ends its turn itself
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)  # the stall lasts 2 min: this is at once
    assert process.returncode == 130, err
    assert json.loads(out)["outcome"] == "stopped"
    # What resume needs is intact: the state of before the interrupted turn.
    state = state_of(rehearsal.project)
    assert state["state"]["turns"] == 1  # type: ignore[index]
    assert state["turn_in_flight"] == 2

    sent = sends_kept(rehearsal)
    process = rehearsal.start("resume")
    wait_for(lambda: stalled(rehearsal) == 2, "turn 2 to be in flight again", timeout=STATE)
    # And again for the resume's send. (The resumed CLI closed the request the Ctrl-C cut
    # off with a placeholder answer of its own, which still leaves that one in flight.)
    wait_for(
        lambda: sends_kept(rehearsal) == sent + 1 and in_flight_kept(rehearsal) == 2,
        "the transcript to keep the stalled send",
        timeout=STATE,
    )
    kill_hard(process)
    before = state_of(rehearsal.project)
    assert before["state"]["turns"] == 1  # type: ignore[index]
    finished = rehearsal.claudeloop("resume", timeout=COMMAND)
    assert finished.exit_code == 0, finished.stderr
    result = finished.result
    assert result["outcome"] == "done"
    events = finished.events()
    resumed_at = max(i for i, e in enumerate(events) if e["type"] == "run.resumed")
    answered_after = [
        e for e in events[resumed_at:] if e["type"] == "turn.finished" and e["verdict"] != "refused"
    ]
    # The persisted turn counted once, the killed turn not at all, the new ones once each.
    assert result["turns"] == before["state"]["turns"] + len(answered_after)  # type: ignore[index]
    assert result["session_id"] == before["session_id"]
    assert {e["session_id"] for e in answered_after} == {before["session_id"]}
    # The fresh CLI after the kill restores an older running total: billed as a difference
    # of totals, the turns after the resume came to $0. The requests in flight at the
    # Ctrl-C and at the kill are billed at an estimate.
    assert_ledger_is_what_was_served(finished, rehearsal, in_flight=2)
    interrupted = [e for e in events if e["type"] == "turn.interrupted"]
    assert [e["turn"] for e in interrupted] == [2, 2]


@pytest.mark.scenario("window_until_lift_at_2")
def test_kill_9_during_a_wait_keeps_the_probe_instant(rehearsal: Rehearsal) -> None:
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    wait_for(lambda: phase(rehearsal.project) == "waiting", "the run to wait", timeout=STATE)
    kill_hard(process)
    killed = cast("dict[str, object]", state_of(rehearsal.project)["state"])
    persisted = killed["next_probe_at"]
    # On a loaded machine the kill can come after the probe interval: a probe the kill
    # cut off is billed at an estimate once resumed (and sent again).
    cut_off = int(killed["phase"] == "probing")
    probes_before = len([r for r in rehearsal.requests() if r["kind"] == "probe"])
    rehearsal.server.lift()
    finished = rehearsal.claudeloop("resume", timeout=COMMAND)
    assert finished.exit_code == 0, finished.stderr
    resumed_waits = [e for e in finished.events() if e["type"] == "wait.started"][-1]
    assert resumed_waits["probe_at"] == persisted  # the same instant: no burst, no fresh wait
    probes = [r for r in rehearsal.requests() if r["kind"] == "probe"]
    assert len(probes) == probes_before + 1
    assert probes[-1]["at"] >= persisted
    assert_ledger_is_what_was_served(finished, rehearsal, in_flight=cut_off)


@pytest.mark.scenario("window_until_lift_at_2")
def test_a_waiting_run_is_shown_refuses_a_second_driver_and_stop_ends_it_without_probing(
    rehearsal: Rehearsal,
) -> None:
    """One run waiting for its window (the next probe an hour away), watched and
    steered from another terminal: status and logs show the wait; a second driver is
    refused with the live pid, a second run naming the live one unless it is named
    itself; `claudeloop stop` ends it with 130, no probe sent."""
    plan = write_plan(rehearsal.project)
    runs = rehearsal.project / ".claudeloop" / "runs"
    process = rehearsal.start("run", str(plan), *FAST_WAITS, *AN_HOUR_TO_THE_PROBE)
    named: Running | None = None
    try:
        wait_for(lambda: phase(rehearsal.project) == "waiting", "the run to wait", timeout=STATE)
        (live,) = list(runs.iterdir())

        status = rehearsal.claudeloop("status")
        shown = json.loads(status.stdout)
        assert shown["phase"] == "waiting"
        assert shown["driver_alive"] is True
        assert "window closed" in shown["capacity"]
        assert shown["next_probe_in_seconds"] is not None
        logs = subprocess.run(
            [*rehearsal.command("logs")],
            env=rehearsal.env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert "wait.started" in logs.stdout
        assert "window closed" in logs.stdout

        second = rehearsal.claudeloop("resume", timeout=COMMAND)
        assert second.exit_code == 2
        assert str(process.pid) in second.stderr
        assert len(second.stderr.strip().splitlines()) == 1

        beside = rehearsal.run(str(plan), *FAST_WAITS, timeout=COMMAND)
        assert beside.exit_code == 2
        (line,) = beside.stderr.strip().splitlines()
        assert live.name in line
        assert "--run-id NAME" in line
        assert list(runs.iterdir()) == [live]
        # Asked for by name, a second run starts beside the live one.
        named = rehearsal.start("run", str(plan), *FAST_WAITS, "--run-id", "on-purpose")
        wait_for((runs / "on-purpose" / "state.json").exists, "the named run", timeout=STATE)
        assert process.poll() is None
        kill_hard(named)

        # `stop` acts on the run a live driver drives.
        stop = rehearsal.claudeloop("stop")
        assert stop.exit_code == 0, stop.stderr
        out, err = process.communicate(timeout=STATE)
    finally:
        if process.poll() is None:
            kill_hard(process)
        if named is not None and named.poll() is None:
            kill_hard(named)
    assert process.returncode == 130, err
    assert json.loads(out)["outcome"] == "stopped"
    assert [r for r in rehearsal.requests() if r["kind"] == "probe"] == []
    assert "stopped" in (live / "summary.md").read_text()


@pytest.mark.scenario("slow_turn_2_until_lift")
def test_wind_down_mid_run_finishes_the_turn_and_exits_75_with_a_handoff(
    rehearsal: Rehearsal,
) -> None:
    plan = write_plan(rehearsal.project)
    process = rehearsal.start("run", str(plan), *FAST_WAITS)
    # Turn 2 stalls until the lift: the wind-down lands while it is in flight, however
    # long the command takes to start on a loaded machine.
    wait_for(
        lambda: any(r["gate"] == "stall" for r in rehearsal.requests()),
        "turn 2 to be in flight",
        timeout=STATE,
    )
    wind = rehearsal.claudeloop("wind-down")
    assert wind.exit_code == 0, wind.stderr
    rehearsal.server.lift()
    out, err = process.communicate(timeout=COMMAND)
    assert process.returncode == 75, err
    result = json.loads(out)
    assert result["outcome"] == "wound_down"
    assert result["turns"] == 2  # the turn in flight was finished, no further turn sent
    (run,) = list((rehearsal.project / ".claudeloop" / "runs").iterdir())
    handoff = (run / "summary.md").read_text()
    assert "Write step3.txt" in handoff  # what is left
    assert "claudeloop resume" in handoff  # and how to go on


@pytest.mark.scenario("one_step")
def test_every_directory_claudeloop_makes_is_owner_only_and_the_state_holds_the_plan_once(
    rehearsal: Rehearsal, tmp_path: Path
) -> None:
    # The platform's state directory, as a user without CLAUDELOOP_STATE_DIR has it.
    env = {k: v for k, v in rehearsal.env.items() if k != "CLAUDELOOP_STATE_DIR"}
    env["XDG_STATE_HOME"] = str(tmp_path / "xdg-state")
    # A long plan: the run's state keeps its text once, and the model is told it all.
    lines = ["# Plan", "", "- [ ] Write step1.txt", ""] + ["context line"] * 20_000
    (rehearsal.project / "PLAN.md").write_text("\n".join([*lines, "THE PLAN'S LAST LINE", ""]))
    finished = subprocess.run(
        [*rehearsal.command("run", "PLAN.md", "--verify", "true", *FAST_WAITS), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND,
        check=False,
        preexec_fn=lambda: os.umask(0o022),  # a umask that leaves files readable by all
    )
    assert finished.returncode == 0, finished.stderr
    made = [rehearsal.project / ".claudeloop", tmp_path / "xdg-state" / "claudeloop"]
    run_directory = next((made[0] / "runs").iterdir())
    assert (run_directory / "checks").is_dir()
    modes = {
        str(path): oct(path.stat().st_mode & 0o777)
        for top in made
        for path in [top, *top.rglob("*")]
    }
    wrong = {
        path: mode
        for path, mode in modes.items()
        if mode != (oct(0o700) if Path(path).is_dir() else oct(0o600))
    }
    assert len(modes) > 8
    assert not wrong, wrong
    state = (run_directory / "state.json").read_text()
    assert state.count("THE PLAN'S LAST LINE") == 1
    assert state.count("context line") == 20_000
    transcripts = list((Path(rehearsal.env["CLAUDE_CONFIG_DIR"]) / "projects").rglob("*.jsonl"))
    assert any("THE PLAN'S LAST LINE" in path.read_text() for path in transcripts)
