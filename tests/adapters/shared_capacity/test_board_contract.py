"""One contract for every capacity board: the file board of one machine and the
PostgreSQL board of a fleet (as a run reaches it, through its worker) behave alike
wherever the loops can tell."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

import pytest

from claudeloop.adapters.shared_capacity.board import FileCapacityBoard, account_key
from claudeloop.application.ports import CapacityBoard
from claudeloop.domain.signals import TurnSignals, WindowUsage
from tests.fleet_boards import FleetBoards

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
TOKEN = "sk-ant-oat01-very-secret-token-value"
CLOSED = TurnSignals(
    rate_limit_status="rejected",
    rate_limit_type="five_hour",
    resets_at=NOW + timedelta(hours=2),
    utilization=1.0,
    api_error_status=429,
    assistant_error="rate_limit",
    result_text="API Error: 429 rate limited\nsecond line is the model's business",
    is_error=True,
    windows=(WindowUsage("five_hour", 1.0, NOW + timedelta(hours=2), "rejected"),),
)

# (kind, where): a file board's directory or a PostgreSQL connection string. Plain
# strings, so a board can be made again in a forked process.
Location = tuple[str, str]
T = TypeVar("T")


# The workers serving the runs' boards made in this process, by connection string:
# closed when the test ends (a forked process's end with it).
_WORKERS: dict[tuple[int, str], FleetBoards] = {}


def open_board(location: Location, account: str = "acct") -> CapacityBoard:
    """A board of `location`; on PostgreSQL, a run's on a worker of its own."""
    kind, where = location
    if kind == "file":
        return FileCapacityBoard(Path(where), account)
    workers = _WORKERS.setdefault((os.getpid(), where), FleetBoards(where))
    return workers.board(account)


@pytest.fixture(params=["file", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Location]:
    if request.param == "file":
        yield ("file", str(tmp_path / "capacity"))
        return
    dsn = str(request.getfixturevalue("postgres_dsn"))
    yield ("postgresql", dsn)
    workers = _WORKERS.pop((os.getpid(), dsn), None)
    if workers is not None:
        workers.close()


@pytest.fixture
def board(location: Location) -> CapacityBoard:
    return open_board(location)


def publish(
    board: CapacityBoard,
    signals: TurnSignals = CLOSED,
    writer: str = "w",
    unless: Callable[..., bool] = lambda _current: False,
) -> int:
    written = board.publish(
        signals=signals, standing="closed", source="turn", writer=writer, now=NOW, unless=unless
    )
    assert written is not None
    return written.seq


def test_no_record_reads_as_none(board: CapacityBoard) -> None:
    assert board.read() is None


def test_a_record_reads_back_with_an_errors_first_line_only(board: CapacityBoard) -> None:
    assert publish(board) == 1
    sighting = board.read()
    assert sighting is not None
    assert (sighting.seq, sighting.writer, sighting.source, sighting.standing) == (
        1,
        "w",
        "turn",
        "closed",
    )
    assert sighting.at.utcoffset() is not None
    assert sighting.signals == replace(CLOSED, result_text="API Error: 429 rate limited")


def test_each_publication_takes_the_next_sequence_number(board: CapacityBoard) -> None:
    assert [publish(board) for _ in range(3)] == [1, 2, 3]


def test_accounts_keep_apart(location: Location) -> None:
    one, other = open_board(location, "one"), open_board(location, "other")
    publish(one)
    publish(one)
    assert other.read() is None
    assert publish(other) == 1
    latest = one.read()
    assert latest is not None
    assert latest.seq == 2


def test_unless_keeps_the_current_record(board: CapacityBoard) -> None:
    publish(board)
    kept = board.publish(
        signals=TurnSignals(),
        standing="open",
        source="turn",
        writer="other",
        now=NOW,
        unless=lambda current: current is not None and current.standing == "closed",
    )
    assert kept is None
    current = board.read()
    assert current is not None
    assert (current.seq, current.standing) == (1, "closed")


def test_a_successs_result_text_is_not_kept(board: CapacityBoard) -> None:
    board.publish(
        signals=TurnSignals(result_text="the model's work, which is no one else's business"),
        standing="open",
        source="turn",
        writer="w",
        now=NOW,
    )
    sighting = board.read()
    assert sighting is not None
    assert sighting.signals.result_text == ""


def test_the_probe_lock_is_held_by_one_holder_at_a_time(location: Location) -> None:
    board, other = open_board(location), open_board(location)
    first = board.try_probe_lock()
    assert first is not None
    assert other.try_probe_lock() is None
    assert board.try_probe_lock() is None
    first.release()
    first.release()  # twice is harmless
    second = other.try_probe_lock()
    assert second is not None
    second.release()


def test_the_probe_locks_of_two_accounts_are_apart(location: Location) -> None:
    one = open_board(location, "one").try_probe_lock()
    other = open_board(location, "other").try_probe_lock()
    assert one is not None
    assert other is not None
    one.release()
    other.release()


def _hold_probe_lock(location: Location, ready: multiprocessing.synchronize.Event) -> None:
    lock = open_board(location).try_probe_lock()
    assert lock is not None
    ready.set()
    signal.pause()


def test_a_dead_holders_probe_lock_is_free(location: Location) -> None:
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    holder = context.Process(target=_hold_probe_lock, args=(location, ready))
    holder.start()
    try:
        assert ready.wait(20)
        assert open_board(location).try_probe_lock() is None
    finally:
        holder.kill()
        holder.join(10)
    # The kernel (file) or the server (a closed connection) lets go of a dead holder's
    # lock; the server may take a moment to notice the connection is gone.
    lock = _eventually(lambda: open_board(location).try_probe_lock())
    assert lock is not None
    lock.release()


def _publish_many(location: Location, writer: str, count: int, patience: float) -> list[int]:
    board = open_board(location)
    seqs = []
    for _ in range(count):
        written = board.publish(
            signals=CLOSED,
            standing="closed",
            source="probe",
            writer=writer,
            now=NOW,
            patience=patience,
        )
        assert written is not None
        seqs.append(written.seq)
    return seqs


def _report(child: Callable[..., object], args: tuple[object, ...], said: Connection) -> None:
    """Run `child(*args)` and send what came of it: ("returned", its value) or
    ("raised", its traceback)."""
    try:
        outcome: tuple[str, object] = ("returned", child(*args))
    except BaseException:  # whatever it was, the test says it
        outcome = ("raised", traceback.format_exc())
    said.send(outcome)
    said.close()


def _in_children(calls: list[tuple[Callable[..., object], tuple[object, ...]]]) -> list[Any]:
    """Each call run in a forked process of its own, at once; what each returned, once
    every process has ended. A process that raised, or ended without a word (killed),
    fails the test saying so: its traceback, or how it ended."""
    context = multiprocessing.get_context("fork")
    children = []
    for child, args in calls:
        heard, said = context.Pipe(duplex=False)
        process = context.Process(target=_report, args=(child, args, said))
        process.start()
        said.close()  # this end is the child's: its end reads as EOF once it is gone
        children.append((process, heard))
    outcomes = []
    for process, heard in children:
        try:
            outcome = heard.recv()  # its word, or EOF as it ends without one
        except EOFError:
            outcome = None
        process.join()
        outcomes.append((process, outcome))
    returned = []
    for process, outcome in outcomes:
        if outcome is None:
            pytest.fail(f"{process.name} ended with exit code {process.exitcode}, saying nothing")
        said_how, what = outcome
        if said_how == "raised":
            pytest.fail(f"{process.name} raised:\n{what}")
        assert process.exitcode == 0
        returned.append(what)
    return returned


# How long each writer below waits for its turn at the record. Each publishes back to
# back, so one may wait out most of the other's publications: on PostgreSQL a run
# whose worker found the record moved goes round again, and under load 20 one lost 20
# rounds in a row in 7 of 400 runs (the row lock itself was held 0.3 s at most, far
# within a loop's own patience, LOCK_PATIENCE_SECONDS). A loop publishes once a turn
# or a probe; the test asks whether any update is lost, not how fast a writer gets in.
WRITERS_PATIENCE = 60.0


def test_two_processes_publishing_at_once_lose_no_update(location: Location) -> None:
    count = 40
    seqs = _in_children(
        [(_publish_many, (location, name, count, WRITERS_PATIENCE)) for name in ("a", "b")]
    )
    # Under the lock every publication read its predecessor: no number twice, none lost.
    assert sorted(seqs[0] + seqs[1]) == list(range(1, 2 * count + 1))
    final = open_board(location).read()
    assert final is not None
    assert final.seq == 2 * count


def test_a_writer_gives_up_on_a_record_another_writer_keeps_locked(
    postgres_dsn: str, fleet_boards: FleetBoards
) -> None:
    # The file board's side of this is in test_board.py (a process holding its flock).
    import psycopg

    from claudeloop.adapters.shared_capacity.board import BoardBusy

    board = fleet_boards.board()
    publish(board)
    with psycopg.connect(postgres_dsn) as holder, holder.transaction():
        holder.execute("SELECT 1 FROM claudeloop_capacity WHERE account = 'acct' FOR UPDATE")
        with pytest.raises(BoardBusy, match="locked by another writer"):
            board.publish(
                signals=CLOSED, standing="closed", source="turn", writer="w", now=NOW, patience=0
            )
    # The holder gone, the record is the next writer's.
    assert publish(board) == 2


def test_a_waiter_hears_of_the_next_publication_from_another_loop(location: Location) -> None:
    waiter, publisher = open_board(location), open_board(location)
    publish(publisher)
    heard: list[int | None] = []

    def wait() -> None:
        news = waiter.wait_for_news(after_seq=1, timeout=30)
        heard.append(news.seq if news is not None else None)

    listening = threading.Thread(target=wait)
    listening.start()
    publish(publisher, writer="prober")
    listening.join(40)
    assert heard == [2]


def test_with_no_news_a_waiter_gives_up_at_its_timeout(board: CapacityBoard) -> None:
    publish(board)
    assert board.wait_for_news(after_seq=1, timeout=0.3) is None
    news = board.wait_for_news(after_seq=0, timeout=0.3)
    assert news is not None
    assert news.seq == 1


def test_the_record_holds_no_credential(location: Location) -> None:
    key = account_key({"CLAUDE_CODE_OAUTH_TOKEN": TOKEN}, "claude-sonnet-4-5")
    board = open_board(location, key)
    publish(board)
    sighting = board.read()
    assert sighting is not None
    assert TOKEN not in repr(sighting)
    assert TOKEN not in key


def _eventually(attempt: Callable[[], T | None], tries: int = 50) -> T | None:
    for _ in range(tries):
        got = attempt()
        if got is not None:
            return got
        threading.Event().wait(0.1)
    return None


def _publish_and_exit(location: Location) -> int:
    written = open_board(location).publish(
        signals=CLOSED, standing="closed", source="turn", writer="gone", now=NOW, run_id="run-a"
    )
    assert written is not None
    return os.getpid()


def test_a_record_says_which_run_wrote_it_and_whether_its_process_still_runs(
    location: Location,
) -> None:
    board = open_board(location)
    written = board.publish(
        signals=CLOSED, standing="closed", source="turn", writer="w", now=NOW, run_id="run-b"
    )
    assert written is not None
    read = board.read()
    assert read is not None
    assert (read.run_id, read.writer) == ("run-b", "w")
    assert board.writer_alive(read) is True  # this very process
    # A driver that published and is gone: its record says so to whoever reads it.
    (gone,) = _in_children([(_publish_and_exit, (location,))])  # its pid, and it ended
    # On PostgreSQL a run reads what its worker's LISTEN keeps: another process's
    # publication is read once it is announced, a moment after.
    left = board.read()
    deadline = time.monotonic() + 10
    while (left is None or left.seq == read.seq) and time.monotonic() < deadline:
        time.sleep(0.05)
        left = board.read()
    assert left is not None
    assert (left.run_id, left.pid) == ("run-a", gone)
    assert board.writer_alive(left) is False


def test_of_a_process_on_another_machine_nothing_is_known(location: Location) -> None:
    board = open_board(location)
    publish(board)
    read = board.read()
    assert read is not None
    elsewhere = replace(read, host="another-machine", pid=2**22 + 12345)
    assert board.writer_alive(elsewhere) is None


def test_a_table_an_older_version_made_gains_who_wrote_a_record(
    postgres_dsn: str, fleet_boards: FleetBoards
) -> None:
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as older:
        older.execute(
            "CREATE TABLE claudeloop_capacity (account text PRIMARY KEY, seq bigint NOT NULL,"
            " at timestamptz NOT NULL, pid integer NOT NULL, writer text NOT NULL,"
            " source text NOT NULL, standing text NOT NULL, signals jsonb NOT NULL)"
        )
        older.execute(
            "INSERT INTO claudeloop_capacity VALUES ('acct', 7, now(), 4242, '4242:ab',"
            " 'turn', 'closed', '{}')"
        )
    board = fleet_boards.board()
    before = board.read()
    assert before is not None
    # A record of old names no run and no machine: nothing is known of its process.
    assert (before.seq, before.run_id, before.host) == (7, None, None)
    assert board.writer_alive(before) is None
    written = board.publish(
        signals=CLOSED, standing="closed", source="probe", writer="w", now=NOW, run_id="run-c"
    )
    assert written is not None
    assert (written.seq, written.run_id, written.pid) == (8, "run-c", os.getpid())
    assert board.writer_alive(written) is True
