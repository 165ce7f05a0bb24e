"""The composition root wraps the real gateway in the shared-capacity decorator when
`share_capacity` is on, with the account's board in the state directory."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from claudeloop.adapters.claude_code.backend import Backend
from claudeloop.adapters.config.reading import configuration, shared_capacity_dir
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.shared_capacity import FileCapacityBoard, SharedCapacityGateway
from claudeloop.adapters.shared_capacity.board import account_key
from claudeloop.adapters.shared_capacity.board_link import LinkedCapacityBoard
from claudeloop.application.fleet_seat import NO_SEAT, FleetSeat
from claudeloop.application.records import RunSpec
from claudeloop.cli.bootstrap.runs import make_gateway


def spec(tmp_path: Path) -> RunSpec:
    return RunSpec(cwd=tmp_path, task="t", plan_path=None, model="claude-sonnet-4-5")


def test_sharing_wraps_the_gateway_with_the_accounts_board(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "run-1")
    backend = Backend(env={"ANTHROPIC_API_KEY": "profile-key"})
    gateway = make_gateway(directory, spec(tmp_path), backend, tmp_path / "capacity", seat=NO_SEAT)
    assert isinstance(gateway, SharedCapacityGateway)
    expected = account_key({**os.environ, "ANTHROPIC_API_KEY": "profile-key"}, "claude-sonnet-4-5")
    board = gateway._board
    assert isinstance(board, FileCapacityBoard)
    assert board.path == tmp_path / "capacity" / f"{expected}.json"
    # Its records name the run, so that the run's own earlier ones never hold it back.
    assert gateway.run_id == "run-1"


def test_without_a_directory_the_gateway_is_left_alone(tmp_path: Path) -> None:
    directory = RunDirectory.create(tmp_path, "run-1")
    gateway = make_gateway(directory, spec(tmp_path), Backend(env={}), seat=NO_SEAT)
    assert not isinstance(gateway, SharedCapacityGateway)


def test_the_directory_follows_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDELOOP_STATE_DIR", str(tmp_path / "state"))
    assert shared_capacity_dir(configuration(tmp_path, {})) == tmp_path / "state" / "capacity"
    off = configuration(tmp_path, {"share_capacity": False})
    assert shared_capacity_dir(off) is None


def test_a_run_a_fleet_worker_started_on_postgresql_shares_the_fleets_board(
    tmp_path: Path,
) -> None:
    ours, theirs = socket.socketpair()
    seat = FleetSeat(board=theirs.detach())
    directory = RunDirectory.create(tmp_path, "run-1")
    backend = Backend(env={"ANTHROPIC_API_KEY": "profile-key"})
    gateway = make_gateway(directory, spec(tmp_path), backend, tmp_path / "capacity", seat=seat)
    assert isinstance(gateway, SharedCapacityGateway)
    board = gateway._board
    assert isinstance(board, LinkedCapacityBoard)
    expected = account_key({**os.environ, "ANTHROPIC_API_KEY": "profile-key"}, "claude-sonnet-4-5")
    assert board.account == expected  # a fingerprint, never the key
    # A profile a limit policy switches to later shares the fleet's board too, through
    # the same link to the worker: the seat is handed to each gateway the run makes.
    detour = make_gateway(
        directory, spec(tmp_path), Backend(env={}), tmp_path / "capacity", seat=seat
    )
    assert isinstance(detour, SharedCapacityGateway)
    assert isinstance(detour._board, LinkedCapacityBoard)
    assert detour._board._link is board._link
    ours.close()
    assert board.read() is None  # the worker gone: no record, and no error


@pytest.mark.slow
def test_a_run_loads_no_database_driver_alone_or_in_a_fleet(tmp_path: Path) -> None:
    # A fleet's run reaches the board through its worker: no driver, no connection.
    probe = (
        "import socket, sys\n"
        "from pathlib import Path\n"
        "from claudeloop.adapters.run_directory import RunDirectory\n"
        "from claudeloop.application.records import RunSpec\n"
        "from claudeloop.application.fleet_seat import NO_SEAT, FleetSeat\n"
        "from claudeloop.adapters.claude_code.backend import Backend\n"
        "from claudeloop.cli.bootstrap.runs import make_gateway\n"
        "cwd = Path(sys.argv[1])\n"
        "spec = RunSpec(cwd=cwd, task='t', plan_path=None)\n"
        "directory = RunDirectory.create(cwd, 'run-1')\n"
        "ours, theirs = socket.socketpair()\n"
        "for seat in (NO_SEAT, FleetSeat(board=theirs.detach())):\n"
        "    made = make_gateway(directory, spec, Backend(env={}), cwd / 'capacity', seat=seat)\n"
        "    print(type(made._board).__name__)\n"
        "drivers = {'dbos', 'psycopg', 'sqlalchemy'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & drivers))\n"
    )
    environ = {k: v for k, v in os.environ.items() if k != "CLAUDELOOP_FLEET_BOARD"}
    shown = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        env=environ,
    )
    assert shown.stdout.split() == ["FileCapacityBoard", "LinkedCapacityBoard", "[]"]
