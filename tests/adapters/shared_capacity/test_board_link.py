"""A fleet's runs reach the capacity board through their worker, on a real PostgreSQL:
the worker's one connection serves all its runs, a probe right held by a run is its
alone and ends with it, calls of several threads share a run's link, and a worker or
database gone is no run's failure (the contract every board keeps is in
test_board_contract.py)."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime

import psycopg
import pytest

from claudeloop.adapters.shared_capacity import board_link
from claudeloop.adapters.shared_capacity.board_link import (
    BoardLink,
    BoardRelay,
    LinkedCapacityBoard,
)
from claudeloop.adapters.shared_capacity.postgres_board import PostgresBoards
from claudeloop.adapters.shared_capacity.record import BoardBusy, sighting_to_json
from claudeloop.application.ports import Sighting
from claudeloop.domain.signals import TurnSignals
from tests.fleet_boards import FleetBoards

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


def _connections(dsn: str) -> set[int]:
    """The client sessions of this test's database but this look's own, by process id:
    a session an earlier test closed may still be ending, so a test counts the ones
    that are new. The server is the whole run's: other workers' tests, each in a
    database of its own, connect to it meanwhile."""
    with psycopg.connect(dsn, autocommit=True) as looking:
        rows = looking.execute(
            "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'"
            " AND datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return {int(row[0]) for row in rows}


def _publish(board: LinkedCapacityBoard, writer: str = "w") -> int:
    written = board.publish(
        signals=TurnSignals(), standing="open", source="turn", writer=writer, now=NOW
    )
    assert written is not None
    return written.seq


def test_the_runs_of_a_worker_share_its_one_connection(
    postgres_dsn: str, fleet_boards: FleetBoards
) -> None:
    before = _connections(postgres_dsn)
    run = fleet_boards.worker()
    runs = [run("acct") for _ in range(6)]
    _publish(runs[0])
    assert all(each.read() is not None for each in runs)
    lock = runs[1].try_probe_lock()
    assert lock is not None
    waiting = [threading.Thread(target=each.wait_for_news, args=(99, 2.0)) for each in runs[2:]]
    for thread in waiting:
        thread.start()
    time.sleep(0.5)  # the waits are in the worker's hands: its LISTEN is open
    assert len(_connections(postgres_dsn) - before) == 1  # one session, which listens; no run's
    for thread in waiting:
        thread.join(10)
    lock.release()


def test_a_runs_probe_right_is_refused_to_the_workers_other_runs_and_ends_with_the_run(
    fleet_boards: FleetBoards,
) -> None:
    run = fleet_boards.worker()
    holder, other = run("acct"), run("acct")
    elsewhere = fleet_boards.board("acct")  # a run of another worker
    held = holder.try_probe_lock()
    assert held is not None
    assert other.try_probe_lock() is None
    assert holder.try_probe_lock() is None  # not twice, by the holder either
    assert elsewhere.try_probe_lock() is None
    assert run("other-account").try_probe_lock() is not None  # accounts keep apart
    # The holding run ends however it ends (its end of the link closes): the worker
    # lives on and gives up what it held for it.
    holder._link._socket.shutdown(socket.SHUT_RDWR)
    deadline = time.monotonic() + 10
    taken = None
    while taken is None and time.monotonic() < deadline:
        taken = other.try_probe_lock()
        time.sleep(0.05)
    assert taken is not None
    assert elsewhere.try_probe_lock() is None
    taken.release()
    again = elsewhere.try_probe_lock()
    assert again is not None
    again.release()


def test_calls_of_several_threads_share_a_runs_link(fleet_boards: FleetBoards) -> None:
    board = fleet_boards.board("acct")
    publisher = fleet_boards.board("acct")
    _publish(publisher)
    heard: dict[str, int | None] = {}

    def wait(name: str, timeout: float) -> None:
        news = board.wait_for_news(1, timeout)
        heard[name] = news.seq if news is not None else None

    # A long wait and a short one of the same run, and its reads meanwhile.
    long, short = (threading.Thread(target=wait, args=a) for a in (("long", 30), ("short", 0.3)))
    long.start()
    short.start()
    short.join(15)
    assert heard == {"short": None}
    latest = board.read()
    assert latest is not None
    assert latest.seq == 1
    assert _publish(publisher, "prober") == 2
    long.join(15)
    assert heard == {"short": None, "long": 2}


def test_a_run_whose_worker_is_gone_goes_on_alone() -> None:
    ours, theirs = socket.socketpair()
    board = LinkedCapacityBoard(BoardLink(theirs.detach()), "acct")
    ours.close()
    assert board.read() is None
    assert board.wait_for_news(0, 30) is None  # at once: no one is there to answer
    with pytest.raises(OSError, match="worker does not answer"):
        _publish(board)
    with pytest.raises(OSError, match="worker does not answer"):
        board.try_probe_lock()


def test_a_worker_whose_database_is_away_answers_no_record_and_refuses_writes() -> None:
    relay = BoardRelay(PostgresBoards("postgresql://nobody@127.0.0.1:9/fleet?connect_timeout=2"))
    ours, theirs = socket.socketpair()
    relay.serve(ours, "run")
    board = LinkedCapacityBoard(BoardLink(theirs.detach()), "acct")
    try:
        assert board.read() is None
        with pytest.raises(OSError, match="capacity board"):
            _publish(board)
        with pytest.raises(OSError, match="capacity board"):
            board.try_probe_lock()
        assert board.wait_for_news(0, 0.5) is None
    finally:
        relay.close()


def test_a_runs_wait_ends_at_a_publication_of_another_run_of_its_worker(
    fleet_boards: FleetBoards,
) -> None:
    # The NOTIFY of a publication comes back to the worker's own session, the one that
    # listens: the wait of its other run ends all the same.
    run = fleet_boards.worker()
    waiter, sibling = run("acct"), run("acct")
    assert _publish(sibling) == 1
    heard: list[int | None] = []

    def wait() -> None:
        news = waiter.wait_for_news(1, 30)
        heard.append(news.seq if news is not None else None)

    waiting = threading.Thread(target=wait)
    waiting.start()
    time.sleep(0.3)  # the wait is in the worker's hands
    assert _publish(sibling, "prober") == 2
    waiting.join(15)
    assert heard == [2]


class _CountedBoards(PostgresBoards):
    """A worker's real board that counts what it reads from the database."""

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self.reads = 0

    def read(self, account: str) -> Sighting | None:
        self.reads += 1
        return super().read(account)


def _until_read(board: LinkedCapacityBoard, seq: int) -> Sighting | None:
    deadline = time.monotonic() + 10
    latest = board.read()
    while (latest is None or latest.seq != seq) and time.monotonic() < deadline:
        time.sleep(0.05)
        latest = board.read()
    return latest


def _looks_cost(boards: _CountedBoards, runs: list[LinkedCapacityBoard], seq: int) -> int:
    """The database reads of three rounds of each run reading the record (`seq`) and
    waiting a moment for news, once a look of the first run reads nothing. The runs
    look side by side, as a worker's runs do: the worker ends a wait at its next look
    at the deadlines (every half second), so one run after another would take seconds."""
    deadline = time.monotonic() + 10
    before = -1
    while boards.reads != before and time.monotonic() < deadline:
        before = boards.reads
        runs[0].read()
    before = boards.reads
    seen: list[tuple[int | None, Sighting | None]] = []

    def look(run: LinkedCapacityBoard) -> None:
        for _ in range(3):
            latest = run.read()
            seen.append((latest.seq if latest is not None else None, run.wait_for_news(seq, 0.05)))

    looking = [threading.Thread(target=look, args=(run,)) for run in runs]
    for thread in looking:
        thread.start()
    for thread in looking:
        thread.join(30)
    assert seen == [(seq, None)] * 3 * len(runs)
    return boards.reads - before


def test_a_workers_runs_read_and_wait_on_the_record_its_listen_keeps(
    postgres_dsn: str, fleet_boards: FleetBoards
) -> None:
    # The waiting runs of a worker each read the record and wait for news again and
    # again: the database is read when a publication is announced, not at each look.
    boards = _CountedBoards(postgres_dsn)
    run = fleet_boards.worker(boards)
    runs = [run("acct") for _ in range(5)]
    assert _publish(runs[0]) == 1
    assert _looks_cost(boards, runs, 1) == 0
    # Another worker's publication is what they read next, once it is announced.
    assert _publish(fleet_boards.board("acct"), "other") == 2
    news = runs[1].wait_for_news(1, 10)
    assert news is not None
    assert news.seq == 2
    latest = _until_read(runs[2], 2)
    assert latest is not None
    assert (latest.seq, latest.writer) == (2, "other")
    assert _looks_cost(boards, runs, 2) == 0


def test_what_a_worker_kept_is_read_again_once_its_session_ended(
    postgres_dsn: str, fleet_boards: FleetBoards
) -> None:
    # The session that listened ended (the server restarted, an administrator ended
    # it): the publications of meanwhile were not heard, so the record is read again.
    boards = _CountedBoards(postgres_dsn)
    run = fleet_boards.worker(boards)("acct")
    assert _publish(run) == 1
    assert run.wait_for_news(1, 0.3) is None  # the worker listens
    connection = boards._connection
    assert connection is not None
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (connection.info.backend_pid,))
    assert _publish(fleet_boards.board("acct"), "other") == 2
    latest = _until_read(run, 2)
    assert latest is not None
    assert (latest.seq, latest.writer) == (2, "other")


def _beaten_worker(ours: socket.socket, beaten: int) -> threading.Thread:
    """A worker at `ours` whose record another writer moves before each of the run's
    first `beaten` publications gets in; the next is written."""

    def serve() -> None:
        seq = 0
        with ours, ours.makefile("rwb") as lines:
            for line in lines:
                request = json.loads(line)
                record = Sighting(
                    seq=seq,
                    at=NOW,
                    pid=1,
                    writer="other",
                    source="turn",
                    standing="open",
                    signals=TurnSignals(),
                )
                if request["op"] == "read":
                    answer = {"sighting": sighting_to_json(record) if seq else None}
                elif seq < beaten:  # moved under the run again
                    seq += 1
                    answer = {"moved": sighting_to_json(replace(record, seq=seq))}
                else:
                    seq += 1
                    answer = {"sighting": sighting_to_json(replace(record, seq=seq, writer="w"))}
                lines.write(json.dumps({"id": request["id"], **answer}).encode() + b"\n")
                lines.flush()

    serving = threading.Thread(target=serve, daemon=True)
    serving.start()
    return serving


def _published_past(beaten: int, patience: float) -> int:
    ours, theirs = socket.socketpair()
    serving = _beaten_worker(ours, beaten)
    board = LinkedCapacityBoard(BoardLink(theirs.detach()), "acct")
    try:
        written = board.publish(
            signals=TurnSignals(),
            standing="open",
            source="turn",
            writer="w",
            now=NOW,
            patience=patience,
        )
        assert written is not None
        return written.seq
    finally:
        board._link._socket.shutdown(socket.SHUT_RDWR)  # the run's end: the worker's too
        serving.join(10)
        assert not serving.is_alive()


def test_a_publication_another_writer_keeps_beating_goes_round_while_its_patience_lasts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(board_link, "_BACK_OFF_SECONDS", 0.0)  # the rounds, not their waits
    # A writer publishing back to back gets in first round after round: the run waits
    # for it as for a held lock, its patience long (and 20 rounds at least, so one
    # attempt at the lock, patience 0, still goes round).
    assert _published_past(30, patience=60) == 31
    assert _published_past(19, patience=0) == 20
    with pytest.raises(BoardBusy, match="changed under each of 20 attempts"):
        _published_past(20, patience=0)
