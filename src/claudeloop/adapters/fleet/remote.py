"""A run of the fleet seen from any machine: what `status`, `logs`, `stop` and
`wind-down` with `--engine` read from the engine and ask through it.

The record a worker stores (state.json and events.jsonl, adapters/fleet/travel.py) is
unpacked into a directory of the caller's, so the commands read it exactly as they read
a local run. A stop or wind-down is a row of `claudeloop_controls`: the worker holding
the run writes it into the run's control file within a heartbeat.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from claudeloop.adapters.fleet import travel
from claudeloop.adapters.fleet.engine import Engine
from claudeloop.adapters.fleet.leases import Leases, Sighting, StoredRun
from claudeloop.adapters.fleet.queue import FleetUnavailable, QueuedRun, find, init_schema, runs
from claudeloop.adapters.fleet.queue import said as database_said


@dataclass(frozen=True)
class FleetRun:
    """A run as the engine knows it: its place in the queue, and the record its worker
    stored last (None before its first save)."""

    run_id: str
    queued: QueuedRun | None
    stored: StoredRun | None

    @property
    def worker(self) -> str | None:
        if self.stored is not None and self.stored.holder is not None:
            return self.stored.holder
        return self.queued.worker if self.queued else None

    @property
    def state(self) -> str:
        """The queue's word for it (queued, running, done, exit N, cancelled, failed)."""
        return self.queued.state if self.queued else "unknown"

    def unpack(self, into: Path) -> Path | None:
        """The stored record as a run directory under `into`; None without one."""
        if self.stored is None or self.stored.record is None:
            return None
        directory = into / self.run_id
        travel.unpack_record(self.stored.record, directory)
        return directory


@contextlib.contextmanager
def opened(engine: Engine, *, set_up: bool = True) -> Iterator[Leases]:
    """The engine's leases and records; any failure of the database is FleetUnavailable."""
    if set_up:
        init_schema(engine)
    leases = Leases(engine)
    try:
        yield leases
    except (FleetUnavailable, BrokenPipeError):  # a closed output is not the database's
        raise
    except Exception as error:  # SQLAlchemy's errors, of either driver
        raise FleetUnavailable(f"engine {engine.shown}: {database_said(error)}") from None
    finally:
        leases.close()


def look_up(engine: Engine, run_id: str) -> FleetRun | None:
    """The run with this id; None when the engine knows no such run."""
    with opened(engine) as leases:
        stored = leases.stored(run_id)
    queued = find(engine, run_id)
    if queued is None and stored is None:
        return None
    return FleetRun(run_id, queued, stored)


def fleet(engine: Engine) -> tuple[list[FleetRun], list[Sighting]]:
    """Every run of the queue, newest first, and the capacity board's accounts."""
    queued = runs(engine)  # sets the schema up
    with opened(engine, set_up=False) as leases:
        stored = leases.every_stored()
        sightings = leases.capacity()
    listed = [FleetRun(q.run_id, q, stored.get(q.run_id)) for q in reversed(queued)]
    return listed, sightings


def ask(engine: Engine, run_id: str, command: str) -> None:
    """Ask the run's worker to pass `command` (stop, wind-down) on to the run."""
    with opened(engine) as leases:
        leases.ask(run_id, command)
