"""The capacity board of a fleet: one row per account in PostgreSQL, shared by every
machine that runs loops on the account, held by each worker for all its runs.

What the file board does with `flock`, the database does:

- a publication reads and replaces the account's row under a row lock (`SELECT ... FOR
  UPDATE`), so no sequence number is taken twice and none is lost;
- the row is stamped with the database's clock, one clock for every machine;
- the probe right is a session advisory lock: the server drops it when the session
  ends, so a dead worker's prober is taken over;
- every publication is announced with NOTIFY, and each worker LISTENs once for all its
  runs, so a loop waiting on another machine hears of a probe's result at once.

A run reaches it through its worker (adapters/shared_capacity/board_link.py): one
connection per worker, which reads, publishes, holds the probe locks and listens; none
per run. Imported only by the fleet's worker (psycopg is
the `fleet` extra).
"""

from __future__ import annotations

import contextlib
import json
import select
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import psycopg
import psycopg.errors

from claudeloop.adapters.shared_capacity.record import (
    BoardBusy,
    signals_from_dict,
    signals_to_dict,
)
from claudeloop.application.ports import AccountCapacity, Sighting, Source, Standing
from claudeloop.domain.signals import TurnSignals

TABLE = "claudeloop_capacity"
CHANNEL = "claudeloop_capacity"
CONNECT_TIMEOUT_SECONDS = 5
# Two loops creating the table at once must not trip over each other: the creation
# runs under this advisory lock, so set-up is safe to repeat from any machine.
_SCHEMA_LOCK = 0x636C6C70  # "cllp"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    account  text PRIMARY KEY,
    seq      bigint NOT NULL,
    at       timestamptz NOT NULL,
    pid      integer NOT NULL,
    writer   text NOT NULL,
    source   text NOT NULL CHECK (source IN ('turn', 'probe')),
    standing text NOT NULL CHECK (standing IN ('open', 'closed', 'other')),
    signals  jsonb NOT NULL,
    run_id   text,
    host     text
);
-- A table an older version made gains the columns of who wrote a record; its rows
-- keep NULL in them (a record of old, said by no run).
ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS run_id text;
ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS host text
"""
_COLUMNS = "seq, at, pid, writer, source, standing, signals, run_id, host"


class BoardUnavailable(OSError):
    """The database could not be reached or refused the write; the loop goes on alone."""


def ensure_schema(dsn: str) -> None:
    """Create the board's table if it is not there; safe to run at once from anywhere."""
    try:
        with _connect(dsn, autocommit=True) as connection:
            connection.execute("SELECT pg_advisory_lock(%s)", (_SCHEMA_LOCK,))
            try:
                connection.execute(_SCHEMA)
            finally:
                connection.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))
    except psycopg.Error as error:
        raise BoardUnavailable(f"capacity board: {_said(error)}") from None


class PostgresBoards:
    """The fleet's board as a worker holds it for every run it drives, of every
    account: one session for the reads, the publications, the probe locks and the
    LISTEN for the news (adapters/shared_capacity/board_link.py carries them to the
    runs, which hold no connection of their own). Safe to share between threads: they
    take turns on the session, and the wait for news holds it only to collect them.

    The probe right of an account is a session advisory lock, which PostgreSQL lets one
    session take again: which of this worker's runs holds it is kept here, so a second
    run of the worker is refused as another worker's would be. The session ending (the
    worker dead, the database away) frees every lock it held, as a run's own
    connection did; the holders of then are forgotten with it."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._lock = threading.Lock()
        self._connection: psycopg.Connection[Any] | None = None
        self._listening: psycopg.Connection[Any] | None = None  # the session that LISTENs
        self._probers: dict[str, object] = {}  # account: the holder of its probe lock

    def read(self, account: str) -> Sighting | None:
        """The account's record; BoardUnavailable when the database cannot tell."""
        with self._lock:
            try:
                row = (
                    self._session()
                    .execute(f"SELECT {_COLUMNS} FROM {TABLE} WHERE account = %s", (account,))
                    .fetchone()
                )
            except psycopg.Error as error:
                self._drop()
                raise BoardUnavailable(f"capacity board: {_said(error)}") from None
        return _sighting(row) if row is not None else None

    def publish(
        self,
        account: str,
        *,
        signals: TurnSignals,
        standing: Standing,
        source: Source,
        writer: str,
        run_id: str | None,
        pid: int,
        host: str,
        unless: Callable[[Sighting | None], bool],
        patience: float,
    ) -> Sighting | None:
        """The next record of the account, stamped with its writer's process and machine
        (a run's, not this worker's), unless `unless(current)`; BoardBusy after
        `patience` seconds of another writer's lock, BoardUnavailable on failure."""
        with self._lock:
            try:
                return self._publish(
                    account,
                    values=(pid, writer, source, standing, signals, run_id, host),
                    unless=unless,
                    patience=patience,
                )
            except psycopg.errors.LockNotAvailable:
                self._drop()
                raise BoardBusy(
                    f"capacity board: the record of {account} was locked by another "
                    f"writer for over {patience:g}s"
                ) from None
            except psycopg.Error as error:
                self._drop()
                raise BoardUnavailable(f"capacity board: {_said(error)}") from None

    def try_probe_lock(self, account: str, holder: object) -> bool:
        """The account's probe right for `holder` when no one holds it (on this worker
        or any, `holder` itself too); never blocks."""
        with self._lock:
            if account in self._probers:
                return False  # one of this worker's runs holds it (or asks twice)
            try:
                row = (
                    self._session()
                    .execute(
                        "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
                        (f"probe:{account}",),
                    )
                    .fetchone()
                )
            except psycopg.Error as error:
                self._drop()
                raise BoardUnavailable(f"capacity board: {_said(error)}") from None
            if row is None or not row[0]:
                return False
            self._probers[account] = holder
            return True

    def release_probe_locks(self, holder: object, account: str | None = None) -> None:
        """Give up the probe right `holder` holds, of `account` or of every account (a
        run that ended). Never fails: a session gone has freed them already."""
        with self._lock:
            for each in [a for a, h in self._probers.items() if h is holder]:
                if account is not None and each != account:
                    continue
                del self._probers[each]
                if self._connection is not None and not self._connection.closed:
                    with contextlib.suppress(psycopg.Error):
                        self._connection.execute(
                            "SELECT pg_advisory_unlock(hashtextextended(%s, 0))",
                            (f"probe:{each}",),
                        )

    def news(self, timeout: float) -> list[tuple[str, int | None]]:
        """The publications announced within `timeout` seconds, as (account, seq; None:
        a payload this claudeloop cannot read): the listener is read by one thread only.
        BoardUnavailable when it cannot listen, and once when it listens on a session
        that is not the one it listened on (what came between was not heard)."""
        with self._lock:
            try:
                connection = self._session()
                if self._listening is not connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    again = self._listening is not None
                    self._listening = connection
                    if again:
                        raise BoardUnavailable("capacity board: listening again")
                announced = list(connection.notifies(timeout=0))  # heard by other calls
            except psycopg.Error as error:
                self._drop()
                raise BoardUnavailable(f"capacity board: {_said(error)}") from None
        if announced:
            return [_announced(notice.payload) for notice in announced]
        # Waited for without the session: the other threads' calls go on meanwhile, and
        # what arrives while one of them holds it is kept for the next collection.
        with contextlib.suppress(OSError, ValueError):
            select.select([connection.fileno()], [], [], timeout)
        with self._lock:
            if connection is not self._connection:
                return []  # dropped meanwhile: the next call says so
            try:
                announced = list(connection.notifies(timeout=0))
            except psycopg.Error as error:
                self._drop()
                raise BoardUnavailable(f"capacity board: {_said(error)}") from None
        return [_announced(notice.payload) for notice in announced]

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _publish(
        self,
        account: str,
        *,
        values: tuple[int, str, Source, Standing, TurnSignals, str | None, str],
        unless: Callable[[Sighting | None], bool],
        patience: float,
    ) -> Sighting | None:
        connection = self._session()
        pid, writer, source, standing, signals, run_id, host = values
        payload = json.dumps(signals_to_dict(signals), sort_keys=True)
        # 0 means "wait forever" to PostgreSQL; one attempt is a millisecond here.
        wait_ms = max(1, round(patience * 1000))
        row_values = (pid, writer, source, standing, payload, run_id, host, account)
        while True:
            with connection.transaction():
                connection.execute(f"SET LOCAL lock_timeout = {wait_ms}")
                row = connection.execute(
                    f"SELECT {_COLUMNS} FROM {TABLE} WHERE account = %s FOR UPDATE", (account,)
                ).fetchone()
                if unless(_sighting(row) if row is not None else None):
                    return None
                if row is None:
                    # Two first publications race to insert: the loser goes round again
                    # and finds the winner's row to lock.
                    written = connection.execute(
                        f"INSERT INTO {TABLE} (seq, at, pid, writer, source, standing, "
                        "signals, run_id, host, account) VALUES (1, clock_timestamp(), %s, "
                        f"%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (account) DO NOTHING "
                        f"RETURNING {_COLUMNS}",
                        row_values,
                    ).fetchone()
                else:
                    written = connection.execute(
                        f"UPDATE {TABLE} SET seq = seq + 1, at = clock_timestamp(), pid = %s,"
                        " writer = %s, source = %s, standing = %s, signals = %s, run_id = %s,"
                        f" host = %s WHERE account = %s RETURNING {_COLUMNS}",
                        row_values,
                    ).fetchone()
                if written is None:
                    continue
                connection.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{account}:{written[0]}"))
                return _sighting(written)

    def _session(self) -> psycopg.Connection[Any]:
        if self._connection is None or self._connection.closed:
            self._probers.clear()  # a session of before held them; it freed them ending
            ensure_schema(self._dsn)
            try:
                self._connection = _connect(self._dsn, autocommit=True)
            except psycopg.Error as error:
                raise BoardUnavailable(f"capacity board: {_said(error)}") from None
        return self._connection

    def _drop(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(psycopg.Error):
                self._connection.close()
        self._connection = None
        self._probers.clear()


# Each account's last sighting, as `status --engine` shows the fleet's accounts (read by
# the fleet's own connection: adapters/fleet/leases.py).
EVERY_ACCOUNT = (
    f"SELECT account, standing, at, source, writer, signals FROM {TABLE} ORDER BY account"
)


def account_capacity(row: tuple[Any, ...]) -> AccountCapacity:
    """A row of EVERY_ACCOUNT, as the fleet's overview shows it."""
    account, standing, at, source, writer, signals = row
    resets = signals.get("resets_at") if isinstance(signals, dict) else None
    return AccountCapacity(
        str(account),
        str(standing),
        at.astimezone(UTC).isoformat() if hasattr(at, "astimezone") else str(at),
        str(source),
        str(writer),
        str(resets) if resets else None,
    )


def _announced(payload: str) -> tuple[str, int | None]:
    """A NOTIFY's payload (`account:seq`) as (account, seq); seq None when it is not a
    number (the record is read to tell)."""
    named, _, seq = payload.rpartition(":")
    return (named, int(seq)) if seq.isdigit() else (named, None)


def _connect(dsn: str, *, autocommit: bool) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_SECONDS)


def _sighting(row: tuple[Any, ...]) -> Sighting | None:
    seq, at, pid, writer, source, standing, signals, run_id, host = row
    try:
        return Sighting(
            seq=int(seq),
            at=cast(datetime, at),
            pid=int(pid),
            writer=str(writer),
            source=source,
            standing=standing,
            signals=signals_from_dict(signals if isinstance(signals, dict) else {}),
            run_id=None if run_id is None else str(run_id),
            host=None if host is None else str(host),
        )
    except (ValueError, TypeError, KeyError):  # DecodeError is a ValueError
        return None


def _said(error: psycopg.Error) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:300] if lines else type(error).__name__
