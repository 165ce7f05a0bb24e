"""The fleet's queue on DBOS Transact (`QueueEngine`, adapters/fleet/queue_engine.py):
the one module that imports `dbos` (tests/adapters/fleet/test_one_door.py keeps it so),
through DBOS's public API alone.

A run in the fleet's queue is a DBOS workflow whose id is the run id, in the engine's
database. What is here:

- the queue's client: DBOS's tables made, a run enqueued (in the transaction that writes
  claudeloop's own row of it: `DBOSClient.enqueue_in_transaction`) or cancelled, and the
  runs DBOS holds listed, once, for a fleet set up before claudeloop kept its queue;
- the worker's DBOS app: its workflow and step, its queue, launched (DBOS recovers this
  executor's own pending runs), and a dead worker's runs handed back to the queue
  (`DBOS.list_workflows` of those pending under its executor id, each resumed on the
  runs' queue with `DBOS.resume_workflow`).

claudeloop reads none of DBOS's tables: what its commands show of the queue is in its
own table (leases.py). DBOS itself is imported inside the functions that need it:
`claudeloop run`, and the commands that only look, never load it.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from claudeloop.adapters.fleet.engine import Engine, engine_error
from claudeloop.adapters.fleet.leases import (
    CANCELLED,
    FAILED,
    FINISHED,
    QUEUED,
    RUNNING,
    QueueRow,
)
from claudeloop.application.errors import FleetUnavailable
from claudeloop.application.ports import RunIdTaken

if TYPE_CHECKING:
    import sqlalchemy as sa
    from dbos import DBOSClient, WorkflowStatus

    from claudeloop.adapters.fleet.worker_settings import WorkerSettings

APPLICATION = "claudeloop"
WORKFLOW = "claudeloop.run"
QUEUE = "claudeloop-runs"
# Pinned, not DBOS's hash of the code: a worker of a newer claudeloop must still
# recover the runs an older one left unfinished. Bump it when an order's shape changes.
APPLICATION_VERSION = "fleet-1"
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


class _OneLine(logging.Filter):
    """What DBOS logs while a worker runs, in one line each, no traceback; a run's
    cancel, which the worker says itself, not at all."""

    def __init__(self, cancelled: tuple[type[BaseException], ...]) -> None:
        super().__init__()
        self._cancelled = cancelled

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info is None:
            return True
        _, error, _ = record.exc_info
        if isinstance(error, self._cancelled):
            return False
        if error is not None:
            record.msg = f"{record.getMessage()} {engine_error(error)}"
            record.args = None
        record.exc_info, record.exc_text = None, None
        return True


def logs_in_one_line() -> None:
    """DBOS's logger (stdlib logging, under its name) says its failures in one line."""
    from dbos import error as dbos_errors

    cancelled = (
        dbos_errors.DBOSAwaitedWorkflowCancelledError,
        dbos_errors.DBOSWorkflowCancelledError,
    )
    logger = logging.getLogger("dbos")
    if not any(isinstance(each, _OneLine) for each in logger.filters):
        logger.addFilter(_OneLine(cancelled))


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


def enqueue(
    engine: Engine, connection: Any, run_id: str, order: dict[str, Any], account: str
) -> None:
    """The run's workflow in the queue, in the transaction of `connection`, its account
    the partition its per-account limit counts in; RunIdTaken for a run id already in
    the queue."""
    from dbos import error as dbos_errors

    with client(engine) as queue:
        try:
            queue.enqueue_in_transaction(
                connection,
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
    """The run's workflow cancelled: queued, DBOS never starts it (one a worker runs,
    its worker stops: it reads claudeloop's queue)."""
    from dbos import error as dbos_errors

    with client(engine) as queue, contextlib.suppress(dbos_errors.DBOSNonExistentWorkflowError):
        queue.cancel_workflow(run_id)


def held(engine: Engine) -> list[QueueRow]:
    """Every run's workflow DBOS holds, as claudeloop's queue says it."""
    with client(engine) as queue:
        return [_row(status) for status in queue.list_workflows(name=WORKFLOW)]


def _row(status: WorkflowStatus) -> QueueRow:
    try:
        order = status.input["args"][0] if status.input is not None else None
    except (TypeError, KeyError, IndexError):
        order = None
    account = order.get("account") if isinstance(order, dict) else None
    return QueueRow(
        run_id=str(status.workflow_id),
        status=status_of(str(status.status)),
        worker=status.executor_id if status.status != "ENQUEUED" else None,
        exit_code=status.output if isinstance(status.output, int) else None,
        order=json.dumps(order),
        account=account if isinstance(account, str) else "",
        queued_at=status.created_at or 0,
    )


def status_of(status: str) -> str:
    """A run's status in claudeloop's queue, from DBOS's status of its workflow."""
    match status:
        case "ENQUEUED" | "DELAYED":
            return QUEUED
        case "PENDING":
            return RUNNING
        case "SUCCESS":
            return FINISHED
        case "CANCELLED":
            return CANCELLED
        case _:
            return FAILED


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

    logs_in_one_line()
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


def per_account() -> int | None:
    """The runs of one account the queue lets run at once, as its database holds it
    now (the worker started last set it); None: no limit."""
    from dbos import DBOS

    queue = DBOS.retrieve_queue(QUEUE)
    return None if queue is None else queue.partition_concurrency


def hand_back(workers: list[str]) -> list[str]:
    """Hand the runs pending under these (dead) workers' executor ids back to the runs'
    queue, for any live worker to take; returns their ids. Each is looked at again just
    before it is resumed (`DBOS.resume_workflow` re-enqueues whatever is not finished):
    a dead worker started again under its own name recovers its own runs meanwhile. A
    run cancelled meanwhile may go back to the queue: no worker starts it (its claim
    reads claudeloop's queue)."""
    from dbos import DBOS

    handed = []
    for run_id in _pending(workers):
        if _pending(workers, run_id):
            DBOS.resume_workflow(run_id, queue_name=QUEUE)
            handed.append(run_id)
    return handed


def _pending(workers: list[str], run_id: str | None = None) -> list[str]:
    """The runs (or the one `run_id`) DBOS counts as running under these executors."""
    from dbos import DBOS

    return [
        status.workflow_id
        for status in DBOS.list_workflows(
            workflow_ids=[run_id] if run_id is not None else None,
            name=WORKFLOW,
            status="PENDING",
            executor_id=workers,
            app_version=APPLICATION_VERSION,
            load_input=False,
            load_output=False,
        )
    ]


def pending_under(run_id: str, executor: str) -> bool:
    """Whether DBOS still counts the run as running under `executor` (not handed back
    yet); the database's errors as they come."""
    return bool(_pending([executor], run_id))


class DbosQueue:
    """The fleet's queue on DBOS (`QueueEngine`) in the database `engine` names."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def set_up(self) -> None:
        migrate(self._engine)

    def held(self) -> list[QueueRow]:
        return held(self._engine)

    def enqueue(self, connection: Any, run_id: str, order: dict[str, Any], account: str) -> None:
        enqueue(self._engine, connection, run_id, order, account)

    def cancel(self, run_id: str) -> None:
        cancel(self._engine, run_id)

    def configure(
        self,
        settings: WorkerSettings,
        pool: sa.Engine | None,
        drive: Callable[[str, dict[str, Any]], int],
    ) -> None:
        configure(settings, pool, drive)

    def launch(self, settings: WorkerSettings) -> None:
        launch(settings)

    def per_account(self) -> int | None:
        return per_account()

    def hand_back(self, workers: list[str]) -> list[str]:
        return hand_back(workers)

    def held_by(self, run_id: str, worker: str) -> bool:
        return pending_under(run_id, worker)
