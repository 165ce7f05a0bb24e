"""What a kill at the wrong moment leaves behind is put right when the run is next
looked at or resumed (issue 12, item 11)."""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from claudeloop.adapters.claude_code.backend import backend_for
from claudeloop.adapters.config.profiles import DEFAULT_BACKEND
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.starting import create as create_directory
from claudeloop.adapters.run_directory.starting import new_record
from claudeloop.application.driving import drive_run
from claudeloop.application.fleet_seat import NO_SEAT
from claudeloop.application.records import RunSpec
from claudeloop.cli.bootstrap.runs import wire_run
from claudeloop.domain.loop import Outcome, Phase
from tests.application.fakes import FakeGateway, verdict_turn
from tests.cli.conftest import Invocation
from tests.cli.test_run_directory_commands import waiting_run

Invoke = Callable[..., Invocation]


def finished_without_summary(cwd: Path, outcome: Outcome) -> RunDirectory:
    """A run killed after its final save, before summary.md was written."""
    directory = waiting_run(cwd)
    record = directory.load()
    phase = Phase.COMPLETE if outcome is Outcome.DONE else Phase.FAILED
    state = replace(record.state, phase=phase, outcome=outcome, reason="all items done")
    directory.save(replace(record, state=state))
    return directory


@pytest.mark.parametrize("command", ["status", "resume"])
def test_a_finished_run_without_a_summary_gets_one_when_next_looked_at(
    claudeloop: Invoke, tmp_path: Path, command: str
) -> None:
    directory = finished_without_summary(tmp_path, Outcome.DONE)
    result = claudeloop(command, "--cwd", tmp_path)
    assert result.exit_code == 0, result.err
    summary = directory.summary_path.read_text()
    assert "**done**" in summary
    assert "all items done" in summary
    assert directory.summary_path.stat().st_mode & 0o777 == 0o600


def test_a_summary_already_there_is_kept(claudeloop: Invoke, tmp_path: Path) -> None:
    directory = finished_without_summary(tmp_path, Outcome.DONE)
    directory.summary_path.write_text("the driver's own summary\n")
    claudeloop("status", "--cwd", tmp_path)
    assert directory.summary_path.read_text() == "the driver's own summary\n"


def test_a_run_still_going_gets_no_summary_from_status(claudeloop: Invoke, tmp_path: Path) -> None:
    directory = waiting_run(tmp_path)
    assert claudeloop("status", "--cwd", tmp_path).exit_code == 0
    assert not directory.summary_path.exists()


def test_a_run_removes_the_temporary_files_a_killed_write_left(tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    plan.write_text("- [ ] a\n")
    record = new_record(RunSpec(cwd=tmp_path, task="t", plan_path=plan), "tidy")
    directory = create_directory(record)
    hour_ago = time.time() - 3600
    state_temporary = directory.path / ".state.json.a1b2c3d4"
    plan_temporary = tmp_path / ".PLAN.md.a1b2c3d4.claudeloop-tmp"
    users_backup = tmp_path / ".PLAN.md.20261130"
    for path in (state_temporary, plan_temporary, users_backup):
        path.write_text("{")
        os.utime(path, (hour_ago, hour_ago))
    gateway = FakeGateway(turns=deque([verdict_turn(complete=True, summary="done")]))
    ended = drive_run(
        wire_run(
            directory,
            record,
            backend=backend_for(DEFAULT_BACKEND),
            quiet=True,
            gateway=gateway,
            seat=NO_SEAT,
        ),
        record,
        resumed=False,
    )
    assert ended.state.outcome is Outcome.DONE
    assert not state_temporary.exists()
    assert not plan_temporary.exists()
    assert users_backup.exists()
