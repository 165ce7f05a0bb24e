"""Where a working directory's runs are, and which one a live driver drives, read from
the runs' locks alone, never their records: a start refuses to run beside a live run
before it checks a setting, and a refusal must cost no more than what it read."""

from __future__ import annotations

from pathlib import Path

from claudeloop.adapters.run_directory.lock import live_driver
from claudeloop.application.errors import UsageError

# In each run's directory: the driver's lock (adapters/run_directory/lock.py).
LOCK_FILE = "driver.pid"


def runs_root(cwd: Path) -> Path:
    return cwd / ".claudeloop" / "runs"


def newest_live(cwd: Path) -> tuple[Path, int] | None:
    """The newest run directory of `cwd` a live driver is driving, and the driver's pid
    (run ids start with their UTC start time)."""
    root = runs_root(cwd)
    if not root.is_dir():
        return None
    for path in sorted(root.iterdir(), key=lambda p: p.name, reverse=True):
        pid = live_driver(path / LOCK_FILE) if path.is_dir() else None
        if pid is not None:
            return path, pid
    return None


def refuse_beside_a_live_run(cwd: Path) -> None:
    """A second run in one directory is a mistake unless asked for by name: the two
    would edit the same files, and status, logs and stop could pick the wrong one."""
    live = newest_live(cwd)
    if live is not None:
        path, pid = live
        raise UsageError(
            f"run {path.name} is live in {cwd} (process {pid}); watch it with "
            "`claudeloop status`, or give --run-id NAME to start another beside it on purpose"
        )
