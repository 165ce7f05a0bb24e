"""The entry point takes a run's seat in a fleet (its lease, its link, its board) out of
the environment before any command runs, and hands it to the run: the Claude Code CLI
the run starts never inherits it, and a run no worker started watches no lease.

The CLI is a small executable of our own (CLAUDELOOP_CLI_PATH) that writes down the
environment it was given and fails: the run ends failed at its first turn."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from claudeloop.adapters.fleet.lease_file import SAVED, STORED, write_lease
from claudeloop.application.fleet_seat import SEAT_VARIABLES, FleetSeat
from tests.cli.conftest import Invocation

Invoke = Callable[..., Invocation]


@pytest.fixture
def fake_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "fake-claude"
    script.write_text('#!/bin/sh\nenv >> "$0.env"\nexit 1\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CLAUDELOOP_CLI_PATH", str(script))
    return script


def cli_environment(fake_cli: Path) -> str:
    """Every environment the CLI was started with (the login check's and the turn's)."""
    return fake_cli.with_name(fake_cli.name + ".env").read_text()


def lease_watchers() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name == "fleet-lease"]


def test_the_entry_point_takes_the_seat_out_of_the_environment_before_any_command(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seat = FleetSeat(lease=tmp_path / "w1.lease", sync=9, board=12)
    for name, value in seat.environment().items():
        monkeypatch.setenv(name, value)
    result = claudeloop("runs", "--cwd", tmp_path)
    assert result.exit_code == 0, result.err
    assert not set(SEAT_VARIABLES) & set(os.environ)
    assert lease_watchers() == []  # only a run the seat is handed to watches its lease


def test_a_run_no_worker_started_watches_no_lease(
    claudeloop: Invoke, fake_cli: Path, tmp_path: Path
) -> None:
    result = claudeloop("run", "--prompt", "hi", "--cwd", tmp_path, "--quiet")
    assert result.exit_code == 1, result.err  # the CLI could not start a session
    assert "PATH=" in cli_environment(fake_cli)  # the CLI was started
    assert lease_watchers() == []


@pytest.mark.slow
def test_a_workers_run_saves_through_its_seat_and_its_cli_never_sees_the_seat(
    fake_cli: Path, tmp_path: Path
) -> None:
    """In a process of its own, as a worker starts it: the lease it watches and the
    link its saves go through would outlive a test in this one."""
    write_lease(tmp_path / "w1.lease", time.time() + 600)
    ours, theirs = socket.socketpair()
    saves: list[bytes] = []

    def answer() -> None:  # the worker: each save stored in the engine at once
        while asked := ours.recv(1):
            saves.append(asked)
            ours.sendall(STORED)

    seat = FleetSeat(lease=tmp_path / "w1.lease", sync=theirs.fileno(), board=12)
    command = ["run", "--prompt", "hi", "--cwd", str(tmp_path), "--quiet", "--no-share-capacity"]
    with ours, theirs:
        answering = threading.Thread(target=answer, daemon=True)
        answering.start()
        ended = subprocess.run(
            [sys.executable, "-m", "claudeloop", *command],
            env={**os.environ, **seat.environment()},
            pass_fds=(theirs.fileno(),),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        theirs.close()  # the child's end is the child's alone now that it is gone
        answering.join(timeout=10)
    assert ended.returncode == 1, ended.stderr  # the CLI could not start a session
    assert len(saves) >= 1  # the run's saves reached its worker, each asked to store
    assert set(saves) == {SAVED}
    seen = cli_environment(fake_cli)
    assert "PATH=" in seen  # the CLI was started, and wrote what it was given
    for name in SEAT_VARIABLES:
        assert name not in seen
