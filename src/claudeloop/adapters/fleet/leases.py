"""What lets another worker take a dead worker's runs: leases, takeover, epochs, and the
run records kept in the engine's database.

Two tables beside DBOS's, in the same database (a SQLite file or PostgreSQL):

- `claudeloop_workers`: one row per worker (its DBOS executor id) with the instant of
  its last heartbeat, by the database's clock, its own lease, and who took it over. A
  worker whose heartbeat is older than its own lease is dead, to a judge that has
  reached the database for a whole such lease itself (one back from an outage allows
  the others the time their heartbeats could not be written); the first live worker
  whose `UPDATE ... WHERE taken_by IS NULL` changes its row is the one that takes its
  runs.
- `claudeloop_runs`: one row per run with its epoch, the worker that holds it, and the
  run's record (state.json and events.jsonl) and Claude session transcript as the last
  holder stored them. Each drive, and each takeover, raises the epoch; a record stored
  under an older epoch is refused, which is how a worker cut off but alive is fenced.
- `claudeloop_controls`: a `stop` or `wind-down` asked from any machine, one per run,
  until the worker holding the run writes it into the run's control file (a worker
  that takes the run over meanwhile delivers it instead).
- `claudeloop_requests`: a probe now, a cap raised or a note asked from any machine
  (domain.steering, as the control file's JSON writes it), each a row of its own in the
  order asked, until the worker holding the run writes it into the control file.

The statements are plain SQL for both dialects, run on a worker's SQLAlchemy pool or on
one DB-API connection (adapters/fleet/connections.py); the fleet commands alone import
this module.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from claudeloop.adapters.fleet import travel
from claudeloop.adapters.fleet.connections import Database, Pooled, Single, Transaction
from claudeloop.adapters.fleet.dbos_app import cancelled_among
from claudeloop.application.ports import AccountCapacity

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
# Dead: let go on purpose (its heartbeat set to 0), or silent past its own lease while
# the judge (`:up_for` ms without a break on its side) could have seen it beat.
_DEAD = "taken_by IS NULL AND (beat_at = 0 OR (beat_at < :now - lease_ms AND lease_ms <= :up_for))"


class Fenced(RuntimeError):
    """This worker was taken over, or this run's epoch is no longer the one it holds."""


@dataclass(frozen=True)
class StoredRow:
    """A run's row as the engine holds it: the record and transcript still in bytes (the
    application's `StoredRun` is what a command reads of it)."""

    epoch: int
    holder: str | None
    saved_by: str | None
    phase: str | None
    record: bytes | None
    transcript: bytes | None


@dataclass(frozen=True)
class StoredSummary:
    """A run's summary as the engine holds it (`record`: only for a row without one)."""

    holder: str | None
    phase: str | None
    summary: str | None
    record: bytes | None


_ADD_LEASE = (
    f"ALTER TABLE claudeloop_workers ADD COLUMN lease_ms BIGINT NOT NULL DEFAULT {DEFAULT_LEASE_MS}"
)
# A run's summary (its line in `status --engine`), kept beside its record; the rows of
# before have none, and are summed up from their record.
_ADD_SUMMARY = "ALTER TABLE claudeloop_runs ADD COLUMN summary TEXT"
# A run's state.json stored on its own (compressed) since its record was stored whole.
_ADD_STATE = "ALTER TABLE claudeloop_runs ADD COLUMN state {binary}"
EVENTS, TRANSCRIPT = "events", "transcript"  # the append-only files, as chunks name them


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
        "CREATE TABLE IF NOT EXISTS claudeloop_controls ("
        " run_id TEXT PRIMARY KEY, command TEXT NOT NULL, asked_at BIGINT NOT NULL)",
        _REQUESTS_TABLE[kind],
    ]


# Made by `fleet init`, and by the first request of a fleet made before it (IF NOT EXISTS).
_REQUESTS_TABLE = {
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


@dataclass(frozen=True)
class Inbox:
    """What was asked of a worker's runs since it last looked (Leases.asked): its inbox."""

    cancelled: list[str]  # run ids
    commands: list[tuple[str, str]]  # (run id, command), by run id
    requests: list[tuple[int, str, str]]  # (id, run id, request), in the order asked


class Leases:
    """The leases and run records of one engine's database."""

    def __init__(
        self,
        engine: Engine,
        *,
        answer_within: float | None = None,
        sharing: Leases | None = None,
        pooled: bool = True,
    ) -> None:
        """`answer_within`: seconds a statement may take on PostgreSQL before the server
        ends it (the heartbeat's: a beat must not hang). `sharing`: another Leases of
        the engine whose connections these take turns on (one pool per worker).
        `pooled`: False for one plain connection, without SQLAlchemy (the commands
        that look or ask, connections.Single)."""
        self.kind = engine.kind
        self._columns: set[tuple[str, str]] = set()
        self._requests_made = False  # claudeloop_requests, made by the first steer
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

    def read(self, statement: str, **values: Any) -> list[Any]:
        """The rows a query of another table of this database returns (DBOS's table of
        workflows, which adapters/fleet/dbos_app.py reads without importing DBOS)."""
        return self._rows(statement, **values)

    # Workers

    def start(self, worker: str, lease_ms: int = DEFAULT_LEASE_MS) -> None:
        """A worker begins a life: a fresh heartbeat, its lease, taken over by no one."""
        self._change(
            "INSERT INTO claudeloop_workers (worker, beat_at, taken_by, lease_ms)"
            " VALUES (:w, :now, NULL, :lease)"
            " ON CONFLICT (worker) DO UPDATE"
            " SET beat_at = :now, taken_by = NULL, lease_ms = :lease",
            w=worker,
            lease=lease_ms,
        )

    def beat(self, worker: str) -> bool:
        """Heartbeat; False when another worker has taken this one over (fenced)."""
        changed = self._change(
            "UPDATE claudeloop_workers SET beat_at = :now WHERE worker = :w AND taken_by IS NULL",
            w=worker,
        )
        return changed == 1

    def let_go(self, worker: str) -> None:
        """A worker stopping on purpose: its lease ends now, so another worker takes
        the runs it hands back without waiting for the lease to run out."""
        self._change(
            "UPDATE claudeloop_workers SET beat_at = 0 WHERE worker = :w AND taken_by IS NULL",
            w=worker,
        )

    def dead(self, me: str, up_for_ms: int) -> list[str]:
        """Workers other than `me` that let go, or whose own lease ran out while `me`
        reached the database (`up_for_ms`: since its last failed heartbeat), and that
        nobody took over."""
        rows = self._rows(
            f"SELECT worker FROM claudeloop_workers WHERE worker <> :me AND {_DEAD}"
            " ORDER BY worker",
            me=me,
            up_for=up_for_ms,
        )
        return [str(row[0]) for row in rows]

    def take_over(self, dead: str, me: str, up_for_ms: int) -> list[str] | None:
        """Take `dead`'s runs: one statement that only one live worker wins (one taken
        over itself wins none). The winner gets the executor ids whose pending runs it
        must recover: `dead`'s and those of the workers `dead` had taken over (it may
        have died before recovering them); every run they held has its epoch raised,
        fencing them. None: not won."""
        with self._begin() as c:
            won = c.execute(
                self._sql(
                    f"UPDATE claudeloop_workers SET taken_by = :me WHERE worker = :dead AND {_DEAD}"
                    " AND EXISTS (SELECT 1 FROM claudeloop_workers mine"
                    " WHERE mine.worker = :me AND mine.taken_by IS NULL)"
                ),
                {"me": me, "dead": dead, "up_for": up_for_ms},
            )
            if won.rowcount != 1:
                return None
            taken = c.execute(
                ("SELECT worker FROM claudeloop_workers WHERE taken_by = :dead"),
                {"dead": dead},
            )
            executors = [dead, *(str(row[0]) for row in taken)]
            for executor in executors:
                c.execute(
                    (
                        "UPDATE claudeloop_runs SET epoch = epoch + 1, holder = NULL"
                        " WHERE holder = :x"
                    ),
                    {"x": executor},
                )
            return executors

    # Runs

    def claim(self, run_id: str, me: str) -> int:
        """This worker drives the run from now: a new epoch, unless this worker itself
        was taken over (Fenced)."""
        with self._begin() as c:
            alive = c.execute(
                ("SELECT 1 FROM claudeloop_workers WHERE worker = :me AND taken_by IS NULL"),
                {"me": me},
            ).first()
            if alive is None:
                raise Fenced(f"worker {me} was taken over")
            c.execute(
                (
                    "INSERT INTO claudeloop_runs (run_id, epoch, holder) VALUES (:r, 1, :me)"
                    " ON CONFLICT (run_id) DO UPDATE"
                    " SET epoch = claudeloop_runs.epoch + 1, holder = :me"
                ),
                {"r": run_id, "me": me},
            )
            epoch = c.execute(
                ("SELECT epoch FROM claudeloop_runs WHERE run_id = :r"), {"r": run_id}
            ).scalar_one()
            return int(epoch)

    def holds(self, run_id: str, epoch: int) -> bool:
        rows = self._rows(
            "SELECT 1 FROM claudeloop_runs WHERE run_id = :r AND epoch = :e", r=run_id, e=epoch
        )
        return bool(rows)

    def store(
        self,
        run_id: str,
        epoch: int,
        me: str,
        *,
        phase: str | None,
        record: bytes,
        transcript: bytes | None,
        summary: str | None = None,
    ) -> None:
        """Keep the run's record, transcript and summary whole (a compaction: what was
        appended since the last whole one is in them); Fenced when `epoch` is stale."""
        with self._begin() as c:
            changed = c.execute(
                self._sql(
                    "UPDATE claudeloop_runs SET phase = :phase, record = :record,"
                    " transcript = COALESCE(:transcript, transcript), saved_by = :me,"
                    " summary = :summary, state = NULL WHERE run_id = :r AND epoch = :e"
                ),
                {
                    "r": run_id,
                    "e": epoch,
                    "me": me,
                    "phase": phase,
                    "record": record,
                    "transcript": transcript,
                    "summary": summary,
                },
            ).rowcount
            if changed != 1:
                raise Fenced(f"run {run_id}: epoch {epoch} is no longer this worker's")
            # The chunks are in the files just stored whole; the transcript's only when
            # one was (without one, its chunks go on from the one stored before).
            files = [EVENTS, TRANSCRIPT] if transcript is not None else [EVENTS]
            for file in files:
                c.execute(
                    ("DELETE FROM claudeloop_chunks WHERE run_id = :r AND file = :f"),
                    {"r": run_id, "f": file},
                )

    def append(
        self,
        run_id: str,
        epoch: int,
        me: str,
        *,
        phase: str | None,
        state: bytes,
        summary: str | None,
        chunks: list[tuple[str, int, bytes]],
    ) -> None:
        """Keep what changed since the last store: the run's state.json (compressed) on
        its own, and each append-only file's new bytes as a chunk (file, the byte it
        starts at, its bytes); Fenced when `epoch` is stale. A chunk stored again (a
        store whose answer was lost) replaces the one at its byte."""
        with self._begin() as c:
            changed = c.execute(
                self._sql(
                    "UPDATE claudeloop_runs SET phase = :phase, state = :state, saved_by = :me,"
                    " summary = :summary WHERE run_id = :r AND epoch = :e"
                ),
                {"r": run_id, "e": epoch, "me": me, "phase": phase, "state": state,
                 "summary": summary},
            ).rowcount  # fmt: skip
            if changed != 1:
                raise Fenced(f"run {run_id}: epoch {epoch} is no longer this worker's")
            for file, byte, data in chunks:
                c.execute(
                    (
                        "INSERT INTO claudeloop_chunks (run_id, file, byte, data)"
                        " VALUES (:r, :f, :b, :d) ON CONFLICT (run_id, file, byte)"
                        " DO UPDATE SET data = excluded.data"
                    ),
                    {"r": run_id, "f": file, "b": byte, "d": data},
                )

    def stored(self, run_id: str) -> StoredRow | None:
        """The run's record and transcript as the last store left them: the whole ones,
        with the state stored since and the chunks appended since put in."""
        appended = self._has_column("claudeloop_runs", "state")
        with self._begin() as c:
            row = c.execute(
                (
                    "SELECT epoch, holder, saved_by, phase, record, transcript"
                    + (", state" if appended else ", NULL")
                    + " FROM claudeloop_runs WHERE run_id = :r"
                ),
                {"r": run_id},
            ).first()
            if row is None:
                return None
            chunks: dict[str, list[tuple[int, bytes]]] = {EVENTS: [], TRANSCRIPT: []}
            if appended:
                for file, byte, data in c.execute(
                    (
                        "SELECT file, byte, data FROM claudeloop_chunks WHERE run_id = :r"
                        " ORDER BY file, byte"
                    ),
                    {"r": run_id},
                ):
                    chunks.setdefault(str(file), []).append((int(byte), bytes(data)))
        record = bytes(row[4]) if row[4] is not None else None
        transcript = bytes(row[5]) if row[5] is not None else None
        state = bytes(row[6]) if row[6] is not None else None
        if state is not None or chunks[EVENTS]:
            record = travel.grown_record(record, state, chunks[EVENTS])
        if chunks[TRANSCRIPT]:
            transcript = travel.grown_transcript(transcript, chunks[TRANSCRIPT])
        return StoredRow(int(row[0]), row[1], row[2], row[3], record, transcript)

    def summaries(self) -> dict[str, StoredSummary]:
        """Every run's holder, phase and summary, by run id (the fleet's view), without
        its record: only a row stored before summaries were kept (none in its column)
        has its record read, to sum it up."""
        if not self._has_column("claudeloop_runs", "summary"):  # a fleet of before
            rows = self._rows("SELECT run_id, holder, phase, NULL, record FROM claudeloop_runs")
        else:
            rows = self._rows(
                "SELECT run_id, holder, phase, summary, CASE WHEN summary IS NULL"
                " THEN record END FROM claudeloop_runs"
            )
        return {
            str(row[0]): StoredSummary(
                row[1],
                row[2],
                row[3],
                bytes(row[4]) if row[4] is not None else None,
            )
            for row in rows
        }

    # Stop and wind-down from any machine

    def ask(self, run_id: str, command: str) -> None:
        """Ask the worker holding the run to pass `command` on to it; the last asked
        counts."""
        self._change(
            "INSERT INTO claudeloop_controls (run_id, command, asked_at) VALUES (:r, :c, :now)"
            " ON CONFLICT (run_id) DO UPDATE SET command = :c, asked_at = :now",
            r=run_id,
            c=command,
        )

    def request(self, run_id: str, asked: str) -> None:
        """Ask the worker holding the run to pass the request `asked` (its JSON) on."""
        self._change(_REQUESTS_TABLE[self.kind])
        self._change(
            "INSERT INTO claudeloop_requests (run_id, asked, asked_at) VALUES (:r, :a, :now)",
            r=run_id,
            a=asked,
        )

    def request_delivered(self, request_id: int) -> None:
        self._change("DELETE FROM claudeloop_requests WHERE id = :i", i=request_id)

    def asked(self, worker: str, running: list[str]) -> Inbox:
        """What was asked of the runs `worker` holds, in one statement (a worker asks
        once a second): which of `running` were cancelled (DBOS's table of workflows, a run
        being its workflow), the commands asked of its runs, and its runs' requests in
        the order asked (none on a fleet whose table of them is not made yet)."""
        if not self._requests_made:
            # Asked once it is there (it stays), not at every tick.
            self._requests_made = self._db.has_table("claudeloop_requests")
        values: dict[str, Any] = {"w": worker}
        parts = [
            "SELECT 'command', c.run_id, CAST(NULL AS BIGINT), c.command FROM claudeloop_controls c"
            " JOIN claudeloop_runs r ON r.run_id = c.run_id WHERE r.holder = :w"
        ]
        if running:
            values |= {f"r{n}": run_id for n, run_id in enumerate(running)}
            among = ", ".join(f":r{n}" for n in range(len(running)))
            parts.append(cancelled_among(self.kind, among))
        if self._requests_made:
            parts.append(
                "SELECT 'request', q.run_id, q.id, q.asked FROM claudeloop_requests q"
                " JOIN claudeloop_runs r ON r.run_id = q.run_id WHERE r.holder = :w"
            )
        rows = self._rows(" UNION ALL ".join(parts), **values)
        return Inbox(
            cancelled=sorted(str(r[1]) for r in rows if r[0] == "cancelled"),
            commands=sorted((str(r[1]), str(r[3])) for r in rows if r[0] == "command"),
            requests=sorted((int(r[2]), str(r[1]), str(r[3])) for r in rows if r[0] == "request"),
        )

    def delivered(self, run_id: str, command: str) -> None:
        """The command reached the run (one asked since stays)."""
        self._change(
            "DELETE FROM claudeloop_controls WHERE run_id = :r AND command = :c",
            r=run_id,
            c=command,
        )

    # The capacity board (PostgreSQL), read only

    def capacity(self) -> list[AccountCapacity]:
        """Each account's last sighting on the capacity board; none on SQLite (its
        board is a file on each machine)."""
        if self.kind != "postgresql":
            return []
        # The board's table is the board's: its query and its rows' meaning live there.
        from claudeloop.adapters.shared_capacity.postgres_board import (
            EVERY_ACCOUNT,
            account_capacity,
        )

        return [account_capacity(row) for row in self._rows(EVERY_ACCOUNT)]
