"""One live driver per run: a pid file, taken over when its process is dead."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


class RunLocked(RuntimeError):
    def __init__(self, pid: int) -> None:
        super().__init__(f"driven by live process {pid}")
        self.pid = pid


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def live_driver(lock_path: Path) -> int | None:
    """The pid of the live process driving the run, or None."""
    try:
        pid = int(lock_path.read_text(encoding="utf-8").strip() or "0")
    except (OSError, ValueError):
        return None
    return pid if pid != os.getpid() and pid_alive(pid) else None


def acquire(lock_path: Path) -> None:
    """Take the lock or raise RunLocked with the live holder's pid."""
    for _ in range(2):
        try:
            descriptor = os.open(lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            holder = live_driver(lock_path)
            if holder is not None:
                raise RunLocked(holder) from None
            # Left by a dead process (kill -9, a reboot): take it over.
            with contextlib.suppress(FileNotFoundError):
                lock_path.unlink()
            continue
        with os.fdopen(descriptor, "w") as handle:
            handle.write(str(os.getpid()))
        return
    holder = live_driver(lock_path)
    raise RunLocked(holder or 0)


def release(lock_path: Path) -> None:
    with contextlib.suppress(OSError):
        if lock_path.read_text(encoding="utf-8").strip() == str(os.getpid()):
            lock_path.unlink()
