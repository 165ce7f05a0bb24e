"""The fleet's queue as seen from outside a worker: set it up, add a run, list, cancel.

A run in the queue is an `Order` under its run id, kept by the queue's engine in its
database (queue_engine.py, the port; DBOS today), and by claudeloop's own table of the
queue beside it (leases.py), which is what listing reads: none of this needs a worker
to be running, and listing never loads the engine.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from claudeloop.adapters.fleet.engine import Engine, engine_error
from claudeloop.adapters.fleet.leases import FINISHED, Leases, QueueRow
from claudeloop.adapters.fleet.queue_engine import queue_engine
from claudeloop.adapters.private_file import make_private_directory
from claudeloop.application.codec import Codec, Shape
from claudeloop.application.errors import FleetUnavailable, UsageError
from claudeloop.application.ports import QueuedRun, RunIdTaken

if TYPE_CHECKING:
    from collections.abc import Iterator


@dataclass(frozen=True)
class Order:
    """What a worker needs to drive one run: where (a path, a checkout's name under
    the worker's work root, or a git repository and branch), the arguments of
    `claudeloop run` after its own name (without --cwd and --run-id), and the account
    it spends."""

    cwd: str
    arguments: list[str]
    account: str
    repo: str | None = None
    branch: str | None = None

    def to_json(self) -> dict[str, Any]:
        return cast(dict[str, Any], ORDER_CODEC.encode(self))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Order:
        """DecodeError (a ValueError) for an order that is not one."""
        return cast(Order, ORDER_CODEC.decode(data, cls, "order"))


# An order of before had neither a repository nor a branch: an order with none has the
# same shape as then (the queue's APPLICATION_VERSION pins it).
ORDER_CODEC = Codec(shapes={Order: Shape(sparse=frozenset({"repo", "branch"}))})


def init_schema(engine: Engine) -> None:
    """The engine's tables, the workers' leases, run records and queue, and on
    PostgreSQL the capacity board's; safe to repeat and to race (each is created under
    a lock). A fleet set up before claudeloop kept its queue has the runs its engine
    holds copied into it, once."""
    if engine.sqlite_file is not None:
        try:
            make_private_directory(engine.sqlite_file.parent)
            # Made owner-only before SQLite makes it (0644); its -wal and -shm take its mode.
            os.close(os.open(engine.sqlite_file, os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as error:
            raise FleetUnavailable(f"engine {engine.masked_url}: {error}") from None
    queued = queue_engine(engine)
    queued.set_up()
    with _leases(engine) as leases:
        kept = leases.keeps_its_queue()
        leases.ensure_schema()
        if not kept:
            leases.copy_into_queue(queued.held())
    if engine.kind == "postgresql":
        from claudeloop.adapters.shared_capacity.postgres_board import ensure_schema

        try:
            ensure_schema(engine.connect_url)
        except OSError as error:
            raise FleetUnavailable(f"engine {engine.masked_url}: {error}") from None


@contextlib.contextmanager
def _leases(engine: Engine, given: Leases | None = None) -> Iterator[Leases]:
    """The engine's tables (through `given` when there is one: a fleet's own connection),
    their database's errors FleetUnavailable."""
    leases = given if given is not None else Leases(engine)
    try:
        yield leases
    except (FleetUnavailable, UsageError, RunIdTaken, BrokenPipeError):
        raise
    except Exception as error:  # SQLAlchemy's errors, of either driver
        raise FleetUnavailable(f"engine {engine.masked_url}: {engine_error(error)}") from None
    finally:
        if given is None:
            leases.close()


def add(engine: Engine, run_id: str, order: Order) -> str:
    """Queue the run (a run id already in the queue is refused); returns its id."""
    init_schema(engine)  # a first `queue add` may race a first worker: both migrate
    queued = queue_engine(engine)
    data = order.to_json()
    with _leases(engine) as leases:
        leases.add_to_queue(
            run_id,
            json.dumps(data),
            order.account,
            lambda connection: queued.enqueue(connection, run_id, data, order.account),
        )
    return run_id


def runs(engine: Engine, leases: Leases | None = None) -> list[QueuedRun]:
    """Every run of the queue, oldest first (the schema exists); read through `leases`
    when given (a fleet's own connection), else through a connection of its own."""
    with _leases(engine, leases) as reader:
        _refuse_a_queue_of_before(engine, reader)
        return [_queued(row) for row in reader.queue_rows()]


def find(engine: Engine, run_id: str, leases: Leases | None = None) -> QueuedRun | None:
    """The run of the queue with this id; None when there is none (the schema exists)."""
    with _leases(engine, leases) as reader:
        _refuse_a_queue_of_before(engine, reader)
        found = reader.queue_rows(run_id)
    return _queued(found[0]) if found else None


def _refuse_a_queue_of_before(engine: Engine, leases: Leases) -> None:
    """A fleet set up by a claudeloop that kept no queue of its own is read once it is
    set up again (which copies the engine's runs into it), never from the engine's
    tables."""
    if not leases.keeps_its_queue():
        raise UsageError(
            f"engine {engine.masked_url}: set up by an older claudeloop; "
            "`claudeloop fleet init --engine URL` brings it up to date (its runs are kept)"
        )


def state_of(row: QueueRow) -> str:
    """A run's state in the user's words: queued, running, done, exit N, failed or
    cancelled."""
    if row.status == FINISHED:
        return "done" if row.exit_code == 0 else f"exit {row.exit_code}"
    return row.status


def _queued(row: QueueRow) -> QueuedRun:
    order = _order_in(row.order)
    return QueuedRun(
        run_id=row.run_id,
        state=state_of(row),
        cwd=order.cwd if order else "?",
        account=order.account if order else "?",
        worker=row.worker,
    )


def cancel(engine: Engine, run_id: str) -> QueuedRun | None:
    """Cancel the run: queued, it never starts; running, its worker stops it at the next
    safe point. Returns the run as it was, None when there is no such run (the schema
    exists). claudeloop's queue says it first: a worker never starts a run cancelled
    there, whatever the engine hands it."""
    before = find(engine, run_id)
    if before is not None and before.state in ("queued", "running"):
        with _leases(engine) as leases:
            leases.mark_cancelled(run_id)
        queue_engine(engine).cancel(run_id)
    return before


def _order_in(text: str) -> Order | None:
    """The order of a run's row; None when it is not one."""
    try:
        return Order.from_json(json.loads(text))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
