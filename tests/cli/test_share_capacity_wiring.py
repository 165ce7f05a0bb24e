"""The composition root wraps the real gateway in the shared-capacity decorator when
`share_capacity` is on, with the account's board in the state directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.shared_capacity import FileCapacityBoard, SharedCapacityGateway
from claudeloop.adapters.shared_capacity.board import account_key
from claudeloop.application.records import RunSpec
from claudeloop.cli.bootstrap import Backend, make_gateway
from claudeloop.cli.configuration import configuration, shared_capacity_dir


def spec(tmp_path: Path) -> RunSpec:
    return RunSpec(cwd=tmp_path, task="t", plan_path=None, model="claude-sonnet-4-5")


def test_sharing_wraps_the_gateway_with_the_accounts_board(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "run-1")
    backend = Backend(env={"ANTHROPIC_API_KEY": "profile-key"})
    gateway = make_gateway(directory, spec(tmp_path), backend, tmp_path / "capacity")
    assert isinstance(gateway, SharedCapacityGateway)
    expected = account_key({**os.environ, "ANTHROPIC_API_KEY": "profile-key"}, "claude-sonnet-4-5")
    board = gateway._board
    assert isinstance(board, FileCapacityBoard)
    assert board.path == tmp_path / "capacity" / f"{expected}.json"


def test_without_a_directory_the_gateway_is_left_alone(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "run-1")
    gateway = make_gateway(directory, spec(tmp_path), Backend(env={}))
    assert not isinstance(gateway, SharedCapacityGateway)


def test_the_directory_follows_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDELOOP_STATE_DIR", str(tmp_path / "state"))
    assert shared_capacity_dir(configuration(tmp_path, {})) == tmp_path / "state" / "capacity"
    off = configuration(tmp_path, {"share_capacity": False})
    assert shared_capacity_dir(off) is None
