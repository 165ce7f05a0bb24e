"""The fleet's one door to DBOS Transact: no other module imports `dbos`, or reads its
tables (tests/adapters/fleet/test_one_door.py keeps it so).

A run in the fleet's queue is a DBOS workflow whose id is the run id, in the engine's
database. What is here:

- the queue's client: DBOS's tables made (`migrate`), a run enqueued or cancelled
  (`DBOSClient`, so no worker need be running);
- the worker's DBOS app: its workflow and step, its queue, launched (`configure`,
  `launch`), and what it asks of DBOS once launched;
- what DBOS offers no public way to do, each behind a named function, and pinned for the
  DBOS version we lock by the contract tests (tests/contract/test_dbos_recovery.py and
  tests/contract/test_dbos_tables.py, which `make canary` runs):
  - `recover_pending`: a dead worker's pending runs handed back to the queue
    (`DBOS._recover_pending_workflows`, what DBOS's admin API does for another
    executor's id). The public `DBOS.resume_workflow` is not it: it would also resume a
    run cancelled meanwhile, and re-enqueue one a live worker already took;
  - `workflows`, `decoded` and `cancelled_among`: DBOS's table of workflows read with
    plain SQL. The public `DBOSClient.list_workflows` reads the same, but the commands
    that only look (`status --engine`, `queue ls`, the dashboard) would import DBOS and
    make a client, half a second of each call; and a worker asks which of its runs were
    cancelled in the one statement it asks its own tables with, once a second.

DBOS itself is imported inside the functions that need it: `claudeloop run`, and the
commands that only look, never load it.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import logging
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from claudeloop.adapters.fleet.engine import Engine, engine_error
from claudeloop.application.errors import FleetUnavailable
from claudeloop.application.ports import RunIdTaken

if TYPE_CHECKING:
    import sqlalchemy as sa
    from dbos import DBOSClient

    from claudeloop.adapters.fleet.leases import Leases
    from claudeloop.adapters.fleet.worker_settings import WorkerSettings

APPLICATION = "claudeloop"
WORKFLOW = "claudeloop.run"
QUEUE = "claudeloop-runs"
# Pinned, not DBOS's hash of the code: a worker of a newer claudeloop must still
# recover the runs an older one left unfinished. Bump it when an order's shape changes.
APPLICATION_VERSION = "fleet-1"
# DBOS's tables: in the schema `dbos` on PostgreSQL, unqualified in SQLite.
DBOS_SCHEMA = {"postgresql": "dbos.", "sqlite": ""}
# How often DBOS looks in the queue for a run to start (its default is each second):
# each look is two or three commits (the queue's settings, its accounts, a dequeue), a
# worker's largest cost while it waits, and a run queued starts this much later at most.
_QUEUE_POLL_SECONDS = 2.0


@contextlib.contextmanager
def quiet_dbos() -> Iterator[None]:
    """DBOS logs its failures with tracebacks; ours end in one line instead."""
    logger = logging.getLogger("dbos")
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was


def migrate(engine: Engine) -> None:
    """DBOS's own tables in the engine's database; safe to repeat and to race."""
    from dbos import DBOS

    with quiet_dbos():
        try:
            DBOS.migrate(engine.connect_url)
        except Exception as error:  # DBOS and SQLAlchemy raise many kinds
            raise FleetUnavailable(f"engine {engine.masked_url}: {engine_error(error)}") from None


# The queue's client


@contextlib.contextmanager
def client(engine: Engine) -> Iterator[DBOSClient]:
    """DBOS's client of the engine's queue; its failures are FleetUnavailable."""
    from dbos import DBOSClient

    with quiet_dbos():
        try:
            made = DBOSClient(
                system_database_url=engine.connect_url,
                application_name=APPLICATION,
                retry_connection_errors=False,
            )
        except Exception as error:
            raise FleetUnavailable(f"engine {engine.masked_url}: {engine_error(error)}") from None
        try:
            yield made
        except (FleetUnavailable, RunIdTaken, BrokenPipeError):  # a closed output is ours
            raise
        except Exception as error:
            raise FleetUnavailable(f"engine {engine.masked_url}: {engine_error(error)}") from None
        finally:
            made.destroy()


def enqueue(engine: Engine, run_id: str, order: dict[str, Any], account: str) -> None:
    """The run's workflow in the queue, its account the partition its per-account limit
    counts in; RunIdTaken for a run id already in the queue."""
    from dbos import error as dbos_errors

    with client(engine) as queue:
        try:
            queue.enqueue(
                {
                    "workflow_name": WORKFLOW,
                    "queue_name": QUEUE,
                    "workflow_id": run_id,
                    # Refused in the same statement that would take it: no race.
                    "workflow_id_reuse_policy": "reject",
                    "queue_partition_key": account,
                    "application_name": APPLICATION,
                },
                order,
            )
        except dbos_errors.DBOSWorkflowIDInUseError:
            raise RunIdTaken(run_id) from None


def cancel(engine: Engine, run_id: str) -> None:
    """The run's workflow cancelled: queued, it never starts; running, its worker hears
    it (`cancelled_among`) and stops it at the next safe point."""
    with client(engine) as queue:
        queue.cancel_workflow(run_id)


# DBOS's table of workflows, read without DBOS


@dataclass(frozen=True)
class Workflow:
    """A run's workflow as DBOS's table holds it, in the queue's words."""

    run_id: str
    state: str  # queued, running, done, exit N, cancelled, failed
    worker: str | None  # its executor, once a worker took it
    order: Any  # the workflow's one argument, decoded (None: unreadable)


# What `DBOSClient.list_workflows(name=WORKFLOW)` reads. An input or output moved to its
# own table (DBOS 3 keeps them there) is read from it, else from the status row.
_WORKFLOWS = """
SELECT s.workflow_uuid, s.status, s.executor_id, COALESCE(i.inputs, s.inputs),
       COALESCE(o.output, s.output), s.serialization
FROM {schema}workflow_status s
LEFT JOIN {schema}workflow_input i ON i.workflow_uuid = s.workflow_uuid
LEFT JOIN {schema}workflow_output o ON o.workflow_uuid = s.workflow_uuid
WHERE s.name = :name AND (s.application_name = :application OR s.application_name IS NULL)
"""


def workflows(engine: Engine, leases: Leases | None, run_id: str | None = None) -> list[Workflow]:
    """The queue's runs, oldest first (or the one `run_id`), read through `leases` when
    given (a fleet's own connection), else through a connection of its own."""
    from claudeloop.adapters.fleet.leases import Leases

    statement = _WORKFLOWS.format(schema=DBOS_SCHEMA[engine.kind])
    statement += " AND s.workflow_uuid = :run_id" if run_id is not None else ""
    reader = leases if leases is not None else Leases(engine)
    try:
        rows = reader.read(
            statement + " ORDER BY s.created_at, s.workflow_uuid",
            name=WORKFLOW,
            application=APPLICATION,
            run_id=run_id,
        )
    except Exception as error:  # SQLAlchemy's errors, of either driver
        raise FleetUnavailable(f"engine {engine.masked_url}: {engine_error(error)}") from None
    finally:
        if leases is None:
            reader.close()
    return [_workflow(row) for row in rows]


def _workflow(row: Any) -> Workflow:
    run_id, status, executor, inputs, output, serialization = row
    arguments = decoded(inputs, serialization)
    if isinstance(arguments, dict) and "positionalArgs" in arguments:  # portable JSON
        arguments = {"args": arguments["positionalArgs"]}
    try:
        order = arguments["args"][0]
    except (TypeError, KeyError, IndexError):
        order = None
    return Workflow(
        run_id=str(run_id),
        state=state_of(str(status), decoded(output, serialization)),
        worker=executor if status != "ENQUEUED" else None,
        order=order,
    )


def state_of(status: str, output: Any) -> str:
    """A run's state in the user's words, from DBOS's status and the child's exit code."""
    match status:
        case "ENQUEUED" | "DELAYED":
            return "queued"
        case "PENDING":
            return "running"
        case "SUCCESS":
            return "done" if output == 0 else f"exit {output}"
        case "CANCELLED":
            return "cancelled"
        case _:
            return "failed"


class _PlainValues(pickle.Unpickler):
    """DBOS's default serialization is a pickle: of an order (a dict of lists and
    strings) and an exit code, which name no class. One that names a class is not
    ours and is not loaded (loading it could run any code)."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"{module}.{name} is not a plain value")


def decoded(text: str | None, serialization: str | None) -> Any:
    """A value as DBOS serialized it ("portable_json", else a base64 pickle); None for
    one that cannot be read."""
    if text is None:
        return None
    try:
        if serialization == "portable_json":
            return json.loads(text)
        return _PlainValues(io.BytesIO(base64.b64decode(text))).load()
    except (ValueError, pickle.UnpicklingError, EOFError, TypeError):
        return None


def cancelled_among(kind: str, among: str) -> str:
    """A SELECT of the runs among the placeholders `among` whose workflow was cancelled,
    as rows of ('cancelled', run id, NULL, NULL): a part of the UNION a worker asks its
    inbox with (Leases.asked), in one statement."""
    return (
        f"SELECT 'cancelled', workflow_uuid, CAST(NULL AS BIGINT), NULL FROM"
        f" {DBOS_SCHEMA[kind]}workflow_status"
        f" WHERE status = 'CANCELLED' AND workflow_uuid IN ({among})"
    )


# The worker's DBOS app


def configure(
    settings: WorkerSettings,
    pool: sa.Engine | None,
    drive: Callable[[str, dict[str, Any]], int],
) -> None:
    """This process's DBOS app, not launched yet: the run's workflow drives it with
    `drive(run id, order)`, whose exit code is its result. `pool`: the connections DBOS
    takes turns on with the leases (PostgreSQL; None: its own)."""
    from dbos import DBOS, DBOSConfig

    config: DBOSConfig = {
        "name": APPLICATION,
        "system_database_url": settings.engine.connect_url,
        "executor_id": settings.executor_id,
        "application_version": APPLICATION_VERSION,
        "log_level": "ERROR",
    }
    if pool is not None:
        # DBOS holds no connection of its own: its queue and its workflows' steps take
        # turns on the leases' pool with the stores and the heartbeat, and it has no
        # LISTEN. A worker waits on no DBOS event, notification or stream, so nothing
        # polls in its stead. (The schema was made with DBOS's default, LISTEN/NOTIFY,
        # by init_schema: its triggers notify no one.)
        config["system_database_engine"] = pool
        config["use_listen_notify"] = False
    DBOS(config=config)

    @DBOS.step(name="claudeloop.drive")
    def drive_step(order: dict[str, Any]) -> int:
        run_id = DBOS.workflow_id
        assert run_id is not None
        return drive(run_id, order)

    # No dead-letter after N recoveries (DBOS's default is 100): a run is handed back
    # each time its worker stops, night after night, and it cannot crash the worker
    # that recovers it (it runs in a child process).
    @DBOS.workflow(name=WORKFLOW, max_recovery_attempts=None)
    def run(order: dict[str, Any]) -> int:
        return drive_step(order)


def launch(settings: WorkerSettings) -> None:
    """Launch the app (DBOS recovers this executor's own pending runs) and take from the
    queue, `slots` at once and `per_account` per account."""
    from dbos import DBOS

    with quiet_dbos():
        try:
            DBOS.launch()
            DBOS.register_queue(
                QUEUE,
                worker_concurrency=settings.slots,
                partition_concurrency=settings.per_account,
                polling_interval_sec=_QUEUE_POLL_SECONDS,
                on_conflict="always_update",
            )
        except Exception as error:
            raise FleetUnavailable(
                f"engine {settings.engine.masked_url}: {engine_error(error)}"
            ) from None


def recover_pending(executors: list[str]) -> int:
    """Hand the pending runs of these (dead) executors back to the queue, for any live
    worker to take; returns how many. DBOS's private `_recover_pending_workflows`: no
    public call does this (see the module's docstring); pinned by
    tests/contract/test_dbos.py."""
    from dbos import DBOS

    return len(DBOS._recover_pending_workflows(executors))


def pending_under(run_id: str, executor: str) -> bool:
    """Whether DBOS still counts the run as running under `executor` (not handed back
    yet); the database's errors as they come."""
    from dbos import DBOS

    status = DBOS.get_workflow_status(run_id)
    return status is not None and status.status == "PENDING" and status.executor_id == executor
