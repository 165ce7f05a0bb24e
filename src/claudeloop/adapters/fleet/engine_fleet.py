"""The `Fleet` port on an engine's database: the queue (adapters/fleet/queue.py, on
its engine, DBOS), and the tables of leases, run records, controls and the queue as
claudeloop keeps it (leases.py).

A stored record is read where it lies, in memory: nothing is unpacked to disk, and
nothing is set up by reading. Only `set_up` and `enqueue` create the schema.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

from claudeloop.adapters.fleet import queue, run_archive
from claudeloop.adapters.fleet.engine import Engine, engine_error
from claudeloop.adapters.fleet.leases import Leases, StoredRow, SummaryRow
from claudeloop.adapters.run_directory.codec import CorruptRecordError, record_from_json
from claudeloop.adapters.run_directory.control import steer_to_json
from claudeloop.application.errors import FleetUnavailable, UsageError
from claudeloop.application.ports import (
    AccountCapacity,
    QueuedRun,
    StoredRun,
    StoredSummary,
)
from claudeloop.application.summary import run_summary
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.steering import Steer


class EngineFleet:
    """A fleet in the database `engine` names (a SQLite file, or PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._made: Leases | None = None

    @property
    def masked_url(self) -> str:
        return self.engine.masked_url

    @contextlib.contextmanager
    def _leases(self) -> Iterator[Leases]:
        """The engine's leases and records, on one plain connection for the fleet's life
        (a command asks several things of it; the dashboard, again and again); a
        failure of the database is FleetUnavailable."""
        try:
            if self._made is None:
                self._made = Leases(self.engine, pooled=False)  # no SQLAlchemy to import
            yield self._made
        except (FleetUnavailable, UsageError, BrokenPipeError):  # a closed output is ours
            raise
        except Exception as error:  # the driver's errors (sqlite3's, psycopg's)
            raise FleetUnavailable(f"engine {self.masked_url}: {engine_error(error)}") from None

    def exists(self) -> bool:
        path = self.engine.sqlite_file
        if path is not None and not path.exists():
            return False  # asked before anything made it: SQLite would make the file
        with self._leases() as leases:
            return leases.set_up_already()

    def set_up(self) -> None:
        queue.init_schema(self.engine)

    def enqueue(
        self,
        run_id: str,
        cwd: str,
        arguments: list[str],
        account: str,
        *,
        repo: str | None = None,
        branch: str | None = None,
    ) -> None:
        queue.add(self.engine, run_id, queue.Order(cwd, arguments, account, repo, branch))

    def queue(self) -> list[QueuedRun]:
        with self._leases() as leases:
            return queue.runs(self.engine, leases)

    def queued(self, run_id: str) -> QueuedRun | None:
        with self._leases() as leases:
            return queue.find(self.engine, run_id, leases)

    def cancel(self, run_id: str) -> QueuedRun | None:
        return queue.cancel(self.engine, run_id)

    def stored(self, run_id: str) -> StoredRun | None:
        with self._leases() as leases:
            row = leases.stored(run_id)
        return None if row is None else _stored(row)

    def summaries(self) -> dict[str, StoredSummary]:
        with self._leases() as leases:
            rows = leases.summaries()
        return {run_id: _summed_up(row) for run_id, row in rows.items()}

    def event_lines(self, run_id: str) -> list[bytes]:
        with self._leases() as leases:
            row = leases.stored(run_id)
        if row is None or row.record is None:
            return []
        content = _member(row.record, "events.jsonl") or b""
        return [line for line in content.splitlines(keepends=True) if line.endswith(b"\n")]

    def capacity(self) -> list[AccountCapacity]:
        with self._leases() as leases:
            return leases.capacity()

    def ask(self, run_id: str, command: ControlCommand) -> None:
        with self._leases() as leases:
            leases.ask(run_id, command.value)

    def steer(self, run_id: str, asked: Steer) -> None:
        with self._leases() as leases:
            leases.request(run_id, steer_to_json(asked))


_member = run_archive.member_of


def _stored(row: StoredRow) -> StoredRun:
    if row.record is None:
        return StoredRun(row.holder, row.phase, None)
    state = _member(row.record, "state.json")
    try:
        data = json.loads(state) if state is not None else None
        if not isinstance(data, dict):
            raise CorruptRecordError("not a JSON object")
        return StoredRun(row.holder, row.phase, record_from_json(data))
    except (ValueError, CorruptRecordError):
        return StoredRun(row.holder, row.phase, None, readable=False)


def _summed_up(row: SummaryRow) -> StoredSummary:
    """A row's summary; a row stored before summaries were kept, summed up from its
    record."""
    if row.summary is not None:
        summary = run_archive.summary_in(row.summary)
        return StoredSummary(row.holder, row.phase, summary, readable=summary is not None)
    if row.record is None:
        return StoredSummary(row.holder, row.phase, None)
    stored = _stored(StoredRow(0, row.holder, None, row.phase, row.record, None))
    summary = run_summary(stored.record) if stored.record is not None else None
    return StoredSummary(row.holder, row.phase, summary, readable=stored.readable)
