"""One live driver per run: an exclusive `flock` on `driver.pid`, held for the driver's
whole life through an open descriptor.

The kernel releases the lock when the driver dies (kill -9, a crash, a reboot), so a
dead driver is taken over at once and a pid reused by another process never passes for
one. The pid written inside is information for `status`, not the lock: "is a driver
alive" is "does someone hold the lock". The file is never removed, because a process
that opened it just before the removal would lock a file no one else can see.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

# How long taking the lock waits while it is held only shared, as `status` and `logs -f`
# hold it for an instant to look, or while the holder has yet to write its pid.
_LOOKERS_PATIENCE_SECONDS = 2.0
_RETRY_SECONDS = 0.01


class RunLocked(RuntimeError):
    def __init__(self, pid: int) -> None:
        super().__init__(f"driven by live process {pid}")
        self.pid = pid


class DriverLock:
    """The run's lock, held until released or until this process ends."""

    def __init__(self, descriptor: int) -> None:
        self._descriptor: int | None = descriptor

    def release(self) -> None:
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(descriptor, 0)  # no pid left behind for an older claudeloop to trust
        os.close(descriptor)  # closing releases the lock


def live_driver(lock_path: Path) -> int | None:
    """The pid of the process driving the run (0 if it has not written it yet), or None
    when no process holds the run's lock."""
    try:
        descriptor = os.open(lock_path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None  # no driver ever started here
    try:
        if not _held_exclusively(descriptor):
            return None
        return _recorded_pid(descriptor)
    finally:
        os.close(descriptor)


def acquire(lock_path: Path) -> DriverLock:
    """Take the lock or raise RunLocked with the live holder's pid.

    A file left by a dead driver, or by an older claudeloop that kept only a pid in it,
    is locked by no one and simply taken over."""
    # Never through a link planted as driver.pid: OSError (ELOOP) instead.
    descriptor = os.open(lock_path, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + _LOOKERS_PATIENCE_SECONDS
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            if _held_exclusively(descriptor):
                pid = _recorded_pid(descriptor)
                if pid or time.monotonic() >= deadline:
                    raise RunLocked(pid)
            elif time.monotonic() >= deadline:
                raise RunLocked(0)
            time.sleep(_RETRY_SECONDS)
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, str(os.getpid()).encode(), 0)
    except BaseException:
        os.close(descriptor)
        raise
    return DriverLock(descriptor)


def _held_exclusively(descriptor: int) -> bool:
    """Whether another descriptor holds the lock exclusively (a driver), not merely
    shared (someone looking)."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(descriptor, fcntl.LOCK_UN)
    return False


def _recorded_pid(descriptor: int) -> int:
    try:
        return int(os.pread(descriptor, 32, 0).decode("ascii").strip() or "0")
    except (OSError, ValueError, UnicodeDecodeError):
        return 0
