"""The fleet's own tables in the engine's database (leases.py says what each holds):
made and upgraded in place, and the connections and transactions their statements run
on, on a worker's SQLAlchemy pool or on one DB-API connection (connections.py).
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from claudeloop.adapters.fleet.connections import Database, Pooled, Single, Transaction

if TYPE_CHECKING:
    import sqlalchemy as sa

    from claudeloop.adapters.fleet.engine import Engine

_SCHEMA_LOCK = 0x636C6F6F70_02  # pg_advisory_lock key of this set-up ("cloop", 2)
_BUSY_SECONDS = 30  # SQLite: how long a writer waits for another's lock
_RETRY_SECONDS = 0.05  # SQLite: between tries of what gets no busy wait
_IDLE_IN_TRANSACTION_MS = 2000
_POOL_SIZE = 2  # PostgreSQL connections of one Leases, at most
# How long a thread waits for one of them before the call fails (the heartbeat says the
# engine is away, a store is tried again): never for good.
_POOL_WAIT_SECONDS = 10
DEFAULT_LEASE_MS = 30_000  # the lease of a worker of before leases were kept per worker


_ADD_LEASE = (
    f"ALTER TABLE claudeloop_workers ADD COLUMN lease_ms BIGINT NOT NULL DEFAULT {DEFAULT_LEASE_MS}"
)
# A run's summary (its line in `status --engine`), kept beside its record; the rows of
# before have none, and are summed up from their record.
_ADD_SUMMARY = "ALTER TABLE claudeloop_runs ADD COLUMN summary TEXT"
# A run's state.json stored on its own (compressed) since its record was stored whole.
_ADD_STATE = "ALTER TABLE claudeloop_runs ADD COLUMN state {binary}"


def _tables(kind: str) -> list[str]:
    binary = "BYTEA" if kind == "postgresql" else "BLOB"
    return [
        "CREATE TABLE IF NOT EXISTS claudeloop_workers ("
        " worker TEXT PRIMARY KEY, beat_at BIGINT NOT NULL, taken_by TEXT,"
        f" lease_ms BIGINT NOT NULL DEFAULT {DEFAULT_LEASE_MS})",
        "CREATE TABLE IF NOT EXISTS claudeloop_runs ("
        " run_id TEXT PRIMARY KEY, epoch BIGINT NOT NULL, holder TEXT, saved_by TEXT,"
        f" phase TEXT, record {binary}, transcript {binary}, summary TEXT, state {binary})",
        # What a run's append-only files (events.jsonl, its session's transcript) grew by
        # since its record and transcript were last stored whole: `byte` is the byte of
        # the file the chunk starts at.
        "CREATE TABLE IF NOT EXISTS claudeloop_chunks ("
        f" run_id TEXT NOT NULL, file TEXT NOT NULL, byte BIGINT NOT NULL, data {binary},"
        " PRIMARY KEY (run_id, file, byte))",
        # The queue as claudeloop knows it, beside the engine's own record of it (which
        # only the engine reads): a row per run, written in the transaction that queues
        # it, and by the worker's claim and end of it (leases.py says each state).
        QUEUE_TABLE,
        "CREATE TABLE IF NOT EXISTS claudeloop_controls ("
        " run_id TEXT PRIMARY KEY, command TEXT NOT NULL, asked_at BIGINT NOT NULL)",
        REQUESTS_TABLE[kind],
    ]


QUEUE_TABLE = (
    "CREATE TABLE IF NOT EXISTS claudeloop_queue ("
    " run_id TEXT PRIMARY KEY, queued_at BIGINT NOT NULL, account TEXT NOT NULL,"
    " orders TEXT NOT NULL, status TEXT NOT NULL, worker TEXT, exit_code BIGINT)"
)


# Made by `fleet init`, and by the first request of a fleet made before it (IF NOT EXISTS).
REQUESTS_TABLE = {
    kind: "CREATE TABLE IF NOT EXISTS claudeloop_requests ("
    f" id {serial}, run_id TEXT NOT NULL, asked TEXT NOT NULL, asked_at BIGINT NOT NULL)"
    for kind, serial in (
        ("postgresql", "BIGSERIAL PRIMARY KEY"),
        ("sqlite", "INTEGER PRIMARY KEY AUTOINCREMENT"),
    )
}


_NOW = {
    "postgresql": "(extract(epoch from clock_timestamp()) * 1000)::bigint",
    "sqlite": "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
}


def _pool(engine: Engine) -> sa.Engine:
    """A worker's pool of connections to the engine's database."""
    import sqlalchemy

    url = engine.connect_url
    if engine.kind != "postgresql":
        return sqlalchemy.create_engine(url, connect_args={"timeout": _BUSY_SECONDS})
    url = "postgresql+psycopg://" + url.split("://", 1)[1]
    # A worker paused mid-transaction (SIGSTOP) would hold its row's lock, and the
    # takeover of that very worker would wait for it: the server ends such a
    # transaction instead. None of ours is ever idle on purpose.
    mine = f"-c idle_in_transaction_session_timeout={_IDLE_IN_TRANSACTION_MS}"
    parsed = sqlalchemy.make_url(url)
    given = parsed.query.get("options")
    options = f"{given} {mine}" if isinstance(given, str) else mine
    # At most this many connections, however many threads ask at once (a worker's runs
    # each store their copy, DBOS runs its queue on them too): they wait their turn.
    # No ping at each checkout: each is a commit of its own on the server (measured:
    # 100 transactions, 204 commits with it, 105 without), half a worker's. A server
    # that restarted fails the next statement instead, which SQLAlchemy takes for the
    # whole pool's end (each connection is made again), DBOS retries and the leases'
    # callers try again at their next tick.
    return sqlalchemy.create_engine(
        parsed.update_query_dict({"options": options}),
        pool_size=_POOL_SIZE,
        max_overflow=0,
        pool_timeout=_POOL_WAIT_SECONDS,
    )


def _sqlite_error(error: Exception) -> sqlite3.Error | None:
    """SQLite's own error, raised as it is or wrapped by SQLAlchemy."""
    for each in (error, getattr(error, "orig", None)):
        if isinstance(each, sqlite3.Error):
            return each
    return None


class LeaseTables:
    """The fleet's tables of one engine's database, and what their statements run on."""

    def __init__(
        self,
        engine: Engine,
        *,
        answer_within: float | None = None,
        sharing: LeaseTables | None = None,
        pooled: bool = True,
    ) -> None:
        """`answer_within`: seconds a statement may take on PostgreSQL before the server
        ends it (the heartbeat's: a beat must not hang). `sharing`: another LeaseTables of
        the engine whose connections these take turns on (one pool per worker).
        `pooled`: False for one plain connection, without SQLAlchemy (the commands
        that look or ask, connections.Single)."""
        self.kind = engine.kind
        self._columns: set[tuple[str, str]] = set()
        self._requests_made = False  # claudeloop_requests, made by the first steer
        self._queue_kept = False  # claudeloop_queue, made by a set-up since it was kept
        self._answer_ms: int | None = None
        if engine.kind == "postgresql" and answer_within is not None:
            self._answer_ms = int(answer_within * 1000)
        self._owned = sharing is None
        self._now = _NOW[engine.kind]
        self._db: Database
        if sharing is not None:
            self._db = sharing._db
        elif not pooled:
            self._db = Single(engine, busy_seconds=_BUSY_SECONDS)
        else:
            self._db = Pooled(engine.kind, _pool(engine))

    @property
    def pool(self) -> sa.Engine:
        """The connections, for DBOS to take turns on with these leases (PostgreSQL)."""
        assert isinstance(self._db, Pooled)
        return self._db.engine

    def close(self) -> None:
        if self._owned:
            self._db.close()

    @contextlib.contextmanager
    def _begin(self) -> Iterator[Transaction]:
        """A transaction; one of `answer_within` ends a statement or a lock wait that
        takes longer (set for the transaction alone: the connection is shared)."""
        with self._db.begin() as c:
            if self._answer_ms is not None:
                c.execute(
                    "SELECT set_config('statement_timeout', :ms, true),"
                    " set_config('lock_timeout', :ms, true)",
                    {"ms": str(self._answer_ms)},
                )
            yield c

    def ensure_schema(self) -> None:
        """Create both tables; safe to repeat and to race (IF NOT EXISTS under the
        database's lock: SQLite's writer lock, an advisory lock on PostgreSQL)."""
        if self.kind == "sqlite":
            self._write_ahead_logging()
        with self._begin() as c:
            if self.kind == "postgresql":
                c.execute(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})")
            for statement in _tables(self.kind):
                c.execute(statement)
            if self.kind == "postgresql":
                for added in (_ADD_LEASE, _ADD_SUMMARY, _ADD_STATE.format(binary="BYTEA")):
                    c.execute(added.replace("COLUMN", "COLUMN IF NOT EXISTS"))
        if self.kind == "sqlite":
            self._add_column("claudeloop_workers", "lease_ms", _ADD_LEASE)
            self._add_column("claudeloop_runs", "summary", _ADD_SUMMARY)
            self._add_column("claudeloop_runs", "state", _ADD_STATE.format(binary="BLOB"))

    def set_up_already(self) -> bool:
        """Whether the fleet's tables are there (reading asks this, never makes them)."""
        return self._db.has_table("claudeloop_runs")

    def keeps_its_queue(self) -> bool:
        """Whether claudeloop's table of the queue is there (a fleet set up by a
        claudeloop of before has none until it is set up again)."""
        if not self._queue_kept:  # asked until it is there (it stays), not at every look
            self._queue_kept = self._db.has_table("claudeloop_queue")
        return self._queue_kept

    def _add_column(self, table: str, column: str, statement: str) -> None:
        """A table made before the column was kept gets it (its rows of before take the
        default). SQLite has no ADD COLUMN IF NOT EXISTS: a set-up racing this one may
        add it between the look and the change, which is then refused, and the column
        is there."""
        if self._has_column(table, column):
            return
        try:
            self._db.run(statement)
        except Exception as error:
            if not isinstance(_sqlite_error(error), sqlite3.OperationalError):
                raise
            if not self._has_column(table, column):
                raise

    def _has_column(self, table: str, column: str) -> bool:
        """Whether the table has the column (a fleet set up by a claudeloop of before
        may lack it; once there, it stays: the answer is kept)."""
        if (table, column) in self._columns:
            return True
        names = self._db.columns(table)
        if column in names:
            self._columns.add((table, column))
        return column in names

    def _write_ahead_logging(self) -> None:
        """SQLite in write-ahead logging: a reader never holds up a writer, so a worker
        paused while it reads stops no other (one paused while it writes still does).

        The switch is made once, on a fresh file, and needs the file to itself: while
        another process writes (the first `queue add`s of a fleet race to set it up),
        SQLite refuses it at once, without waiting out the busy timeout. So it is
        tried again until the file is free, as long as a writer would wait."""
        deadline = time.monotonic() + _BUSY_SECONDS
        while True:
            try:
                self._db.run("PRAGMA journal_mode=WAL")
                return
            except Exception as error:
                said = _sqlite_error(error)
                busy = getattr(said, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY
                if not busy or time.monotonic() > deadline:
                    raise
            time.sleep(_RETRY_SECONDS)

    def _sql(self, statement: str) -> str:
        return statement.replace(":now", f"({self._now})")

    def _change(self, statement: str, **values: Any) -> int:
        """Rows the statement changed."""
        with self._begin() as c:
            return int(c.execute(self._sql(statement), values).rowcount)

    def _rows(self, statement: str, **values: Any) -> list[Any]:
        with self._begin() as c:
            return list(c.execute(self._sql(statement), values).fetchall())
