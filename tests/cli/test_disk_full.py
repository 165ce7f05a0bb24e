"""A disk that fills up mid-run ends the run FAILED (exit 1) in one line saying why, with
state.json as last saved: no traceback, nothing lost that was saved (issue 12, item 10)."""

from __future__ import annotations

import errno
import json
import os
from collections import deque
from collections.abc import Callable
from pathlib import Path

import pytest

from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.application.records import RunRecord
from claudeloop.cli.bootstrap import runs as bootstrap
from claudeloop.domain.loop import Phase
from tests.application.fakes import FakeGateway, verdict_turn
from tests.cli.conftest import Invocation

Invoke = Callable[..., Invocation]


@pytest.fixture
def disk_fills_after(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """state.json can be saved N more times, then the disk is full (ENOSPC); the run's
    turns come from a fake gateway that never says done."""

    def fill_after(saves: int) -> None:
        left = [saves]
        save = RunDirectory.save

        def save_until_full(directory: RunDirectory, record: RunRecord) -> None:
            if left[0] == 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(directory.state_path))
            left[0] -= 1
            save(directory, record)

        monkeypatch.setattr(RunDirectory, "save", save_until_full)
        turns = deque([verdict_turn(remaining=("more",), summary="went on")] * 5)
        monkeypatch.setattr(bootstrap, "make_gateway", lambda *_, **__: FakeGateway(turns))

    return fill_after


def test_a_full_disk_mid_run_ends_it_failed_in_one_line(
    claudeloop: Invoke, tmp_path: Path, disk_fills_after: Callable[[int], None]
) -> None:
    # Saved: the new record, the run's start, turn 1 sent; then full after turn 1.
    disk_fills_after(3)
    result = claudeloop("run", "--prompt", "Write a.txt", "--cwd", tmp_path)
    assert result.exit_code == 1
    assert "Traceback" not in result.err
    lines = [line for line in result.err.splitlines() if "No space left on device" in line]
    assert len(lines) == 1, result.err
    assert lines[0].startswith("claudeloop: failed (exit 1): stopped by an I/O error")
    (run,) = (tmp_path / ".claudeloop" / "runs").iterdir()
    directory = RunDirectory(run)
    saved = directory.load()  # what was saved last is whole, and resume can read it
    assert saved.state.phase is Phase.RUNNING
    assert saved.state.ledger.attempts == 0
    assert "**failed**" in directory.summary_path.read_text()
    last = json.loads(directory.events_path.read_text().splitlines()[-1])
    assert (last["type"], last["outcome"], last["exit_code"]) == ("run.finished", "failed", 1)


def test_a_full_disk_mid_run_says_so_in_the_json_result(
    claudeloop: Invoke, tmp_path: Path, disk_fills_after: Callable[[int], None]
) -> None:
    disk_fills_after(3)
    result = claudeloop("run", "--prompt", "Write a.txt", "--cwd", tmp_path, "--json")
    assert result.exit_code == 1
    data = json.loads(result.out)
    assert data["outcome"] == "failed"
    assert data["exit_code"] == 1
    assert "No space left on device" in data["reason"]
    assert "Traceback" not in result.err


def test_a_disk_full_before_the_run_could_start_is_one_line(
    claudeloop: Invoke, tmp_path: Path, disk_fills_after: Callable[[int], None]
) -> None:
    disk_fills_after(0)
    result = claudeloop("run", "--prompt", "Write a.txt", "--cwd", tmp_path)
    assert result.exit_code == 2
    assert len(result.err.strip().splitlines()) == 1
    assert "No space left on device" in result.err
    assert "Traceback" not in result.err
    assert list((tmp_path / ".claudeloop" / "runs").iterdir()) == []  # no run to mistake
