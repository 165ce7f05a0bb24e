"""The record a successor starts from, on SQLite and PostgreSQL: a save of a fleet-driven
run counts once the engine holds it, so a worker that dies the moment after its run
saved a turn's outcome leaves that turn (its count, its dollars) in the engine, never a
copy from before it."""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claudeloop.adapters.fleet import children, lease_file, record_sync, run_archive
from claudeloop.adapters.fleet.engine import parse_engine
from claudeloop.adapters.fleet.lease_file import FENCED_EXIT, write_lease
from claudeloop.adapters.fleet.leases import Leases
from claudeloop.adapters.fleet.queue import Order
from claudeloop.adapters.fleet.run_archive import pack_record, unpack_record
from claudeloop.adapters.fleet.worker import Drivers, WorkerSettings

# The child: a run that saves a turn in flight, then that turn's outcome, through the
# store a worker's run saves with, says so, and goes on (the worker dies meanwhile).
CHILD = """
import json, os, sys, time
from pathlib import Path
from claudeloop.adapters.fleet.lease_file import fenced_by_lease
from claudeloop.application.fleet_seat import take_fleet_seat
run = Path(sys.argv[2])
class Store:
    def save(self, record):
        run.mkdir(parents=True, exist_ok=True)
        (run / "state.json").write_text(json.dumps(record))
def record(turns, dollars, in_flight):
    state = {"phase": "running", "turns": turns, "attempts": 1, "dollars": dollars}
    return {"spec": {"cwd": sys.argv[3]}, "state": state, "turn_in_flight": in_flight}
store = fenced_by_lease(Store(), take_fleet_seat(os.environ))
store.save(record(0, 0.0, 1))
store.save(record(1, 0.25, None))
(run / "answered").write_text("turn 1")
time.sleep(600)
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.sqlite'}"
    return str(request.getfixturevalue("postgres_dsn"))


@pytest.fixture
def leases(engine_url: str) -> Iterator[Leases]:
    made = Leases(parse_engine(engine_url, "test"))
    made.ensure_schema()
    yield made
    made.close()


def test_a_worker_dying_right_after_its_run_saved_a_turn_leaves_that_turn_to_its_successor(
    engine_url: str, leases: Leases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker's half-second copy never comes round while the child lives: what the
    # engine holds is what the saves themselves put there.
    monkeypatch.setattr(children, "POLL_SECONDS", 3600.0)
    cwd = tmp_path / "project"
    run = cwd / ".claudeloop" / "runs" / "r1"
    monkeypatch.setattr(
        children,
        "child_command",
        lambda run_id, order, cwd: [sys.executable, "-c", CHILD, "run", str(run), str(cwd)],
    )
    cwd.mkdir()
    settings = WorkerSettings(parse_engine(engine_url, "test"), 1, 1, "w1", tmp_path / "state")
    settings.lease_file.parent.mkdir(parents=True)
    write_lease(settings.lease_file, time.time() + 600)
    leases.start("w1")
    said: list[str] = []
    drivers = Drivers(said.append, {}, settings, leases)
    ended: list[int] = []
    driving = threading.Thread(
        target=lambda: ended.append(drivers.drive("r1", Order(str(cwd), [], "a"))), daemon=True
    )
    driving.start()
    deadline = time.monotonic() + 60
    while not (run / "answered").exists():
        assert time.monotonic() < deadline, said
        time.sleep(0.01)
    try:
        # The worker dies here; its successor starts from the engine's copy.
        stored = leases.stored("r1")
        assert stored is not None
        assert stored.record is not None
        unpack_record(stored.record, tmp_path / "successor")
        start: dict[str, Any] = json.loads((tmp_path / "successor" / "state.json").read_text())
        assert start["state"]["turns"] == 1
        assert start["state"]["dollars"] == 0.25
        assert start["turn_in_flight"] is None
        assert stored.saved_by == "w1"
    finally:
        for pid in drivers.running_children():
            lease_file.stop_tree(pid)
        driving.join(timeout=30)
    assert ended == [-signal.SIGKILL]


# The child: what the run starts from, kept aside.
STARTS_FROM = """
import shutil, sys
from pathlib import Path
run = Path(sys.argv[2])
shutil.copy(run / "state.json", run / "started-from.json")
"""


def state(cwd: Path, turns: int) -> str:
    ledger = {"phase": "running", "turns": turns, "attempts": turns, "dollars": turns * 0.25}
    return json.dumps({"spec": {"cwd": str(cwd)}, "state": ledger, "turn_in_flight": None})


@pytest.mark.parametrize("turns", [(2, 1), (1, 2)], ids=["here-newer", "engine-newer"])
def test_a_successor_starts_from_the_newer_of_this_machines_record_and_the_engines(
    engine_url: str,
    leases: Leases,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    turns: tuple[int, int],
) -> None:
    """A save the child made whose store the worker did not live to make is on this
    machine only (the child, its link closed, stopped right after): a worker taking the
    run over here goes on from it rather than from the engine's older copy."""
    here, in_engine = turns
    cwd = tmp_path / "project"
    run = cwd / ".claudeloop" / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "state.json").write_text(state(cwd, here))
    (tmp_path / "stored").mkdir()
    (tmp_path / "stored" / "state.json").write_text(state(cwd, in_engine))
    leases.start("w0")
    epoch = leases.claim("r1", "w0")
    record = pack_record(tmp_path / "stored")
    leases.store("r1", epoch, "w0", phase="running", record=record, transcript=None)
    monkeypatch.setattr(
        children,
        "child_command",
        lambda run_id, order, cwd: [sys.executable, "-c", STARTS_FROM, "resume", str(run)],
    )
    settings = WorkerSettings(parse_engine(engine_url, "test"), 1, 1, "w1", tmp_path / "state")
    settings.lease_file.parent.mkdir(parents=True)
    write_lease(settings.lease_file, time.time() + 600)
    leases.start("w1")
    said: list[str] = []
    assert Drivers(said.append, {}, settings, leases).drive("r1", Order(str(cwd), [], "a")) == 0
    started = json.loads((run / "started-from.json").read_text())
    assert started["state"]["turns"] == max(here, in_engine)
    assert started["state"]["dollars"] == max(here, in_engine) * 0.25


def test_a_run_whose_worker_is_gone_stops_at_its_next_save(tmp_path: Path) -> None:
    """A child whose worker died (its end of the link closed) stops before its next
    turn: nothing it saved would reach a successor, which sends that turn itself."""
    write_lease(tmp_path / "w1.lease", time.time() + 600)
    script = textwrap.dedent(
        f"""
        import os, socket, subprocess, sys
        from claudeloop.adapters.fleet.lease_file import fenced_by_lease
        from claudeloop.application.fleet_seat import take_fleet_seat
        ours, theirs = socket.socketpair()
        ours.close()  # the worker, gone
        os.environ["CLAUDELOOP_FLEET_LEASE"] = {str(tmp_path / "w1.lease")!r}
        os.environ["CLAUDELOOP_FLEET_SYNC"] = str(theirs.detach())
        class Store:
            def save(self, record):
                open({str(tmp_path / "saved")!r}, "a").write("saved\\n")
        store = fenced_by_lease(Store(), take_fleet_seat(os.environ))
        assert "CLAUDELOOP_FLEET_SYNC" not in os.environ  # not passed on to the CLI
        store.save(None)
        sys.exit(0)
        """
    )
    ended = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=False
    )
    assert ended.returncode == FENCED_EXIT, ended.stderr
    assert "its worker is gone or no longer holds this run" in ended.stderr


def test_a_runs_copy_sends_what_grew_and_is_stored_whole_when_its_child_ends(
    engine_url: str, leases: Leases, tmp_path: Path
) -> None:
    """Each store sends the bytes events.jsonl and the transcript grew by, the state on
    its own; the engine's copy reads as the files do, and the last store compacts it."""
    cwd = tmp_path / "project"
    run = cwd / ".claudeloop" / "runs" / "r1"
    run.mkdir(parents=True)
    environ = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    record = {"spec": {"cwd": str(cwd)}, "session_id": "s1", "state": {"turns": 0}}
    (run / "state.json").write_text(json.dumps(record))
    (run / "events.jsonl").write_bytes(b'{"type": "run.started"}\n')
    transcript = run_archive.transcript_path(environ, cwd, "s1")
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(b'{"message": 1}\n')
    leases.start("w1")
    epoch = leases.claim("r1", "w1")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        copy = record_sync.RecordSync(
            leases, "w1", environ, print, run_id="r1", cwd=cwd, epoch=epoch, child=child
        )

        def chunks() -> int:
            with leases._db.begin() as c:
                return int(c.execute("SELECT count(*) FROM claudeloop_chunks").scalar_one())

        def engine_holds() -> tuple[bytes | None, bytes, bytes]:
            stored = leases.stored("r1")
            assert stored is not None
            assert stored.record is not None
            assert stored.transcript is not None
            return (
                run_archive.member_of(stored.record, "state.json"),
                run_archive.member_of(stored.record, "events.jsonl") or b"",
                gzip.decompress(stored.transcript),
            )

        assert copy.stored()  # the first store of a drive: whole
        assert chunks() == 0
        for turn in (1, 2):
            record["state"] = {"turns": turn}
            (run / "state.json").write_text(json.dumps(record))
            with (run / "events.jsonl").open("ab") as events:
                events.write(b'{"type": "turn.finished"}\n')
            with transcript.open("ab") as growing:
                growing.write(b'{"message": 2}\n')
            assert copy.stored()
        assert chunks() == 4  # each store: what each file grew by
        files = (
            (run / "state.json").read_bytes(),
            (run / "events.jsonl").read_bytes(),
            transcript.read_bytes(),
        )
        assert engine_holds() == files
        assert copy.compact()
        assert chunks() == 0
        assert engine_holds() == files
        # A file rewritten rather than grown (a takeover's paths made this machine's)
        # no longer ends where the engine's copy does: it is stored whole.
        transcript.write_bytes(files[2].replace(b"message", b"MESSAGE") + b'{"message": 3}\n')
        assert copy.stored()
        assert chunks() == 0
        assert engine_holds()[2] == transcript.read_bytes()
    finally:
        child.kill()
        child.wait()
