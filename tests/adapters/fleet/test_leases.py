"""Leases, takeover and epochs in the engine's database, on SQLite and PostgreSQL: one
live worker takes a dead one's runs, and whatever the dead one still tries is refused."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from claudeloop.adapters.fleet import run_archive
from claudeloop.adapters.fleet.engine import parse_engine
from claudeloop.adapters.fleet.leases import (
    EVENTS,
    TRANSCRIPT,
    Cancelled,
    Fenced,
    Leases,
    NoRoom,
)

LONG = 3_600_000  # a lease no heartbeat of a test outlives


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.sqlite'}"
    return str(request.getfixturevalue("postgres_dsn"))


@pytest.fixture
def leases(engine_url: str) -> Iterator[Leases]:
    made = Leases(parse_engine(engine_url, "test"))
    made.ensure_schema()
    made.ensure_schema()  # safe to repeat
    yield made
    made.close()


def test_a_worker_beating_is_alive_and_one_that_let_go_is_taken_by_one_worker_only(
    leases: Leases,
) -> None:
    for worker in ("w1", "w2", "w3"):
        leases.start(worker)
    assert leases.dead("w2", LONG) == []
    leases.let_go("w1")  # its lease over, as a silence past it would leave it
    assert leases.dead("w2", LONG) == ["w1"]
    won: list[list[str] | None] = []
    racing = [
        threading.Thread(target=lambda me=me: won.append(leases.take_over("w1", me, LONG)))
        for me in ("w2", "w3")
    ]
    for thread in racing:
        thread.start()
    for thread in racing:
        thread.join()
    assert sorted(won, key=str) == [None, ["w1"]]
    assert leases.dead("w2", LONG) == []  # taken: nobody takes it again
    assert leases.beat("w1") is False  # the dead one, back: fenced
    leases.start("w1")  # started again on purpose: a new life
    assert leases.beat("w1") is True


def test_a_takeover_raises_the_epoch_and_the_old_holder_can_neither_store_nor_claim(
    leases: Leases,
) -> None:
    leases.start("w1")
    leases.start("w2")
    first = leases.claim("r1", "w1")
    leases.store("r1", first, "w1", phase="waiting", record=b"one", transcript=b"t1")
    leases.let_go("w1")
    assert leases.take_over("w1", "w2", LONG) == ["w1"]
    assert not leases.holds("r1", first)
    with pytest.raises(Fenced):
        leases.store("r1", first, "w1", phase="turn", record=b"stale", transcript=None)
    with pytest.raises(Fenced):
        leases.claim("r1", "w1")
    second = leases.claim("r1", "w2")
    assert second > first
    stored = leases.stored("r1")
    assert stored is not None
    assert (stored.record, stored.transcript, stored.saved_by) == (b"one", b"t1", "w1")
    leases.store("r1", second, "w2", phase="done", record=b"two", transcript=None)
    stored = leases.stored("r1")
    assert stored is not None
    # No transcript this time: the one kept stays.
    assert (stored.record, stored.transcript, stored.saved_by) == (b"two", b"t1", "w2")
    assert leases.stored("nope") is None


def test_a_worker_that_dies_after_winning_a_takeover_passes_those_runs_on_too(
    leases: Leases,
) -> None:
    for worker in ("w1", "w2", "w3"):
        leases.start(worker)
    run = leases.claim("r1", "w1")
    leases.let_go("w1")
    assert leases.take_over("w1", "w2", LONG) == ["w1"]
    leases.let_go("w2")  # died before DBOS recovered w1's runs
    assert leases.take_over("w2", "w3", LONG) == ["w2", "w1"]
    assert leases.claim("r1", "w3") > run


def test_an_accounts_runs_past_its_limit_wait_until_one_of_them_ends(leases: Leases) -> None:
    for worker in ("w1", "w2"):
        leases.start(worker)
    order = '{"cwd": "/p"}'
    for run_id in ("r1", "r2", "r3", "other"):
        leases.add_to_queue(run_id, order, "other" if run_id == "other" else "a", lambda _: None)
    assert leases.claim("r1", "w1", order, "a", per_account=2) == 1
    assert leases.claim("r2", "w2", order, "a", per_account=2, driving={"r2"}) == 1
    with pytest.raises(NoRoom) as full:
        leases.claim("r3", "w1", order, "a", per_account=2, driving={"r1"})
    assert (full.value.account, full.value.running) == ("a", 2)
    assert leases.queue_rows("r3")[0].status == "queued"  # nothing of the claim is kept
    assert leases.claim("other", "w1", order, "other", per_account=1) == 1  # its own limit
    leases.mark_cancelled("r3")
    with pytest.raises(Cancelled):  # cancelled, it is not waiting for anything
        leases.claim("r3", "w1", order, "a", per_account=2)
    leases.add_to_queue("r4", order, "a", lambda _: None)
    leases.ended("r2", "w2", 0)
    assert leases.claim("r4", "w1", order, "a", per_account=2, driving={"r1"}) == 1
    # Without a limit (a claudeloop of before, or none asked) nothing is counted.
    leases.add_to_queue("r5", order, "a", lambda _: None)
    assert leases.claim("r5", "w2", order, "a") == 1


def test_a_worker_back_for_its_own_runs_counts_only_those_it_claimed_again(
    leases: Leases,
) -> None:
    # w1 ran r1 and r2 of one account, stopped, and starts again with a limit of 1: its
    # runs of before are claimed again one at a time, never both waiting on each other.
    leases.start("w1")
    order = '{"cwd": "/p"}'
    for run_id in ("r1", "r2"):
        leases.claim(run_id, "w1", order, "a", per_account=2)
    leases.start("w1")
    assert leases.claim("r1", "w1", order, "a", per_account=1, driving=set()) == 2
    with pytest.raises(NoRoom):
        leases.claim("r2", "w1", order, "a", per_account=1, driving={"r1"})
    leases.ended("r1", "w1", 0)
    assert leases.claim("r2", "w1", order, "a", per_account=1, driving=set()) == 2


def test_workers_claiming_one_accounts_runs_at_once_start_no_more_than_its_limit(
    leases: Leases, engine_url: str
) -> None:
    # Each worker on a pool of its own, as each worker process has; all at one instant.
    workers = [Leases(parse_engine(engine_url, "test")) for _ in range(4)]
    order = '{"cwd": "/p"}'
    for number in range(len(workers)):
        leases.start(f"w{number}")
        leases.add_to_queue(f"r{number}", order, "a", lambda _: None)
    together = threading.Barrier(len(workers))
    started: list[str] = []
    refused: list[str] = []

    def claim(number: int) -> None:
        together.wait()
        try:
            workers[number].claim(f"r{number}", f"w{number}", order, "a", per_account=2)
            started.append(f"r{number}")
        except NoRoom:
            refused.append(f"r{number}")

    racing = [threading.Thread(target=claim, args=(number,)) for number in range(len(workers))]
    for thread in racing:
        thread.start()
    for thread in racing:
        thread.join()
    for worker in workers:
        worker.close()
    assert (len(started), len(refused)) == (2, 2)
    running = [row.run_id for row in leases.queue_rows() if row.status == "running"]
    assert sorted(running) == sorted(started)


def test_setting_up_a_fresh_sqlite_file_while_another_connection_writes_waits_for_it(
    tmp_path: Path,
) -> None:
    # The first `queue add`s of a fleet race to set the file up; SQLite refuses the
    # switch to write-ahead logging at once while another connection writes.
    import sqlite3

    path = tmp_path / "fleet.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE dbos_migrations (version INTEGER NOT NULL PRIMARY KEY)")
    committing = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    committing.start()
    leases = Leases(parse_engine(f"sqlite:///{path}", "test"))
    try:
        leases.ensure_schema()
        leases.start("w1")
        assert leases.beat("w1") is True  # the tables are there and written
    finally:
        committing.join()
        leases.close()
        other.close()
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()
    assert mode == ("wal",)


def silent_for(leases: Leases, worker: str, ms: int) -> None:
    """The worker's last heartbeat `ms` ago, by the database's clock."""
    leases._change(
        "UPDATE claudeloop_workers SET beat_at = :now - :ms WHERE worker = :w", ms=ms, w=worker
    )


def test_a_worker_is_judged_by_its_own_lease_not_by_the_judges(leases: Leases) -> None:
    leases.start("patient", 30_000)
    leases.start("hasty", 2_000)
    silent_for(leases, "patient", 10_000)  # well within its own 30 s
    assert leases.dead("hasty", LONG) == []
    assert leases.take_over("patient", "hasty", LONG) is None
    assert leases.beat("patient") is True  # not fenced
    silent_for(leases, "hasty", 10_000)  # past its own 2 s
    assert leases.dead("patient", LONG) == ["hasty"]
    assert leases.take_over("hasty", "patient", LONG) == ["hasty"]


def test_a_worker_back_from_an_outage_judges_no_one_until_it_has_been_back_a_whole_lease(
    leases: Leases,
) -> None:
    for worker in ("w1", "w2"):
        leases.start(worker, 4_000)
    silent_for(leases, "w1", 10_000)  # its beats could not be written in the outage
    assert leases.dead("w2", 1_000) == []  # w2 itself back for a second only
    assert leases.take_over("w1", "w2", 1_000) is None
    assert leases.beat("w1") is True  # w1 is back too: nobody was fenced
    silent_for(leases, "w1", 5_000)  # w1 silent on while w2 reached the engine 4 s
    assert leases.dead("w2", 4_000) == ["w1"]
    leases.let_go("w2")  # a worker that let go is taken at once, by a judge just back
    assert leases.dead("w1", 0) == ["w2"]


def test_a_worker_taken_over_takes_no_one_over(leases: Leases) -> None:
    for worker in ("w1", "w2", "w3"):
        leases.start(worker)
    leases.let_go("w1")
    leases.let_go("w2")
    assert leases.take_over("w2", "w3", LONG) == ["w2"]
    assert leases.take_over("w1", "w2", LONG) is None  # w2 is fenced: w1 waits for w3
    assert leases.take_over("w1", "w3", LONG) == ["w1"]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_workers_table_of_before_gets_each_workers_lease_with_the_default(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:

    url = (
        f"sqlite:///{tmp_path / 'fleet.sqlite'}"
        if kind == "sqlite"
        else request.getfixturevalue("postgres_dsn")
    )
    engine = parse_engine(url, "test")
    made = Leases(engine)
    with made._db.begin() as c:  # the table as a claudeloop of before made it
        c.execute(
            "CREATE TABLE claudeloop_workers ("
            " worker TEXT PRIMARY KEY, beat_at BIGINT NOT NULL, taken_by TEXT)"
        )
        c.execute("INSERT INTO claudeloop_workers VALUES ('old', 1, NULL)")
    try:
        made.ensure_schema()
        made.ensure_schema()  # safe to repeat
        assert made._rows("SELECT worker, lease_ms FROM claudeloop_workers") == [("old", 30_000)]
        made.start("new", 4_000)
        assert made.beat("new") is True
    finally:
        made.close()


def test_what_grew_is_stored_as_chunks_read_back_whole_and_gone_once_stored_whole(
    leases: Leases,
) -> None:
    leases.start("w1")
    epoch = leases.claim("r1", "w1")
    base = run_archive.pack_files({"state.json": b'{"turns": 0}', "events.jsonl": b"one\n"})
    leases.store("r1", epoch, "w1", phase="running", record=base, transcript=gzip.compress(b"a"))
    for chunks in ([(EVENTS, 4, b"two\n"), (TRANSCRIPT, 1, b"b")], [(TRANSCRIPT, 2, b"c")]):
        leases.append(
            "r1", epoch, "w1", phase="waiting", state=gzip.compress(b'{"turns": 1}'),
            summary=None, chunks=chunks,
        )  # fmt: skip
    # A store whose answer was lost, made again with what grew meanwhile.
    leases.append(
        "r1", epoch, "w1", phase="waiting", state=gzip.compress(b'{"turns": 1}'),
        summary=None, chunks=[(EVENTS, 4, b"two\nthree\n")],
    )  # fmt: skip
    stored = leases.stored("r1")
    assert stored is not None
    assert stored.record is not None
    assert stored.transcript is not None
    assert stored.phase == "waiting"
    assert run_archive.member_of(stored.record, "state.json") == b'{"turns": 1}'
    assert run_archive.member_of(stored.record, "events.jsonl") == b"one\ntwo\nthree\n"
    assert gzip.decompress(stored.transcript) == b"abc"
    leases.store("r1", epoch, "w1", phase="running", record=base, transcript=gzip.compress(b"x"))
    again = leases.stored("r1")
    assert again is not None
    assert again.transcript is not None
    assert (again.record, gzip.decompress(again.transcript)) == (base, b"x")
    leases.let_go("w1")
    leases.start("w2")
    leases.take_over("w1", "w2", LONG)
    with pytest.raises(Fenced):  # a worker taken over appends nothing
        leases.append(
            "r1", epoch, "w1", phase="waiting", state=b"", summary=None,
            chunks=[(EVENTS, 4, b"stale\n")],
        )  # fmt: skip
    after = leases.stored("r1")
    assert after is not None
    assert after.record == base


def test_an_append_only_file_grows_by_its_chunks_in_order_and_ends_at_a_gap() -> None:
    assert run_archive.grown(b"ab", [(4, b"ef"), (2, b"cd")]) == b"abcdef"
    assert run_archive.grown(b"abcd", [(2, b"cdef")]) == b"abcdef"  # overlaps what is there
    assert run_archive.grown(b"ab", [(3, b"d"), (5, b"f")]) == b"ab"  # a gap: nothing past it
    record = run_archive.grown_record(None, None, [(0, b"one\n")])
    assert run_archive.member_of(record, "events.jsonl") == b"one\n"
    assert run_archive.member_of(record, "state.json") is None
