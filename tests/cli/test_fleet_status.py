"""`status`, `logs`, `stop` and `wind-down` with --engine, as a user meets them on
another machine: a run of the fleet by its id from the record its worker stored, the
fleet as a table that fits 80 columns, and every mistake in one line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from claudeloop.adapters.fleet import run_archive
from claudeloop.adapters.fleet.engine import parse_engine
from claudeloop.adapters.fleet.leases import Leases
from claudeloop.adapters.fleet.queue import Order, add
from tests.cli.conftest import Invocation
from tests.cli.test_run_directory_commands import waiting_run
from tests.cli.test_user_errors import assert_one_line_error
from tests.postgres_server import PostgresServer

Invoke = Callable[..., Invocation]
RUN_ID = "20261130-090000-aaaaaa"


@pytest.fixture
def engine(tmp_path: Path) -> str:
    """A fleet with two runs: RUN_ID waiting on worker w1, its record stored by it on
    machine A, and `later`, queued."""
    url = f"sqlite:///{tmp_path / 'fleet' / 'fleet.sqlite'}"
    chosen = parse_engine(url, "test")
    machine_a = tmp_path / "machine-a"
    for run_id in (RUN_ID, "later"):
        add(chosen, run_id, Order(str(machine_a), ["PLAN.md"], account="0123456789abcdef"))
    directory = waiting_run(machine_a, RUN_ID)
    leases = Leases(chosen)
    try:
        leases.start("w1")
        epoch = leases.claim(RUN_ID, "w1")
        record = run_archive.pack_record(directory.path)
        leases.store(RUN_ID, epoch, "w1", phase="waiting", record=record, transcript=None)
    finally:
        leases.close()
    return url


def test_status_of_a_run_of_the_fleet_is_the_local_status_and_its_worker(
    claudeloop: Invoke, engine: str, tmp_path: Path
) -> None:
    shown = claudeloop("status", "--engine", engine, "--run-id", RUN_ID)
    assert shown.exit_code == 0, shown.err
    first = shown.out.splitlines()[0]
    assert first == f"run {RUN_ID}: waiting · worker w1 (running)"
    assert "next probe in" in shown.out
    # The instant as people read it (the tests run in UTC), not an ISO string.
    assert re.search(
        r"next probe in \d+m\d\ds \(at (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC\)", shown.out
    )
    assert "plan: 1/2 items done" in shown.out
    as_json = json.loads(claudeloop("status", "--engine", engine, "--run-id", RUN_ID, "--json").out)
    local = json.loads(claudeloop("status", "--cwd", tmp_path / "machine-a", "--json").out)
    assert set(as_json) == set(local) | {"state", "worker"}  # the same shape, and where
    assert (as_json["phase"], as_json["worker"], as_json["dollars"]) == ("waiting", "w1", 0.42)


def test_the_engine_from_the_variable_when_engine_has_no_url(
    claudeloop: Invoke, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDELOOP_ENGINE", engine)
    shown = claudeloop("status", "--engine", "--run-id", RUN_ID, "--json")
    assert shown.exit_code == 0, shown.err
    assert json.loads(shown.out)["worker"] == "w1"


def test_logs_of_a_run_of_the_fleet_are_its_stored_events(claudeloop: Invoke, engine: str) -> None:
    shown = claudeloop("logs", "--engine", engine, "--run-id", RUN_ID)
    assert shown.exit_code == 0, shown.err
    assert [line.split()[2] for line in shown.out.splitlines()] == ["run.started", "wait.started"]
    raw = claudeloop("logs", "--engine", engine, "--run-id", RUN_ID, "--json")
    assert [json.loads(line)["type"] for line in raw.out.splitlines()] == [
        "run.started",
        "wait.started",
    ]


def test_logs_of_a_queued_run_say_there_are_no_events_yet(claudeloop: Invoke, engine: str) -> None:
    # "later" is queued and never started: logs printed nothing, exit 0.
    shown = claudeloop("logs", "--engine", engine, "--run-id", "later")
    assert shown.exit_code == 0, shown.err
    assert shown.out == ""
    assert shown.err.strip() == "run later: queued, no events yet"


def test_status_of_the_fleet_lists_every_run_newest_first_within_80_columns(
    claudeloop: Invoke, engine: str
) -> None:
    shown = claudeloop("status", "--engine", engine)
    assert shown.exit_code == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0].split() == ["RUN", "STATE", "PLAN", "SPEND", "PROBE", "WORKER"]
    assert lines[1].split() == ["later", "queued", "-", "-", "-", "-"]
    cells = lines[2].split()
    assert cells[:4] == [RUN_ID, "waiting", "1/2", "$0.42"]
    assert cells[5] == "w1"
    assert all(len(line) <= 80 for line in lines)
    listed = json.loads(claudeloop("status", "--engine", engine, "--json").out)
    assert [run["run_id"] for run in listed["runs"]] == ["later", RUN_ID]
    assert listed["runs"][1]["plan"] == {"done": 1, "total": 2}
    assert listed["capacity"] == []  # SQLite: each machine's board is its own file


def test_a_run_the_engine_does_not_know_is_one_line_with_exit_2(
    claudeloop: Invoke, engine: str
) -> None:
    for command in ("status", "logs", "stop", "wind-down"):
        result = claudeloop(command, "--engine", engine, "--run-id", "nope")
        assert_one_line_error(result, "--run-id nope", "no such run in the fleet")


def test_status_of_a_queued_run_says_it_has_no_record_yet(claudeloop: Invoke, engine: str) -> None:
    shown = claudeloop("status", "--engine", engine, "--run-id", "later")
    assert shown.exit_code == 0, shown.err
    assert shown.out.strip() == "run later: queued, no record yet"


def test_stop_of_a_queued_run_says_it_is_not_running(claudeloop: Invoke, engine: str) -> None:
    result = claudeloop("stop", "--engine", engine, "--run-id", "later")
    assert_one_line_error(result, "run later is queued", "queue cancel later")


def test_an_unreachable_engine_is_one_line_with_exit_1_and_no_password(
    claudeloop: Invoke,
) -> None:
    url = "postgresql://fleet:hunter2@127.0.0.1:9/x"
    for argv in (["status"], ["status", "--run-id", RUN_ID], ["stop", "--run-id", RUN_ID]):
        result = claudeloop(*argv, "--engine", url)
        assert result.exit_code == 1
        (line,) = result.err.strip().splitlines()
        assert line.startswith("claudeloop: error: engine postgresql://fleet:***@127.0.0.1:9/x")
        assert "hunter2" not in result.err + result.out


def test_engine_wants_a_run_id_but_for_status_and_not_cwd_too(
    claudeloop: Invoke, engine: str, tmp_path: Path
) -> None:
    assert_one_line_error(claudeloop("logs", "--engine", engine), "--engine needs the run id")
    assert_one_line_error(
        claudeloop("status", "--engine", engine, "--cwd", tmp_path), "--cwd or --engine"
    )


def test_stop_and_wind_down_of_an_ended_run_say_it_has_ended(
    claudeloop: Invoke, engine: str
) -> None:
    from claudeloop.adapters.fleet.queue import cancel

    cancel(parse_engine(engine, "test"), "later")
    for command in ("stop", "wind-down"):
        result = claudeloop(command, "--engine", engine, "--run-id", "later")
        assert_one_line_error(result, "run later has ended (cancelled)", "nothing to")


def test_logs_follow_prints_each_event_once_and_follows_until_the_queue_says_it_ended(
    claudeloop: Invoke, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claudeloop.adapters.fleet.queue import cancel
    from claudeloop.adapters.run_directory import RunDirectory

    directory = RunDirectory(tmp_path / "machine-a" / ".claudeloop" / "runs" / RUN_ID)

    def finish() -> None:  # the worker stores the record once more: the run ended
        with directory.events_path.open("a") as handle:
            finished: dict[str, object] = {"ts": "2026-12-01T10:00:00+00:00", "run_id": RUN_ID}
            finished |= {"type": "run.finished", "outcome": "stopped", "exit_code": 130}
            handle.write(json.dumps(finished | {"reason": "stopped"}) + "\n")
        state = json.loads(directory.state_path.read_text())
        state["state"]["phase"] = "complete"
        directory.state_path.write_text(json.dumps(state))
        leases = Leases(parse_engine(engine, "test"))
        try:
            epoch = leases.stored(RUN_ID).epoch  # type: ignore[union-attr]
            packed = run_archive.pack_record(directory.path)
            leases.store(RUN_ID, epoch, "w1", phase="complete", record=packed, transcript=None)
        finally:
            leases.close()

    sleeps: list[float] = []

    def sleep(seconds: float) -> None:  # while `logs -f` waits, the fleet moves on
        sleeps.append(seconds)
        if len(sleeps) == 1:
            finish()  # a record that says ended, the queue not: handed back, say
        elif len(sleeps) == 2:
            cancel(parse_engine(engine, "test"), RUN_ID)  # now the queue says it ended
        assert len(sleeps) < 5, "still following a run the queue says has ended"

    monkeypatch.setattr("time.sleep", sleep)
    shown = claudeloop("logs", "--engine", engine, "--run-id", RUN_ID, "-f", "--json")
    assert shown.exit_code == 0, shown.err
    assert len(sleeps) == 2  # on past the ended record, and no further than the queue's end
    kinds = [json.loads(line)["type"] for line in shown.out.splitlines()]
    assert kinds == ["run.started", "wait.started", "run.finished"]


def test_status_of_a_fleet_on_postgresql_shows_each_accounts_capacity(
    claudeloop: Invoke, postgres_server: PostgresServer, tmp_path: Path
) -> None:
    import uuid
    from datetime import UTC, datetime, timedelta

    from claudeloop.adapters.fleet.queue import init_schema
    from claudeloop.domain.signals import TurnSignals
    from tests.fleet_boards import FleetBoards

    # A database of its own: DBOS's tables are in a schema of its own name.
    postgres_dsn = f"{postgres_server.dsn.rsplit('/', 1)[0]}/fleet_{uuid.uuid4().hex[:12]}"
    chosen = parse_engine(postgres_dsn, "test")
    init_schema(chosen)
    add(chosen, "r1", Order(str(tmp_path), ["PLAN.md"], account="0123456789abcdef"))
    workers = FleetBoards(postgres_dsn)
    board = workers.board("0123456789abcdef")
    try:
        board.publish(
            signals=TurnSignals(
                rate_limit_status="rejected",
                resets_at=datetime(2030, 1, 2, 3, 4, tzinfo=UTC),
            ),
            standing="closed",
            source="probe",
            writer="w1",
            now=datetime.now(UTC) - timedelta(hours=1),
        )
    finally:
        workers.close()
    shown = claudeloop("status", "--engine", postgres_dsn)
    assert shown.exit_code == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[1].split()[:2] == ["r1", "queued"]
    assert lines[3].split() == ["ACCOUNT", "CAPACITY", "SEEN", "BY", "RESETS"]
    cells = lines[4].split()
    assert cells[:2] == ["0123456789abcdef", "closed"]
    assert cells[4:] == ["probe", "2030-01-02", "03:04"]
    assert all(len(line) <= 80 for line in lines)
    listed = json.loads(claudeloop("status", "--engine", postgres_dsn, "--json").out)
    (account,) = listed["capacity"]
    assert (account["standing"], account["source"]) == ("closed", "probe")


@pytest.mark.slow
def test_looking_at_the_fleet_imports_neither_dbos_nor_sqlalchemy(engine: str) -> None:
    # DBOS costs every call half a second of importing, SQLAlchemy as much again: what
    # only reads the fleet (`status --engine`, a run's status, `queue ls`) reads its
    # tables on a plain connection.
    probe = (
        "import sys\n"
        "from claudeloop.cli.main import main\n"
        "url = sys.argv[1]\n"
        "for argv in (['status', '--engine', url, '--json'], ['queue', 'ls', '--engine', url],\n"
        f"             ['status', '--engine', url, '--run-id', '{RUN_ID}']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as ended:\n"
        "        assert not ended.code, argv\n"
        "print(sorted({'dbos', 'sqlalchemy'} & {m.split('.')[0] for m in sys.modules}))\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe, engine], capture_output=True, text=True, check=True
    )
    assert RUN_ID in shown.stdout
    assert shown.stdout.strip().splitlines()[-1] == "[]"
