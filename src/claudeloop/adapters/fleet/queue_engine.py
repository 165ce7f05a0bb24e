"""The queue's engine, as the fleet asks it: the one port between the fleet and the
durable queue it runs on (DBOS Transact today, adapters/fleet/dbos_app.py).

The engine keeps the runs queued, hands each to one worker at a time within the
worker's and the account's limits, and runs it again when its worker dies. What the
commands that look need (which runs, in which state, under which worker) claudeloop
keeps in its own table (claudeloop_queue, leases.py), so nothing reads the engine's
tables, and the engine is asked only through its public API.

Another engine (Procrastinate, Temporal's Python SDK) is one module that implements
`QueueEngine`; here, the line of `queue_engine` that makes it and its package's name;
and in pyproject.toml, the package in the `fleet` extra and the import contract that
keeps it in that module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import sqlalchemy as sa

    from claudeloop.adapters.fleet.engine import Engine
    from claudeloop.adapters.fleet.leases import QueueRow
    from claudeloop.adapters.fleet.worker_settings import WorkerSettings


# The package the engine is (the `fleet` extra installs it), and its name for people.
ENGINE_PACKAGE, ENGINE_NAME = "dbos", "DBOS"


def engine_installed() -> bool:
    """Whether the engine's package is installed, asked without importing it."""
    import importlib.util

    return importlib.util.find_spec(ENGINE_PACKAGE) is not None


class QueueEngine(Protocol):
    """A durable queue of runs in the engine's database."""

    # The queue's client: no worker need be running.

    def set_up(self) -> None:
        """The engine's own tables; safe to repeat and to race. FleetUnavailable."""
        ...

    def held(self) -> list[QueueRow]:
        """Every run the engine holds, in claudeloop's words: copied once into
        claudeloop's table of the queue, on a fleet set up before it kept one."""
        ...

    def enqueue(self, connection: Any, run_id: str, order: dict[str, Any], account: str) -> None:
        """The run queued, in the transaction `connection` (SQLAlchemy's, on the
        engine's database) writes claudeloop's own row in; its account is the
        partition its per-account limit counts in. RunIdTaken for an id already
        queued."""
        ...

    def cancel(self, run_id: str) -> None:
        """The run never started by the engine (a run already started is stopped by its
        worker, which reads claudeloop's table)."""
        ...

    # A worker's: one per process.

    def configure(
        self,
        settings: WorkerSettings,
        pool: sa.Engine | None,
        drive: Callable[[str, dict[str, Any]], int],
    ) -> None:
        """This process as a worker of the queue, not taking runs yet: each run it takes
        is driven by `drive(run id, order)`, whose exit code is its result. `pool`: the
        connections the engine takes turns on with the leases (None: its own)."""
        ...

    def launch(self, settings: WorkerSettings) -> None:
        """Take runs: `slots` at once and `per_account` per account, this worker's own
        unfinished runs first. FleetUnavailable."""
        ...

    def per_account(self) -> int | None:
        """The runs of one account the queue lets run at once, as set now (by the worker
        started last; None: no limit); the database's errors as they come."""
        ...

    def hand_back(self, workers: list[str]) -> list[str]:
        """The runs these dead workers had taken, back in the queue for any live worker;
        their ids."""
        ...

    def held_by(self, run_id: str, worker: str) -> bool:
        """Whether the engine still counts the run as taken by `worker` (not handed back
        yet); the database's errors as they come."""
        ...


def queue_engine(engine: Engine) -> QueueEngine:
    """The queue's engine on the database `engine` names: the fleet's one line of
    wiring for it (imported when asked: the commands that look never load it)."""
    from claudeloop.adapters.fleet.dbos_app import DbosQueue

    return DbosQueue(engine)
