"""A reader that closes claudeloop's output early (`claudeloop logs | head -1`) ends the
command quietly, the same way for every command: no error, no traceback, exit 141 (how a
shell reports a program that SIGPIPE ended)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from claudeloop.adapters.fleet import run_archive
from claudeloop.adapters.fleet.engine import parse_engine
from claudeloop.adapters.fleet.leases import Leases
from claudeloop.adapters.fleet.queue import Order, add, init_schema
from tests.cli.test_run_directory_commands import waiting_run

# Each test starts claudeloop in a process of its own, closing its output: seconds each.
pytestmark = pytest.mark.slow

OUTPUT_CLOSED = 141


def closed_output(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """claudeloop ARGS writing to a pipe whose reader has already gone: the first write
    meets the closed pipe, however little the command prints."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CLAUDELOOP_")},
        "CLAUDELOOP_CONFIG_DIR": str(tmp_path / "user-config"),
        "CLAUDELOOP_STATE_DIR": str(tmp_path / "state"),
    }
    try:
        return subprocess.run(
            [sys.executable, "-m", "claudeloop", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


def a_run_with_many_events(cwd: Path, run_id: str = "20261130-090000-aaaaaa") -> Path:
    directory = waiting_run(cwd, run_id)
    line = json.dumps(
        {"ts": "2026-11-30T09:00:00+00:00", "run_id": run_id, "type": "plan.updated",
         "done": 1, "total": 2, "open": 1}
    )  # fmt: skip
    with directory.events_path.open("a") as handle:
        handle.write((line + "\n") * 5000)
    return directory.path


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("--version",),
        ("run", "--help"),
        ("logs",),
        ("logs", "--json"),
        ("status",),
        ("runs",),
        ("config", "show"),
    ],
    ids=" ".join,
)
def test_a_closed_output_ends_a_command_quietly(tmp_path: Path, args: tuple[str, ...]) -> None:
    a_run_with_many_events(tmp_path)
    cwd = ("--cwd", str(tmp_path)) if args[0] in ("logs", "status", "runs") else ()
    if args[0] == "config":
        cwd = ("--cwd", str(tmp_path))
    done = closed_output(tmp_path, *args, *cwd)
    assert (done.returncode, done.stderr) == (OUTPUT_CLOSED, "")


def test_a_closed_output_ends_the_logs_of_a_fleet_run_quietly(tmp_path: Path) -> None:
    engine = parse_engine(f"sqlite:///{tmp_path / 'fleet.sqlite'}", "test")
    init_schema(engine)
    add(engine, "r1", Order(str(tmp_path), ["PLAN.md"], account="0123456789abcdef"))
    leases = Leases(engine)
    try:
        leases.start("w1")
        epoch = leases.claim("r1", "w1")
        record = run_archive.pack_record(a_run_with_many_events(tmp_path / "machine", "r1"))
        leases.store("r1", epoch, "w1", phase="waiting", record=record, transcript=None)
    finally:
        leases.close()
    done = closed_output(tmp_path, "logs", "--engine", engine.url, "--run-id", "r1")
    assert (done.returncode, done.stderr) == (OUTPUT_CLOSED, "")
