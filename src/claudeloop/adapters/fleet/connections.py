"""The two ways the fleet reaches its engine's database, behind one small surface that
adapters/fleet/leases.py runs its statements on (SQL with `:name` parameters):

- `Pooled`: a SQLAlchemy pool, a worker's (DBOS takes turns on it too);
- `Single`: one plain DB-API connection (sqlite3, psycopg) for the commands that look
  or ask (`status --engine`, `queue ls`, `stop --engine`, the dashboard), which then
  start without importing SQLAlchemy: about half a second of each call.

A statement's result is read at once: the rows it returned and how many it changed.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import sqlalchemy as sa

    from claudeloop.adapters.fleet.engine import Engine

# `:name`, but neither a cast (`x::bigint`) nor part of a word.
_PARAMETER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@dataclass(frozen=True)
class Result:
    """What a statement returned (its rows) and changed (its row count)."""

    rows: Sequence[Sequence[Any]]
    rowcount: int

    def fetchall(self) -> list[Sequence[Any]]:
        return list(self.rows)

    def first(self) -> Sequence[Any] | None:
        return self.rows[0] if self.rows else None

    def scalar_one(self) -> Any:
        (row,) = self.rows
        return row[0]

    def __iter__(self) -> Iterator[Sequence[Any]]:
        return iter(self.rows)


class Transaction(Protocol):
    def execute(self, statement: str, values: Mapping[str, Any] | None = None) -> Result: ...

    @property
    def connection(self) -> Any:
        """What the transaction runs on (SQLAlchemy's connection, on a pool), for the
        queue's engine to write its own rows in the same transaction."""
        ...


class Database(Protocol):
    kind: str

    def begin(self) -> contextlib.AbstractContextManager[Transaction]: ...

    def has_table(self, name: str) -> bool: ...

    def columns(self, table: str) -> set[str]: ...

    def run(self, statement: str) -> None:
        """A statement outside any transaction (a PRAGMA, a DDL of SQLite's)."""

    def close(self) -> None: ...


class Pooled:
    """A pool of SQLAlchemy connections (`engine` names the URL and its options)."""

    def __init__(self, kind: str, engine: sa.Engine) -> None:
        import sqlalchemy

        self.kind = kind
        self.engine = engine
        self._sa = sqlalchemy

    @contextlib.contextmanager
    def begin(self) -> Iterator[Transaction]:
        with self.engine.begin() as connection:
            yield _PooledTransaction(connection, self._sa)

    def has_table(self, name: str) -> bool:
        return bool(self._sa.inspect(self.engine).has_table(name))

    def columns(self, table: str) -> set[str]:
        return {each["name"] for each in self._sa.inspect(self.engine).get_columns(table)}

    def run(self, statement: str) -> None:
        with self.engine.connect() as connection:
            connection.exec_driver_sql(statement)
            connection.commit()

    def close(self) -> None:
        self.engine.dispose()


class _PooledTransaction:
    def __init__(self, connection: sa.Connection, sqlalchemy: Any) -> None:
        self._connection = connection
        self._sa = sqlalchemy

    @property
    def connection(self) -> sa.Connection:
        return self._connection

    def execute(self, statement: str, values: Mapping[str, Any] | None = None) -> Result:
        done = self._connection.execute(self._sa.text(statement), dict(values or {}))
        rows = [tuple(row) for row in done.fetchall()] if done.returns_rows else []
        return Result(rows, done.rowcount)


class Single:
    """One connection, made when first asked for and again after it broke; threads
    take turns on it (the dashboard's do), a transaction at a time."""

    def __init__(self, engine: Engine, *, busy_seconds: float) -> None:
        self.kind: str = engine.kind
        self._engine = engine
        self._busy = busy_seconds
        self._lock = threading.Lock()
        self._connection: Any = None

    @contextlib.contextmanager
    def begin(self) -> Iterator[Transaction]:
        with self._lock:
            connection = self._connected()
            if self.kind == "postgresql":
                with connection.transaction():
                    yield _SingleTransaction(connection, postgresql=True)
                return
            connection.execute("BEGIN")
            try:
                yield _SingleTransaction(connection, postgresql=False)
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def has_table(self, name: str) -> bool:
        if self.kind == "postgresql":
            found = "SELECT to_regclass(:name) IS NOT NULL"
        else:
            found = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = :name"
        with self.begin() as c:
            return bool(c.execute(found, {"name": name}).scalar_one())

    def columns(self, table: str) -> set[str]:
        if self.kind == "postgresql":
            listed = (
                "SELECT column_name FROM information_schema.columns WHERE table_name = :name"
                " AND table_schema = current_schema()"
            )
            with self.begin() as c:
                return {str(row[0]) for row in c.execute(listed, {"name": table})}
        with self.begin() as c:
            return {str(row[1]) for row in c.execute(f"PRAGMA table_info({table})")}

    def run(self, statement: str) -> None:
        with self._lock:
            self._connected().execute(statement)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                with contextlib.suppress(Exception):
                    self._connection.close()
            self._connection = None

    def _connected(self) -> Any:
        if self._connection is not None and not _broken(self._connection):
            return self._connection
        if self.kind == "postgresql":
            import psycopg

            self._connection = psycopg.connect(self._engine.connect_url, autocommit=True)
        else:
            path = self._engine.sqlite_file
            assert path is not None
            self._connection = sqlite3.connect(
                path, timeout=self._busy, isolation_level=None, check_same_thread=False
            )
        return self._connection


def _broken(connection: Any) -> bool:
    return bool(getattr(connection, "closed", False) or getattr(connection, "broken", False))


class _SingleTransaction:
    def __init__(self, connection: Any, *, postgresql: bool) -> None:
        self._connection = connection
        self._postgresql = postgresql

    @property
    def connection(self) -> Any:
        return self._connection

    def execute(self, statement: str, values: Mapping[str, Any] | None = None) -> Result:
        if self._postgresql and values:
            # psycopg's parameters are %(name)s; a literal % is written twice.
            statement = _PARAMETER.sub(r"%(\1)s", statement.replace("%", "%%"))
        cursor = self._connection.execute(statement, dict(values) if values else ())
        rows = [tuple(row) for row in cursor.fetchall()] if cursor.description else []
        return Result(rows, cursor.rowcount)
