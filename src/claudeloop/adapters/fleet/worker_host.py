"""The `WorkerHost` port: this machine, running a fleet's worker on the engine given."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from claudeloop.adapters.fleet.engine import Engine, executor_id, state_directory
from claudeloop.application.errors import UsageError
from claudeloop.application.ports import WorkerOptions


class MachineWorkerHost:
    """A worker of this machine: its executor id and state directory from the
    environment (CLAUDELOOP_STATE_DIR), the same each time it starts with its name."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def is_directory(self, path: Path) -> bool:
        return path.is_dir()

    def serve(self, options: WorkerOptions, say: Callable[[str], None]) -> int:
        from claudeloop.adapters.fleet.worker import WorkerRunning, WorkerSettings, serve

        settings = WorkerSettings(
            self._engine,
            options.slots,
            options.per_account,
            executor_id(os.environ, options.name),
            state_directory(os.environ),
            lease_seconds=options.lease_seconds,
            work_root=options.work_root,
        )
        try:
            return serve(settings, say)
        except WorkerRunning as running:
            raise UsageError(
                f"{running}; stop it first, or tell this one apart with --name NAME"
            ) from None

    def exit_now(self, code: int) -> None:
        from claudeloop.adapters.fleet.worker import exit_now

        exit_now(code)
