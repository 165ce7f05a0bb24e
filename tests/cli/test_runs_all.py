"""`claudeloop runs --all`: every run started on this machine, from the index of runs."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_index import RunIndexDirectory
from claudeloop.application.ports import IndexedRun
from tests.cli.conftest import Invocation
from tests.cli.test_run_directory_commands import waiting_run
from tests.cli.test_user_errors import assert_one_line_error

Invoke = Callable[..., Invocation]


def registered(cwd: Path, run_id: str) -> None:
    directory = waiting_run(cwd, run_id)
    RunIndexDirectory.of_environment().register(
        IndexedRun(
            run_id=run_id,
            directory=directory.path,
            cwd=cwd,
            account=None,
            host="box",
            registered_at=datetime.strptime(run_id[:15], "%Y%m%d-%H%M%S").replace(tzinfo=UTC),
        )
    )


def test_every_run_of_every_directory_newest_first_and_a_gone_one_says_so(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    registered(tmp_path / "app", "20261130-090000-aaaaaa")
    registered(tmp_path / "api", "20261130-100000-bbbbbb")
    registered(tmp_path / "old", "20261130-110000-cccccc")
    shutil.rmtree(tmp_path / "old")
    result = claudeloop("runs", "--all")
    assert result.exit_code == 0, result.err
    # Each run's line; under it, indented, its times and why it stopped.
    lines = [line for line in result.out.strip().splitlines() if not line.startswith("  ")]
    assert lines[0].startswith("20261130-110000-cccccc  gone")
    assert lines[1].startswith("20261130-100000-bbbbbb  waiting")
    assert lines[1].endswith(str(tmp_path / "api"))
    assert lines[2].endswith(str(tmp_path / "app"))
    rows = json.loads(claudeloop("runs", "--all", "--json").out)
    assert [row["phase"] for row in rows] == ["gone", "waiting", "waiting"]


def test_no_runs_at_all_and_all_beside_cwd(claudeloop: Invoke, tmp_path: Path) -> None:
    assert claudeloop("runs", "--all").out.strip() == "no claudeloop runs started on this machine"
    assert_one_line_error(claudeloop("runs", "--all", "--cwd", tmp_path), "--all", "--cwd")
    assert os.environ["CLAUDELOOP_STATE_DIR"]


def test_what_is_shown_is_masked_by_the_runs_secrets(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-ant-api03-not-a-real-key-but-long-enough-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    registered(tmp_path / "app", "20261130-090000-aaaaaa")
    directory = RunDirectory(tmp_path / "app" / ".claudeloop" / "runs" / "20261130-090000-aaaaaa")
    record = directory.load()
    directory.save(replace(record, state=replace(record.state, reason=f"the key {secret} failed")))
    shown = claudeloop("runs", "--all", "--json").out
    assert secret not in shown
    reason = json.loads(shown)[0]["reason"]
    assert reason.startswith("the key ")
    assert reason.endswith(" failed")


def test_runs_columns_line_up_for_a_custom_run_id_and_a_gone_run(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    registered(tmp_path / "app", "20261130-090000-aaaaaa")
    waiting_run(tmp_path / "app", "nightly")
    mine = claudeloop("runs", "--cwd", tmp_path / "app")
    assert mine.exit_code == 0, mine.err
    lines = [line for line in mine.out.strip().splitlines() if not line.startswith("  ")]
    assert len(lines) == 2
    # The outcome and the turns start in the same column, whatever the run id's length.
    assert len({line.index("waiting") for line in lines}) == 1
    assert len({line.index("turns") for line in lines}) == 1

    registered(tmp_path / "old", "20261130-110000-cccccc")
    shutil.rmtree(tmp_path / "old")
    every = [
        line
        for line in claudeloop("runs", "--all").out.strip().splitlines()
        if not line.startswith("  ")
    ]
    gone = next(line for line in every if "gone" in line)
    waiting = next(line for line in every if "waiting" in line)
    # A gone run's short row keeps the columns: its outcome and its folder where the
    # others have theirs.
    assert gone.index("gone") == waiting.index("waiting")
    assert gone.index(str(tmp_path / "old")) == waiting.index(str(tmp_path / "app"))
