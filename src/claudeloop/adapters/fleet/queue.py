"""The fleet's queue as seen from outside a worker: set it up, add a run, list, cancel.

A run in the queue is a DBOS workflow whose id is the run id; `DBOSClient` writes and
reads it in the engine's database, so none of this needs a worker to be running. DBOS
is imported here, never on the path of `claudeloop run`.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import logging
import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from claudeloop.adapters.fleet.engine import CONNECT_TIMEOUT_SECONDS, Engine
from claudeloop.adapters.private_file import make_private_directory
from claudeloop.application.codec import Codec, Shape
from claudeloop.application.errors import ClaudeloopError
from claudeloop.application.ports import QueuedRun, RunIdTaken

if TYPE_CHECKING:
    from dbos import DBOSClient

    from claudeloop.adapters.fleet.leases import Leases

APPLICATION = "claudeloop"
WORKFLOW = "claudeloop.run"
QUEUE = "claudeloop-runs"
# Pinned, not DBOS's hash of the code: a worker of a newer claudeloop must still
# recover the runs an older one left unfinished. Bump it when an order's shape changes.
APPLICATION_VERSION = "fleet-1"


class FleetUnavailable(ClaudeloopError, OSError):
    """The engine's database could not be reached or set up; one line, no password."""


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


def engine_error(error: BaseException) -> str:
    """The first line of what the database said (SQLAlchemy appends SQL and links); a
    server that accepted the connection and never answered, in those words."""
    cause = getattr(error, "orig", None) or error
    if type(cause).__name__ == "ConnectionTimeout":  # psycopg's, named not imported
        return (
            f"does not answer (no reply within {CONNECT_TIMEOUT_SECONDS} s of connecting); "
            "check that the host and port are a PostgreSQL server's and reachable"
        )
    lines = [line for line in str(cause).strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else type(cause).__name__


def init_schema(engine: Engine) -> None:
    """DBOS's tables, the workers' leases and run records, and on PostgreSQL the
    capacity board's; safe to repeat and to race (each is created under a lock)."""
    from dbos import DBOS

    if engine.sqlite_file is not None:
        try:
            make_private_directory(engine.sqlite_file.parent)
            # Made owner-only before SQLite makes it (0644); its -wal and -shm take its mode.
            os.close(os.open(engine.sqlite_file, os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as error:
            raise FleetUnavailable(f"engine {engine.shown}: {error}") from None
    with quiet_dbos():
        try:
            DBOS.migrate(engine.connect_url)
        except Exception as error:  # DBOS and SQLAlchemy raise many kinds
            raise FleetUnavailable(f"engine {engine.shown}: {engine_error(error)}") from None
    from claudeloop.adapters.fleet.leases import Leases

    leases = Leases(engine)
    try:
        leases.ensure_schema()
    except Exception as error:  # SQLAlchemy's errors, of either driver
        raise FleetUnavailable(f"engine {engine.shown}: {engine_error(error)}") from None
    finally:
        leases.close()
    if engine.kind == "postgresql":
        from claudeloop.adapters.shared_capacity.postgres_board import ensure_schema

        try:
            ensure_schema(engine.connect_url)
        except OSError as error:
            raise FleetUnavailable(f"engine {engine.shown}: {error}") from None


@contextlib.contextmanager
def _client(engine: Engine) -> Iterator[DBOSClient]:
    from dbos import DBOSClient

    with quiet_dbos():
        try:
            client = DBOSClient(
                system_database_url=engine.connect_url,
                application_name=APPLICATION,
                retry_connection_errors=False,
            )
        except Exception as error:
            raise FleetUnavailable(f"engine {engine.shown}: {engine_error(error)}") from None
        try:
            yield client
        except (FleetUnavailable, RunIdTaken, BrokenPipeError):  # a closed output is ours
            raise
        except Exception as error:
            raise FleetUnavailable(f"engine {engine.shown}: {engine_error(error)}") from None
        finally:
            client.destroy()


def add(engine: Engine, run_id: str, order: Order) -> str:
    """Queue the run (a run id already in the queue is refused); returns its id."""
    init_schema(engine)  # a first `queue add` may race a first worker: both migrate
    from dbos import error as dbos_errors

    with _client(engine) as client:
        try:
            client.enqueue(
                {
                    "workflow_name": WORKFLOW,
                    "queue_name": QUEUE,
                    "workflow_id": run_id,
                    # Refused in the same statement that would take it: no race.
                    "workflow_id_reuse_policy": "reject",
                    "queue_partition_key": order.account,
                    "application_name": APPLICATION,
                },
                order.to_json(),
            )
        except dbos_errors.DBOSWorkflowIDInUseError:
            raise RunIdTaken(run_id) from None
    return run_id


def runs(engine: Engine, leases: Leases | None = None) -> list[QueuedRun]:
    """Every run of the queue, oldest first (the schema exists); read through `leases`
    when given (a fleet's own connection), else through a connection of its own."""
    return [_queued_row(row) for row in _workflows(engine, leases)]


def find(engine: Engine, run_id: str, leases: Leases | None = None) -> QueuedRun | None:
    """The run of the queue with this id; None when there is none (the schema exists)."""
    found = _workflows(engine, leases, run_id)
    return _queued_row(found[0]) if found else None


# What `DBOSClient.list_workflows(name=WORKFLOW)` reads, read here without DBOS: the
# commands that only look (`status --engine`, `queue ls`, the dashboard) skip importing
# it and making a client, half a second of each call. An input or output moved to its
# own table (DBOS 3 keeps them there) is read from it, else from the status row.
_WORKFLOWS = """
SELECT s.workflow_uuid, s.status, s.executor_id, COALESCE(i.inputs, s.inputs),
       COALESCE(o.output, s.output), s.serialization
FROM {schema}workflow_status s
LEFT JOIN {schema}workflow_input i ON i.workflow_uuid = s.workflow_uuid
LEFT JOIN {schema}workflow_output o ON o.workflow_uuid = s.workflow_uuid
WHERE s.name = :name AND (s.application_name = :application OR s.application_name IS NULL)
"""


def _workflows(engine: Engine, leases: Leases | None, run_id: str | None = None) -> list[Any]:
    from claudeloop.adapters.fleet.leases import DBOS_SCHEMA, Leases

    statement = _WORKFLOWS.format(schema=DBOS_SCHEMA[engine.kind])
    statement += " AND s.workflow_uuid = :run_id" if run_id is not None else ""
    reader = leases if leases is not None else Leases(engine)
    try:
        return reader.read(
            statement + " ORDER BY s.created_at, s.workflow_uuid",
            name=WORKFLOW,
            application=APPLICATION,
            run_id=run_id,
        )
    except Exception as error:  # SQLAlchemy's errors, of either driver
        raise FleetUnavailable(f"engine {engine.shown}: {engine_error(error)}") from None
    finally:
        if leases is None:
            reader.close()


def _queued_row(row: Any) -> QueuedRun:
    run_id, status, executor, inputs, output, serialization = row
    arguments = _decoded(inputs, serialization)
    if isinstance(arguments, dict) and "positionalArgs" in arguments:  # portable JSON
        arguments = {"args": arguments["positionalArgs"]}
    order = _order_in(arguments)
    return QueuedRun(
        run_id=str(run_id),
        state=state_of(str(status), _decoded(output, serialization)),
        cwd=order.cwd if order else "?",
        account=order.account if order else "?",
        worker=executor if status != "ENQUEUED" else None,
    )


class _PlainValues(pickle.Unpickler):
    """DBOS's default serialization is a pickle: of an order (a dict of lists and
    strings) and an exit code, which name no class. One that names a class is not
    ours and is not loaded (loading it could run any code)."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"{module}.{name} is not a plain value")


def _decoded(text: str | None, serialization: str | None) -> Any:
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


def cancel(engine: Engine, run_id: str) -> QueuedRun | None:
    """Cancel the run: queued, it never starts; running, its worker stops it at the next
    safe point. Returns the run as it was, None when there is no such run (the schema
    exists)."""
    before = find(engine, run_id)
    if before is not None and before.state in ("queued", "running"):
        with _client(engine) as client:
            client.cancel_workflow(run_id)
    return before


def _order_in(arguments: Any) -> Order | None:
    """The order of a run's workflow arguments (`{"args": [order]}`)."""
    try:
        return Order.from_json(arguments["args"][0])
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


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
