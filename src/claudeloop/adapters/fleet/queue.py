"""The fleet's queue as seen from outside a worker: set it up, add a run, list, cancel.

A run in the queue is an `Order` under its run id, kept by the queue's engine in its
database, so none of this needs a worker to be running. The engine is DBOS, reached
only through adapters/fleet/dbos_app.py, never on the path of `claudeloop run`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from claudeloop.adapters.fleet import dbos_app
from claudeloop.adapters.fleet.dbos_app import (
    APPLICATION,
    APPLICATION_VERSION,
    QUEUE,
    WORKFLOW,
    state_of,
)
from claudeloop.adapters.fleet.engine import Engine, engine_error
from claudeloop.adapters.private_file import make_private_directory
from claudeloop.application.codec import Codec, Shape
from claudeloop.application.errors import FleetUnavailable
from claudeloop.application.ports import QueuedRun

if TYPE_CHECKING:
    from claudeloop.adapters.fleet.leases import Leases

__all__ = [
    "APPLICATION",
    "APPLICATION_VERSION",
    "QUEUE",
    "WORKFLOW",
    "Order",
    "add",
    "cancel",
    "engine_error",
    "find",
    "init_schema",
    "runs",
    "state_of",
]
# The queue's client, as bench/fleet_cost.py names it.
_client = dbos_app.client


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
    """DBOS's tables, the workers' leases and run records, and on PostgreSQL the
    capacity board's; safe to repeat and to race (each is created under a lock)."""
    if engine.sqlite_file is not None:
        try:
            make_private_directory(engine.sqlite_file.parent)
            # Made owner-only before SQLite makes it (0644); its -wal and -shm take its mode.
            os.close(os.open(engine.sqlite_file, os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as error:
            raise FleetUnavailable(f"engine {engine.masked_url}: {error}") from None
    dbos_app.migrate(engine)
    from claudeloop.adapters.fleet.leases import Leases

    leases = Leases(engine)
    try:
        leases.ensure_schema()
    except Exception as error:  # SQLAlchemy's errors, of either driver
        raise FleetUnavailable(f"engine {engine.masked_url}: {engine_error(error)}") from None
    finally:
        leases.close()
    if engine.kind == "postgresql":
        from claudeloop.adapters.shared_capacity.postgres_board import ensure_schema

        try:
            ensure_schema(engine.connect_url)
        except OSError as error:
            raise FleetUnavailable(f"engine {engine.masked_url}: {error}") from None


def add(engine: Engine, run_id: str, order: Order) -> str:
    """Queue the run (a run id already in the queue is refused); returns its id."""
    init_schema(engine)  # a first `queue add` may race a first worker: both migrate
    dbos_app.enqueue(engine, run_id, order.to_json(), order.account)
    return run_id


def runs(engine: Engine, leases: Leases | None = None) -> list[QueuedRun]:
    """Every run of the queue, oldest first (the schema exists); read through `leases`
    when given (a fleet's own connection), else through a connection of its own."""
    return [_queued(workflow) for workflow in dbos_app.workflows(engine, leases)]


def find(engine: Engine, run_id: str, leases: Leases | None = None) -> QueuedRun | None:
    """The run of the queue with this id; None when there is none (the schema exists)."""
    found = dbos_app.workflows(engine, leases, run_id)
    return _queued(found[0]) if found else None


def _queued(workflow: dbos_app.Workflow) -> QueuedRun:
    order = _order_in(workflow.order)
    return QueuedRun(
        run_id=workflow.run_id,
        state=workflow.state,
        cwd=order.cwd if order else "?",
        account=order.account if order else "?",
        worker=workflow.worker,
    )


def cancel(engine: Engine, run_id: str) -> QueuedRun | None:
    """Cancel the run: queued, it never starts; running, its worker stops it at the next
    safe point. Returns the run as it was, None when there is no such run (the schema
    exists)."""
    before = find(engine, run_id)
    if before is not None and before.state in ("queued", "running"):
        dbos_app.cancel(engine, run_id)
    return before


def _order_in(order: Any) -> Order | None:
    """The order of a run's workflow argument; None when it is not one."""
    try:
        return Order.from_json(order)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
