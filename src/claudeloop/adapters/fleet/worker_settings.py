"""What every part of a worker shares: its settings, its exit codes and its tick.

The worker (worker.py) is split by concern: the child runs (children.py), the engine's
copy of a run's record (record_sync.py), the heartbeat and lease (heartbeat.py), and the
queue's engine (queue_engine.py); each reads its settings from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from claudeloop.adapters.fleet.engine import Engine
from claudeloop.domain.loop import Interrupt

STOPPED_EXIT = 130
# What a child run exits with when a signal stopped it (a Ctrl-C, SIGHUP, SIGTERM).
SIGNALLED_EXITS = frozenset(interrupt.exit_code for interrupt in Interrupt)
USAGE_EXIT = 2
FAILED_EXIT = 1
DEFAULT_LEASE_SECONDS = 30.0
# How often a worker looks at its children, its heartbeat's word and a stalled engine.
POLL_SECONDS = 0.5


@dataclass(frozen=True)
class WorkerSettings:
    engine: Engine
    slots: int
    per_account: int
    executor_id: str
    state_directory: Path
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    work_root: Path | None = None  # where runs queued with a checkout name are

    @property
    def lease_file(self) -> Path:
        return self.state_directory / "workers" / f"{self.executor_id}.lease"
