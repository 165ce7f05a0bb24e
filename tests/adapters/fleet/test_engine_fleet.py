"""A run of the fleet from any machine, on SQLite and PostgreSQL: its stored record and
place in the queue by run id, the whole fleet newest first, a stop asked through the
engine reaching the worker that holds the run, and the capacity board's accounts."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from claudeloop.adapters.fleet import run_archive
from claudeloop.adapters.fleet.engine import Engine, parse_engine
from claudeloop.adapters.fleet.engine_fleet import EngineFleet
from claudeloop.adapters.fleet.leases import Leases
from claudeloop.adapters.fleet.queue import Order, add, init_schema
from claudeloop.adapters.fleet.worker import Drivers, WorkerSettings
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.control import steer_from_json, steer_to_json
from claudeloop.application.errors import UsageError
from claudeloop.application.fleet import look_up
from claudeloop.application.ports import Request
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.steering import AddNote, Cap, ProbeNow, RaiseCap
from tests.cli.test_run_directory_commands import waiting_run
from tests.postgres_server import PostgresServer


@pytest.fixture(scope="module")
def fleet_database(postgres_server: PostgresServer) -> str:
    """This process's fleet on PostgreSQL for the module: a database of its own, which
    set-up creates (DBOS keeps its tables in a schema of its own name, whatever the
    search path). Made once and emptied for each test: a database made and set up for
    each took the server 0.7 s of CPU, emptying it 0.2 s."""
    url = f"{postgres_server.dsn.rsplit('/', 1)[0]}/fleet_{uuid.uuid4().hex[:12]}"
    init_schema(parse_engine(url, "test"))
    return url


def emptied(url: str) -> None:
    """Every row of the fleet's tables gone, as in a database just set up; DBOS's
    record of the versions its tables are at kept. The next set-up makes again any
    table a test dropped."""
    with psycopg.connect(url, autocommit=True) as connection:
        # A connection an earlier test left in a transaction fails this test, not hangs it.
        connection.execute("SET lock_timeout = '10s'")
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables"
                " WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
                " AND tablename <> 'dbos_migrations'"
            )
        ]
        if tables:
            connection.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    if request.param == "sqlite":
        chosen = parse_engine(f"sqlite:///{tmp_path / 'fleet.sqlite'}", "test")
    else:
        url: str = request.getfixturevalue("fleet_database")
        emptied(url)
        chosen = parse_engine(url, "test")
    init_schema(chosen)
    return chosen


@pytest.fixture
def leases(engine: Engine) -> Iterator[Leases]:
    made = Leases(engine)
    made.ensure_schema()
    yield made
    made.close()


def queued(engine: Engine, run_id: str, cwd: Path) -> None:
    add(engine, run_id, Order(str(cwd), ["PLAN.md"], account="0123456789abcdef"))


def test_a_run_is_found_by_id_with_its_record_and_worker_and_the_fleet_lists_it(
    engine: Engine, leases: Leases, tmp_path: Path
) -> None:
    queued(engine, "r1", tmp_path)
    queued(engine, "r2", tmp_path)
    directory = waiting_run(tmp_path / "machine-a", "r1")
    leases.start("w1")
    epoch = leases.claim("r1", "w1")
    record = run_archive.pack_record(directory.path)
    leases.store("r1", epoch, "w1", phase="waiting", record=record, transcript=None)
    fleet = EngineFleet(engine)

    found = look_up(fleet, "r1")
    # The worker's claim is what says it runs the run.
    assert (found.worker, found.state, found.phase) == ("w1", "running", "waiting")
    assert found.stored is not None
    assert found.stored.record is not None
    assert found.stored.record.state.phase.value == "waiting"
    lines = fleet.event_lines("r1")
    assert any(b"wait.started" in line for line in lines)
    assert all(line.endswith(b"\n") for line in lines)

    never_started = look_up(fleet, "r2")
    assert never_started.stored is None
    assert fleet.event_lines("r2") == []
    with pytest.raises(UsageError, match="no such run"):
        look_up(fleet, "nope")

    assert [run.run_id for run in fleet.queue()] == ["r1", "r2"]  # oldest first
    assert set(fleet.summaries()) == {"r1"}


def test_the_overview_reads_the_summary_stored_with_the_record_and_sums_up_rows_of_before(
    engine: Engine, leases: Leases, tmp_path: Path
) -> None:
    directory = waiting_run(tmp_path / "machine-a", "r1")
    state = run_archive.read_state(directory.path)
    leases.start("w1")
    record = run_archive.pack_record(directory.path)
    for run_id in ("kept", "before"):
        epoch = leases.claim(run_id, "w1")
        summary = run_archive.summary_of(state) if run_id == "kept" else None
        leases.store(
            run_id, epoch, "w1", phase="waiting", record=record, transcript=None, summary=summary
        )
    summaries = EngineFleet(engine).summaries()
    kept, before = summaries["kept"], summaries["before"]
    assert kept == before  # a row stored before summaries were kept reads the same
    assert kept.summary is not None
    assert (kept.holder, kept.phase, kept.summary.phase) == ("w1", "waiting", "waiting")
    assert kept.summary.next_probe_at is not None  # it waits


def test_a_summary_this_claudeloop_cannot_read_is_said_unreadable(
    engine: Engine, leases: Leases, tmp_path: Path
) -> None:
    directory = waiting_run(tmp_path / "machine-a", "r1")
    leases.start("w1")
    epoch = leases.claim("r1", "w1")
    record = run_archive.pack_record(directory.path)
    leases.store(
        "r1", epoch, "w1", phase="waiting", record=record, transcript=None, summary='{"x": 1}'
    )
    assert EngineFleet(engine).summaries()["r1"].readable is False
    (directory.path / "state.json").write_text('{"version": "no"}')
    assert run_archive.summary_of(run_archive.read_state(directory.path)) is None
    leases.store(
        "r1",
        epoch,
        "w1",
        phase="waiting",
        record=run_archive.pack_record(directory.path),
        transcript=None,
        summary=None,
    )
    assert EngineFleet(engine).summaries()["r1"].readable is False


def test_a_record_this_claudeloop_cannot_read_is_said_unreadable_not_an_error(
    engine: Engine, leases: Leases, tmp_path: Path
) -> None:
    queued(engine, "r1", tmp_path)
    directory = waiting_run(tmp_path / "machine-a", "r1")
    (directory.path / "state.json").write_text('{"version": "no"}')
    leases.start("w1")
    epoch = leases.claim("r1", "w1")
    leases.store(
        "r1",
        epoch,
        "w1",
        phase="waiting",
        record=run_archive.pack_record(directory.path),
        transcript=None,
    )
    stored = EngineFleet(engine).stored("r1")
    assert stored is not None
    assert (stored.readable, stored.record, stored.holder) == (False, None, "w1")


def test_reading_a_fleet_never_set_up_makes_nothing(tmp_path: Path) -> None:
    file = tmp_path / "state" / "fleet.sqlite"
    fleet = EngineFleet(parse_engine(f"sqlite:///{file}", "test"))
    assert not fleet.exists()
    assert not file.exists()
    fleet.set_up()
    assert fleet.exists()


def test_a_stop_asked_reaches_the_worker_holding_the_run_and_is_gone_once_delivered(
    engine: Engine, leases: Leases
) -> None:
    for worker in ("w1", "w2"):
        leases.start(worker)
    leases.claim("r1", "w1")
    EngineFleet(engine).ask("r1", ControlCommand.STOP)
    assert leases.asked("w2", []).commands == []
    assert leases.asked("w1", []).commands == [("r1", "stop")]
    EngineFleet(engine).ask("r1", ControlCommand.WIND_DOWN)  # the last asked counts
    leases.delivered("r1", "stop")  # one delivered before: the newer stays
    assert leases.asked("w1", []).commands == [("r1", "wind-down")]
    leases.let_go("w1")
    leases.take_over("w1", "w2", 3_600_000)
    leases.claim("r1", "w2")  # taken over before it was delivered: the new holder's
    assert leases.asked("w2", []).commands == [("r1", "wind-down")]
    leases.delivered("r1", "wind-down")
    assert leases.asked("w2", []).commands == []


def test_a_worker_hears_in_one_look_which_of_its_runs_were_cancelled_and_what_was_asked(
    engine: Engine, leases: Leases, tmp_path: Path
) -> None:
    from claudeloop.adapters.fleet import queue

    for run_id in ("r1", "r2", "r3"):
        queued(engine, run_id, tmp_path)
    leases.start("w1")
    for run_id in ("r1", "r2"):
        leases.claim(run_id, "w1")
    queue.cancel(engine, "r2")
    queue.cancel(engine, "r3")  # cancelled, but not one this worker runs
    fleet = EngineFleet(engine)
    fleet.ask("r1", ControlCommand.STOP)
    fleet.steer("r1", AddNote("first"))
    fleet.steer("r2", AddNote("second"))
    asked = leases.asked("w1", ["r1", "r2"])
    assert asked.cancelled == ["r2"]
    assert asked.commands == [("r1", "stop")]
    assert [(run, steer_from_json(text)) for _, run, text in asked.requests] == [
        ("r1", AddNote("first")),
        ("r2", AddNote("second")),
    ]
    assert leases.asked("w1", ["r1"]).cancelled == []


def test_the_worker_writes_a_command_asked_into_the_control_file_of_a_run_it_drives(
    engine: Engine, leases: Leases, tmp_path: Path
) -> None:
    said: list[str] = []
    settings = WorkerSettings(engine, 1, 1, "w1", tmp_path)
    drivers = Drivers(said.append, {}, settings, leases)
    here = waiting_run(tmp_path / "app", "r1")
    drivers.places["r1"] = here.path
    delivered: list[tuple[str, str]] = []
    drivers.deliver(
        [("r1", "stop"), ("r2", "stop")], lambda run, command: delivered.append((run, command))
    )
    assert RunDirectory(here.path).pending() is ControlCommand.STOP
    assert delivered == [("r1", "stop")]  # r2's child has not started here: it waits
    assert said == ["run r1: asked to stop through the engine"]


def test_the_capacity_board_is_read_on_postgresql_and_is_none_on_sqlite(
    engine: Engine, leases: Leases
) -> None:
    if engine.kind == "sqlite":
        assert EngineFleet(engine).capacity() == []
        return
    from datetime import UTC, datetime, timedelta

    from claudeloop.domain.signals import TurnSignals
    from tests.fleet_boards import FleetBoards

    workers = FleetBoards(engine.url)
    board = workers.board("0123456789abcdef")
    resets = datetime.now(UTC) + timedelta(hours=1)
    try:
        board.publish(
            signals=TurnSignals(rate_limit_status="rejected", resets_at=resets),
            standing="closed",
            source="probe",
            writer="w1",
            now=datetime.now(UTC),
        )
    finally:
        workers.close()
    (sighting,) = EngineFleet(engine).capacity()
    assert (sighting.account, sighting.standing, sighting.source) == (
        "0123456789abcdef",
        "closed",
        "probe",
    )
    assert sighting.resets_at is not None
    assert abs(datetime.fromisoformat(sighting.resets_at) - resets) < timedelta(seconds=1)
    assert datetime.fromisoformat(sighting.at).utcoffset() == timedelta(0)


def test_requests_asked_reach_the_worker_holding_the_run_in_order_each_once(
    engine: Engine, leases: Leases
) -> None:
    for worker in ("w1", "w2"):
        leases.start(worker)
    leases.claim("r1", "w1")
    fleet = EngineFleet(engine)
    fleet.steer("r1", AddNote("use the staging db"))
    fleet.steer("r1", RaiseCap(Cap.TURNS, 40))
    assert leases.asked("w2", []).requests == []
    asked = leases.asked("w1", []).requests
    assert [steer_from_json(text) for _, _, text in asked] == [
        AddNote("use the staging db"),
        RaiseCap(Cap.TURNS, 40),
    ]
    leases.request_delivered(asked[0][0])
    assert [run for _, run, _ in leases.asked("w1", []).requests] == ["r1"]


def test_the_worker_writes_a_request_asked_into_the_control_file(
    engine: Engine, leases: Leases, tmp_path: Path
) -> None:
    said: list[str] = []
    settings = WorkerSettings(engine, 1, 1, "w1", tmp_path)
    drivers = Drivers(said.append, {}, settings, leases)
    here = waiting_run(tmp_path / "app", "r1")
    drivers.places["r1"] = here.path
    delivered: list[int] = []
    drivers.deliver_requests(
        [(1, "r1", steer_to_json(ProbeNow())), (2, "r1", '{"kind": "newer"}'), (3, "r2", "{}")],
        delivered.append,
    )
    assert RunDirectory(here.path).requests() == (Request(1, ProbeNow()),)
    assert delivered == [1, 2]  # a newer claudeloop's request is let go; r2 is not here
    assert said == ["run r1: passed a request on through the engine"]


def _states(engine: Engine) -> dict[str, tuple[str, str | None]]:
    return {run.run_id: (run.state, run.worker) for run in EngineFleet(engine).queue()}


def test_the_queue_says_each_state_a_worker_leaves_a_run_in(
    engine: Engine, leases: Leases, tmp_path: Path
) -> None:
    from claudeloop.adapters.fleet import queue

    for run_id in ("done", "exit3", "fails", "runs", "later", "cancelled"):
        queued(engine, run_id, tmp_path)
    leases.start("w1")
    for run_id in ("done", "exit3", "fails", "runs"):
        leases.claim(run_id, "w1")
    leases.ended("done", "w1", 0)
    leases.ended("exit3", "w1", 3)
    leases.ended("fails", "w1", None)
    queue.cancel(engine, "cancelled")
    assert _states(engine) == {
        "done": ("done", "w1"),
        "exit3": ("exit 3", "w1"),
        "fails": ("failed", "w1"),
        "runs": ("running", "w1"),
        "later": ("queued", None),
        "cancelled": ("cancelled", None),
    }
    found = queue.find(engine, "exit3")
    assert found is not None
    assert (found.state, found.cwd) == ("exit 3", str(tmp_path))
    assert queue.find(engine, "nothing") is None


def test_a_run_cancelled_is_never_started_and_its_end_does_not_undo_the_cancel(
    engine: Engine, leases: Leases, tmp_path: Path
) -> None:
    from claudeloop.adapters.fleet import queue
    from claudeloop.adapters.fleet.leases import Cancelled

    queued(engine, "waits", tmp_path)
    queued(engine, "runs", tmp_path)
    leases.start("w1")
    leases.claim("runs", "w1")
    queue.cancel(engine, "waits")
    queue.cancel(engine, "runs")
    # The engine may hand a cancelled run out (handed back meanwhile): it is not started.
    with pytest.raises(Cancelled):
        leases.claim("waits", "w1")
    leases.ended("runs", "w1", 143)  # its child stopped by the cancel
    assert _states(engine) == {"waits": ("cancelled", None), "runs": ("cancelled", "w1")}


def test_a_taken_over_workers_runs_are_queued_again_and_its_late_end_changes_nothing(
    engine: Engine, leases: Leases, tmp_path: Path
) -> None:
    queued(engine, "r1", tmp_path)
    leases.start("w1")
    leases.start("w2")
    leases.claim("r1", "w1")
    leases.let_go("w1")
    assert leases.take_over("w1", "w2", 3_600_000) == ["w1"]
    assert _states(engine) == {"r1": ("queued", None)}
    leases.claim("r1", "w2")
    leases.ended("r1", "w1", 0)  # the worker taken over, late
    assert _states(engine) == {"r1": ("running", "w2")}


def test_a_worker_claiming_a_run_its_queue_lacks_lists_it(engine: Engine, leases: Leases) -> None:
    """A run queued by a claudeloop of before, whose queue kept no row of it."""
    order = Order("/x", ["PLAN.md"], account="0123456789abcdef")
    leases.start("w1")
    leases.claim("old", "w1", json.dumps(order.to_json()), order.account)
    (listed,) = EngineFleet(engine).queue()
    assert (listed.run_id, listed.state, listed.cwd, listed.worker) == (
        "old",
        "running",
        "/x",
        "w1",
    )


def test_a_fleet_set_up_before_the_queue_was_kept_is_read_once_set_up_again(
    engine: Engine, leases: Leases, tmp_path: Path
) -> None:
    """Its runs are in the engine alone: reading says how to bring it up to date, and
    setting it up again copies them in, each in its state."""
    from claudeloop.adapters.fleet import queue

    queued(engine, "r1", tmp_path)
    queued(engine, "r2", tmp_path)
    queue.cancel(engine, "r2")
    with leases._begin() as c:  # as a claudeloop of before left it
        c.execute("DROP TABLE claudeloop_queue")
    before = EngineFleet(engine)
    with pytest.raises(UsageError, match="set up by an older claudeloop; `claudeloop fleet init"):
        before.queue()
    init_schema(engine)
    assert _states(engine) == {"r1": ("queued", None), "r2": ("cancelled", None)}
    assert {run.cwd for run in EngineFleet(engine).queue()} == {str(tmp_path)}


def test_a_worker_handed_a_cancelled_run_does_not_start_it(
    engine: Engine, leases: Leases, tmp_path: Path
) -> None:
    from claudeloop.adapters.fleet import queue

    queued(engine, "r1", tmp_path)
    queue.cancel(engine, "r1")
    said: list[str] = []
    leases.start("w1")
    drivers = Drivers(said.append, {}, WorkerSettings(engine, 1, 1, "w1", tmp_path), leases)
    code = drivers.drive("r1", Order(str(tmp_path), ["PLAN.md"], account="0123456789abcdef"))
    assert (code, said) == (130, ["run r1: cancelled before it started"])
    assert drivers.running() == []
    assert _states(engine) == {"r1": ("cancelled", None)}
