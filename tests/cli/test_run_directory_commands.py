"""status, logs, runs, stop and wind-down read the run directory, never a traceback."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.lock import acquire
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.capacity import WindowExhausted
from claudeloop.domain.loop import ControlCommand, Outcome, Phase, RunState
from claudeloop.domain.plan import WorkPlan
from tests.cli.conftest import Invocation

Invoke = Callable[..., Invocation]


def waiting_run(cwd: Path, run_id: str = "20261130-090000-aaaaaa") -> RunDirectory:
    now = datetime.now(UTC)
    directory = RunDirectory.create(cwd, run_id)
    record = RunRecord(
        run_id=run_id,
        spec=RunSpec(cwd=cwd, task="t"),
        state=RunState(
            phase=Phase.WAITING,
            ledger=BudgetLedger(turns=2, attempts=3, dollars=0.42),
            capacity=WindowExhausted("five_hour", now + timedelta(minutes=30)),
            waiting_since=now,
            next_probe_at=now + timedelta(minutes=5),
            summary="wrote the parser",
        ),
        started_at=now,
        session_id="sess-1",
        plan=WorkPlan.parse("- [x] a\n- [ ] b\n"),
    )
    directory.save(record)
    with directory.events_path.open("w") as handle:
        handle.write(
            json.dumps(
                {"ts": now.isoformat(), "run_id": run_id, "type": "run.started", "cwd": str(cwd)}
            )
            + "\n"
        )
        handle.write(
            json.dumps(
                {
                    "ts": now.isoformat(),
                    "run_id": run_id,
                    "type": "wait.started",
                    "capacity": "5-hour window closed",
                    "probe_at": (now + timedelta(minutes=5)).isoformat(),
                }
            )
            + "\n"
        )
    return directory


def test_status_shows_capacity_countdown_and_plan(claudeloop: Invoke, tmp_path: Path) -> None:
    waiting_run(tmp_path)
    result = claudeloop("status", "--cwd", tmp_path)
    assert result.exit_code == 0
    assert "waiting" in result.out
    assert "next probe in 4m" in result.out or "next probe in 5m" in result.out
    assert "5-hour window closed" in result.out
    assert "plan: 1/2" in result.out
    assert "no driver" in result.out


def test_status_json(claudeloop: Invoke, tmp_path: Path) -> None:
    waiting_run(tmp_path)
    data = json.loads(claudeloop("status", "--cwd", tmp_path, "--json").out)
    assert data["phase"] == "waiting"
    assert data["turns"] == 2
    assert data["plan"] == {"done": 1, "total": 2}
    assert 240 < data["next_probe_in_seconds"] <= 300
    assert data["driver_alive"] is False


def test_logs_skip_a_half_written_last_line(claudeloop: Invoke, tmp_path: Path) -> None:
    directory = waiting_run(tmp_path)
    with directory.events_path.open("a") as handle:
        handle.write('{"ts": "2026-11-30T09:00:00+00:00", "type": "turn.sta\n')
    result = claudeloop("logs", "--cwd", tmp_path)
    assert result.exit_code == 0
    assert "run.started" in result.out
    assert "wait.started" in result.out
    assert "skipped an unreadable line" in result.err


def test_corrupt_state_is_one_line(claudeloop: Invoke, tmp_path: Path) -> None:
    directory = waiting_run(tmp_path)
    directory.state_path.write_text("{not json")
    result = claudeloop("status", "--cwd", tmp_path)
    assert result.exit_code == 2
    assert len(result.err.strip().splitlines()) == 1
    assert "state.json" in result.err


def test_missing_state_is_one_line(claudeloop: Invoke, tmp_path: Path) -> None:
    directory = waiting_run(tmp_path)
    directory.state_path.unlink()
    result = claudeloop("resume", "--cwd", tmp_path)
    assert result.exit_code == 2
    assert "state.json" in result.err
    assert "missing" in result.err


def test_runs_lists_newest_first(claudeloop: Invoke, tmp_path: Path) -> None:
    waiting_run(tmp_path, "20261130-090000-aaaaaa")
    waiting_run(tmp_path, "20261130-100000-bbbbbb")
    lines = claudeloop("runs", "--cwd", tmp_path).out.strip().splitlines()
    assert lines[0].startswith("20261130-100000-bbbbbb")
    # Under each run's line, indented, when it started and how long it has been running.
    assert lines[1].startswith("  started ")
    assert lines[2].startswith("20261130-090000-aaaaaa")


def test_stop_without_a_live_driver_says_so_and_exits_0(claudeloop: Invoke, tmp_path: Path) -> None:
    # Nothing to end, and nothing the user typed was wrong: not a usage error (README).
    waiting_run(tmp_path)
    result = claudeloop("stop", "--cwd", tmp_path)
    assert result.exit_code == 0
    assert result.out.strip().splitlines() == [
        "claudeloop: run 20261130-090000-aaaaaa has no live driver; nothing to stop"
    ]


def test_wind_down_without_a_live_driver_says_wind_down_in_words(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    waiting_run(tmp_path)
    result = claudeloop("wind-down", "--cwd", tmp_path)
    assert result.exit_code == 0
    assert result.out.strip().endswith("nothing to wind down")


def test_status_and_stop_where_no_run_is_say_so_and_exit_0(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    for command in ("status", "stop", "wind-down"):
        result = claudeloop(command, "--cwd", tmp_path)
        assert result.exit_code == 0, command
        assert result.out.strip() == (
            f"claudeloop: no claudeloop run in {tmp_path}; start one with `claudeloop run PLAN`"
        )
    shown = json.loads(claudeloop("status", "--cwd", tmp_path, "--json").out)
    assert shown["run_id"] is None
    assert "no claudeloop run" in shown["reason"]
    # A run named that is not there is a mistake in what was typed: exit 2.
    assert claudeloop("status", "--cwd", tmp_path, "--run-id", "nope").exit_code == 2


def test_stop_beside_a_reused_pid_says_there_is_no_live_driver(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    directory = waiting_run(tmp_path)
    # The driver died (a reboot) and its pid now belongs to a live, unrelated process.
    directory.lock_path.write_text(str(os.getppid()))
    result = claudeloop("stop", "--cwd", tmp_path)
    assert result.exit_code == 0
    (line,) = result.out.strip().splitlines()
    assert "run 20261130-090000-aaaaaa has no live driver; nothing to stop" in line
    assert directory.pending() is None


def test_wind_down_reaches_a_live_driver(claudeloop: Invoke, tmp_path: Path) -> None:
    directory = waiting_run(tmp_path)
    # This test process stands in for the driver: it holds the run's lock.
    lock = acquire(directory.lock_path)
    try:
        result = claudeloop("wind-down", "--cwd", tmp_path)
    finally:
        lock.release()
    assert result.exit_code == 0
    assert result.out.startswith("claudeloop: asked run 20261130-090000-aaaaaa (pid "), result.out
    assert ") to wind down: " in result.out  # in words, not the command's name
    assert directory.pending() is ControlCommand.WIND_DOWN


def test_run_directory_is_owner_only(tmp_path: Path) -> None:
    directory = waiting_run(tmp_path)
    assert directory.path.stat().st_mode & 0o077 == 0
    assert (tmp_path / ".claudeloop").stat().st_mode & 0o077 == 0
    assert directory.state_path.stat().st_mode & 0o077 == 0


def test_logs_follow_returns_when_the_driver_is_gone(claudeloop: Invoke, tmp_path: Path) -> None:
    # A crashed run (no live driver) does not keep -f waiting forever.
    waiting_run(tmp_path)
    result = claudeloop("logs", "--cwd", tmp_path, "-f")
    assert result.exit_code == 0
    assert "wait.started" in result.out


def test_logs_json_prints_the_raw_lines(claudeloop: Invoke, tmp_path: Path) -> None:
    waiting_run(tmp_path)
    lines = claudeloop("logs", "--cwd", tmp_path, "--json").out.strip().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["run.started", "wait.started"]


def test_status_shows_a_switch_profile_detour(claudeloop: Invoke, tmp_path: Path) -> None:
    from dataclasses import replace

    from claudeloop.domain.capacity import Available
    from claudeloop.domain.loop import Detour

    directory = waiting_run(tmp_path)
    record = directory.load()
    now = datetime.now(UTC)
    detour = Detour(
        profile="local",
        awaiting=WindowExhausted("five_hour", now + timedelta(hours=2)),
        since=now,
        check_at=now + timedelta(minutes=4),
    )
    state = replace(record.state, phase=Phase.RUNNING, capacity=Available(), detour=detour)
    directory.save(replace(record, state=state))
    text = claudeloop("status", "--cwd", tmp_path).out
    assert "on profile local while the run's own backend waits: 5-hour window closed" in text
    data = json.loads(claudeloop("status", "--cwd", tmp_path, "--json").out)
    assert data["detour"]["profile"] == "local"
    assert 200 < data["detour"]["check_in_seconds"] <= 240


OLDER, NEWER = "20261130-090000-aaaaaa", "20261130-100000-bbbbbb"


def test_status_logs_and_stop_without_run_id_pick_the_live_run_over_the_newest(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    live = waiting_run(tmp_path, OLDER)
    newer = waiting_run(tmp_path, NEWER)  # newer, but no driver: a finished or crashed run
    for directory in (live, newer):
        event = {"ts": "2026-11-30T09:00:00+00:00", "run_id": directory.run_id, "type": "x"}
        directory.events_path.write_text(json.dumps(event) + "\n")
    lock = acquire(live.lock_path)
    try:
        shown = json.loads(claudeloop("status", "--cwd", tmp_path, "--json").out)
        assert (shown["run_id"], shown["driver_alive"]) == (OLDER, True)
        logged = claudeloop("logs", "--cwd", tmp_path, "--json").out.splitlines()
        assert [json.loads(line)["run_id"] for line in logged] == [OLDER]
        stopped = claudeloop("stop", "--cwd", tmp_path)
    finally:
        lock.release()
    assert stopped.exit_code == 0, stopped.err
    assert OLDER in stopped.out
    assert live.pending() is ControlCommand.STOP
    # With no live driver the newest run is the default again.
    shown = json.loads(claudeloop("status", "--cwd", tmp_path, "--json").out)
    assert shown["run_id"] == NEWER


def test_a_second_run_beside_a_live_one_is_refused_unless_named(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    live = waiting_run(tmp_path, OLDER)
    lock = acquire(live.lock_path)
    try:
        refused = claudeloop("run", "--prompt", "another task", "--cwd", tmp_path)
    finally:
        lock.release()
    assert refused.exit_code == 2
    (line,) = refused.err.strip().splitlines()
    assert OLDER in line
    assert f"process {os.getpid()}" in line
    assert "--run-id NAME" in line
    assert [d.name for d in (tmp_path / ".claudeloop" / "runs").iterdir()] == [OLDER]


@pytest.mark.parametrize("outcome", [Outcome.STOPPED, Outcome.WOUND_DOWN, Outcome.DONE])
def test_status_names_an_ended_run_by_how_it_ended(
    claudeloop: Invoke, tmp_path: Path, outcome: Outcome
) -> None:
    # A user's stop was labelled "failed, stopped".
    from dataclasses import replace

    directory = waiting_run(tmp_path)
    record = directory.load()
    phase = Phase.COMPLETE if outcome is Outcome.DONE else Phase.FAILED
    state = replace(record.state, phase=phase, outcome=outcome, reason="as asked")
    directory.save(replace(record, state=state))
    first = claudeloop("status", "--cwd", tmp_path).out.splitlines()[0]
    assert first == f"run {record.run_id}: {outcome.value}: as asked · no driver"
