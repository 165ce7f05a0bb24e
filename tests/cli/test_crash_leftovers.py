"""What a kill at the wrong moment leaves behind is put right when the run is next
looked at or resumed (issue 12, item 11)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.domain.loop import Outcome, Phase
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
