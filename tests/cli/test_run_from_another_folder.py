"""A run named from another folder: the machine's index of runs knows where it lives,
so `logs RUN`, `status RUN` and the rest act on it there, as with --cwd of its folder;
a run it does not know either is one line naming both places looked."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Invocation
from tests.cli.test_runs_all import registered

Invoke = Callable[..., Invocation]
RUN = "20261207-003052-d68394"


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run of tmp_path/app, and the person in tmp_path, its parent folder."""
    (tmp_path / "app").mkdir()
    registered(tmp_path / "app", RUN)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "app"


def test_logs_and_status_of_a_run_of_another_folder_find_it_through_the_index(
    claudeloop: Invoke, elsewhere: Path
) -> None:
    logs = claudeloop("logs", RUN)
    assert logs.exit_code == 0, logs.err
    assert [line.split()[2] for line in logs.out.splitlines()] == ["run.started", "wait.started"]
    assert (
        logs.err == f"claudeloop: run {RUN} is in {elsewhere} (from this machine's index of runs)\n"
    )
    status = claudeloop("status", RUN, "--json")
    assert status.exit_code == 0, status.err
    assert (json.loads(status.out)["run_id"], json.loads(status.out)["phase"]) == (RUN, "waiting")


def test_a_note_to_a_run_of_another_folder_is_refused_for_what_it_is_not_for_where(
    claudeloop: Invoke, elsewhere: Path
) -> None:
    result = claudeloop("note", RUN, "hello")
    assert result.exit_code == 2
    assert "no such run" not in result.err
    assert f"run {RUN} has no live driver" in result.err


def test_a_run_no_place_knows_is_one_line_naming_both_places_looked(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = claudeloop("logs", "20261207-000000-nope00")
    assert result.exit_code == 2
    assert result.err == (
        f"claudeloop: error: RUN 20261207-000000-nope00: no such run in {tmp_path}, nor in "
        "this machine's index of runs "
        "(`claudeloop runs --all` lists every run it knows)\n"
    )


def test_a_run_id_the_index_knows_in_two_folders_asks_for_the_folder(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for project in ("app", "api"):
        (tmp_path / project).mkdir()
        registered(tmp_path / project, RUN)
    monkeypatch.chdir(tmp_path)
    result = claudeloop("status", RUN)
    assert result.exit_code == 2
    (line,) = result.err.splitlines()
    assert f"knows runs of that id in {tmp_path / 'api'}, {tmp_path / 'app'}" in line
    assert line.endswith("name the folder with --cwd")


def test_a_run_of_this_folder_is_never_looked_for_elsewhere(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "app").mkdir()
    registered(tmp_path / "app", RUN)
    registered(tmp_path, RUN)  # the same id here too
    monkeypatch.chdir(tmp_path)
    result = claudeloop("status", RUN, "--json")
    assert result.exit_code == 0, result.err
    assert result.err == ""
