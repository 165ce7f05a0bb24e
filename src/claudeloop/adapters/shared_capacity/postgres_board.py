"""The capacity board of a fleet: one row per account in PostgreSQL, shared by every
machine that runs loops on the account.

The same port as the file board (`application.ports.CapacityBoard`), with the
database doing what the file board does with `flock`:

- a publication reads and replaces the account's row under a row lock (`SELECT ... FOR
  UPDATE`), so no sequence number is taken twice and none is lost;
- the row is stamped with the database's clock, one clock for every machine;
- the probe right is a session advisory lock held on a connection of its own: the
  server drops it when the holder's connection ends, so a dead prober is taken over;
- every publication is announced with NOTIFY, and `wait_for_news` LISTENs, so a loop
  waiting on another machine hears of a probe's result at once instead of polling.

Imported only by the fleet (psycopg is the `fleet` extra). Like the file board it is
never fatal: a read that fails reads as no record, a failed write raises OSError.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import psycopg
import psycopg.errors

from claudeloop.adapters.shared_capacity.record import (
    LOCK_PATIENCE_SECONDS,
    BoardBusy,
    process_alive,
    signals_from_dict,
    signals_to_dict,
    this_host,
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


class PostgresProbeLock:
    """The probe right: an advisory lock held by a connection of its own."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self._connection: psycopg.Connection[Any] | None = connection

    def release(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            # Closing the session releases its advisory locks; no unlock round trip.
            with contextlib.suppress(psycopg.Error):
                connection.close()


class PostgresCapacityBoard:
    """The record of one account (`account`: `account_key`, never a credential)."""

    def __init__(self, dsn: str, account: str) -> None:
        self._dsn = dsn
        self.account = account
        self._connection: psycopg.Connection[Any] | None = None
        self._listener: psycopg.Connection[Any] | None = None
        self._read_seq = 0  # the newest record's number this board has read

    def read(self) -> Sighting | None:
        try:
            row = (
                self._session()
                .execute(f"SELECT {_COLUMNS} FROM {TABLE} WHERE account = %s", (self.account,))
                .fetchone()
            )
        except (psycopg.Error, BoardUnavailable):
            self._drop()
            return None
        sighting = _sighting(row) if row is not None else None
        if sighting is not None:
            self._read_seq = max(self._read_seq, sighting.seq)
        return sighting

    def publish(
        self,
        *,
        signals: TurnSignals,
        standing: Standing,
        source: Source,
        writer: str,
        now: datetime,  # noqa: ARG002 (the database's clock stamps the record)
        run_id: str | None = None,
        unless: Callable[[Sighting | None], bool] = lambda _current: False,
        patience: float = LOCK_PATIENCE_SECONDS,
    ) -> Sighting | None:
        try:
            return self._publish(
                signals,
                standing,
                source,
                writer=writer,
                run_id=run_id,
                unless=unless,
                patience=patience,
            )
        except psycopg.errors.LockNotAvailable:
            self._drop()
            raise BoardBusy(
                f"capacity board: the record of {self.account} was locked by another "
                f"writer for over {patience:g}s"
            ) from None
        except psycopg.Error as error:
            self._drop()
            raise BoardUnavailable(f"capacity board: {_said(error)}") from None

    def writer_alive(self, sighting: Sighting) -> bool | None:
        """Whether its writer still runs, told only of a process of this machine: of
        another machine's (or a record of old, that names none) nothing is known here."""
        if sighting.host is None or sighting.host != this_host():
            return None
        return process_alive(sighting.pid)

    def try_probe_lock(self) -> PostgresProbeLock | None:
        try:
            connection = _connect(self._dsn, autocommit=True)
        except psycopg.Error as error:
            raise BoardUnavailable(f"capacity board: {_said(error)}") from None
        try:
            row = connection.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (f"probe:{self.account}",)
            ).fetchone()
        except psycopg.Error as error:
            connection.close()
            raise BoardUnavailable(f"capacity board: {_said(error)}") from None
        if row is None or not row[0]:
            connection.close()
            return None
        return PostgresProbeLock(connection)

    def wait_for_news(self, after_seq: int, timeout: float) -> Sighting | None:
        """The first record newer than `after_seq`, as soon as one is published (from
        any machine), or None after `timeout` seconds. The record is read when a
        publication of this account is announced (and once as the LISTEN begins, for
        one published before it), not at every call: a waiting loop asks the database
        nothing while nothing happens."""
        deadline = time.monotonic() + timeout
        try:
            # Read when the LISTEN begins, or when this board has read a record newer than
            # the caller knows of (another call's news).
            check = self._listener is None or self._listener.closed or self._read_seq > after_seq
            listener = self._listening()
            while True:
                if check:
                    latest = self.read()
                    if latest is not None and latest.seq > after_seq:
                        return latest
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                check = False
                for notice in listener.notifies(timeout=remaining, stop_after=1):
                    check = _announces(notice.payload, self.account, after_seq)
        except (psycopg.Error, BoardUnavailable):
            self._drop()
            return None

    def close(self) -> None:
        self._drop()

    def _publish(
        self,
        signals: TurnSignals,
        standing: Standing,
        source: Source,
        *,
        writer: str,
        run_id: str | None,
        unless: Callable[[Sighting | None], bool],
        patience: float,
    ) -> Sighting | None:
        connection = self._session()
        payload = json.dumps(signals_to_dict(signals), sort_keys=True)
        # 0 means "wait forever" to PostgreSQL; one attempt is a millisecond here.
        wait_ms = max(1, round(patience * 1000))
        while True:
            with connection.transaction():
                connection.execute(f"SET LOCAL lock_timeout = {wait_ms}")
                row = connection.execute(
                    f"SELECT {_COLUMNS} FROM {TABLE} WHERE account = %s FOR UPDATE",
                    (self.account,),
                ).fetchone()
                current = _sighting(row) if row is not None else None
                if unless(current):
                    return None
                values = (
                    os.getpid(),
                    writer,
                    source,
                    standing,
                    payload,
                    run_id,
                    this_host(),
                    self.account,
                )
                if current is None:
                    # Two first publications race to insert: the loser goes round again
                    # and finds the winner's row to lock.
                    written = connection.execute(
                        f"INSERT INTO {TABLE} (seq, at, pid, writer, source, standing, "
                        "signals, run_id, host, account) VALUES (1, clock_timestamp(), %s, "
                        f"%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (account) DO NOTHING "
                        f"RETURNING {_COLUMNS}",
                        values,
                    ).fetchone()
                else:
                    written = connection.execute(
                        f"UPDATE {TABLE} SET seq = seq + 1, at = clock_timestamp(), pid = %s,"
                        " writer = %s, source = %s, standing = %s, signals = %s, run_id = %s,"
                        f" host = %s WHERE account = %s RETURNING {_COLUMNS}",
                        values,
                    ).fetchone()
                if written is None:
                    continue
                connection.execute(
                    "SELECT pg_notify(%s, %s)", (CHANNEL, f"{self.account}:{written[0]}")
                )
                return _sighting(written)

    def _session(self) -> psycopg.Connection[Any]:
        if self._connection is None or self._connection.closed:
            ensure_schema(self._dsn)
            try:
                self._connection = _connect(self._dsn, autocommit=True)
            except psycopg.Error as error:
                raise BoardUnavailable(f"capacity board: {_said(error)}") from None
        return self._connection

    def _listening(self) -> psycopg.Connection[Any]:
        if self._listener is None or self._listener.closed:
            self._listener = _connect(self._dsn, autocommit=True)
            self._listener.execute(f"LISTEN {CHANNEL}")
        return self._listener

    def _drop(self) -> None:
        for connection in (self._connection, self._listener):
            if connection is not None:
                with contextlib.suppress(psycopg.Error):
                    connection.close()
        self._connection = self._listener = None


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


def _announces(payload: str, account: str, after_seq: int) -> bool:
    """Whether a NOTIFY's payload (`account:seq`) tells of a record of `account` newer
    than `after_seq` (one it cannot read: it may, the record is read to tell)."""
    named, _, seq = payload.rpartition(":")
    if not seq.isdigit():
        return True
    return named == account and int(seq) > after_seq


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
