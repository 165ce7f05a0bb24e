"""A worker's runs forked from its fork server: each a process of its own with the
run's folder, environment, descriptors and exit code, and nothing of the worker's
environment the runs must not see."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from claudeloop.adapters.fleet.children import child_environment
from claudeloop.adapters.fleet.engine import ENGINE_VARIABLE
from claudeloop.adapters.fleet.forks import ForkServer

RUN = "tests.adapters.fleet.forked_run"

# Each server imports the SDK once: a second or two of CPU.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    # The runs' environment: the worker's own holds the engine's URL besides.
    started = ForkServer({**os.environ, "PYTHONPATH": str(Path.cwd())})
    yield started
    started.close()


def report(path: Path) -> dict[str, object]:
    while not path.exists() or not path.read_text():
        threading.Event().wait(0.02)
    return dict(json.loads(path.read_text()))


def test_a_forked_run_has_its_folder_environment_descriptor_and_exit_code(
    server: ForkServer, tmp_path: Path
) -> None:
    ours, theirs = socket.socketpair()
    said = tmp_path / "said.json"
    env = {"PATH": os.environ["PATH"], "RUN_ONLY": "yes"}
    with theirs:
        run = server.start(
            [sys.executable, "-m", RUN, str(said), "3"],
            env=env,
            cwd=tmp_path,
            told={"CLAUDELOOP_FLEET_SYNC": theirs.fileno()},
        )
    assert run is not None
    assert run.wait(timeout=60) == 3
    assert run.poll() == 3
    assert ours.recv(1) == b"!"  # through the descriptor it was told
    seen = report(said)
    assert seen["cwd"] == str(tmp_path)
    told = seen["env"]
    assert isinstance(told, dict)
    assert told.pop("CLAUDELOOP_FLEET_SYNC").isdigit()
    assert told == env
    assert seen["argv"][1:] == [str(said), "3"]  # type: ignore[index]


def test_a_forked_run_hears_its_signals_and_the_server_outlives_a_stop_of_the_group(
    server: ForkServer, tmp_path: Path
) -> None:
    said = tmp_path / "said.json"
    run = server.start(
        [sys.executable, "-m", RUN, str(said), "-1"], env=dict(os.environ), cwd=tmp_path
    )
    assert run is not None
    report(said)  # it runs
    with pytest.raises(subprocess.TimeoutExpired):  # as Popen's wait says it
        run.wait(timeout=0)
    # A stop of the worker's whole process group reaches the server too: it stays.
    assert server.pid is not None
    os.kill(server.pid, signal.SIGTERM)
    run.send_signal(signal.SIGTERM)
    assert run.wait(timeout=60) == 143
    again = server.start(
        [sys.executable, "-m", RUN, str(tmp_path / "again.json"), "0"],
        env=dict(os.environ),
        cwd=tmp_path,
    )
    assert again is not None
    assert again.wait(timeout=60) == 0


def test_a_run_whose_folder_is_gone_is_refused_as_popen_would(
    server: ForkServer, tmp_path: Path
) -> None:
    with pytest.raises(OSError, match="No such file or directory") as refused:
        server.start([sys.executable, "-m", RUN, "x", "0"], env={}, cwd=tmp_path / "gone")
    assert refused.value.strerror == "No such file or directory"
    # What it cannot fork is the caller's to start afresh.
    assert server.start([sys.executable, "script.py"], env={}, cwd=tmp_path) is None
    assert server.start([sys.executable, "-m", RUN, "x" * 300_000], env={}, cwd=tmp_path) is None


def test_neither_the_server_nor_its_runs_hold_the_workers_secret_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker's environment holds the engine's URL, as the worker wires the server.
    monkeypatch.setenv(ENGINE_VARIABLE, "postgresql://fleet:s3cret@db/x")
    runs = {**child_environment(os.environ), "PYTHONPATH": str(Path.cwd())}
    server = ForkServer(runs)
    try:
        said = tmp_path / "said.json"
        run = server.start([sys.executable, "-m", RUN, str(said), "-1"], env=runs, cwd=tmp_path)
        assert run is not None
        report(said)
        # A forked process keeps its parent's initial environment block: the server's.
        for pid in (server.pid, run.pid):
            assert pid is not None
            assert b"s3cret" not in Path(f"/proc/{pid}/environ").read_bytes()
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=60) == 143
    finally:
        server.close()


def test_a_closed_server_ends_and_a_run_asked_after_is_left_to_start_afresh(
    tmp_path: Path,
) -> None:
    server = ForkServer({**os.environ, "PYTHONPATH": str(Path.cwd())})
    assert server.pid is None  # nothing started until a run is asked for
    said = tmp_path / "said.json"
    run = server.start(
        [sys.executable, "-m", RUN, str(said), "-1"], env=dict(os.environ), cwd=tmp_path
    )
    assert run is not None
    report(said)
    pid = server.pid
    assert pid is not None
    server.close()
    with pytest.raises(ProcessLookupError):  # ended, and waited for
        os.kill(pid, 0)
    assert run.poll() is None  # the run it forked goes on
    assert server.start([sys.executable, "-m", RUN, "x", "0"], env={}, cwd=tmp_path) is None
    os.kill(run.pid, signal.SIGTERM)
