"""A fleet-driven run's lease, as its child process sees it: a file the worker renews.

The worker that drives a run as a child process tells it where its lease is (the
lease of its `FleetSeat`, application/fleet_seat.py). Each time the worker's heartbeat
reaches the engine, it writes in that file the instant until which its lease surely
holds: before the lease the engine counts could have run out, so before another worker
may take the run over. A worker that is cut off (SIGSTOP, a network gone) renews
nothing, while its children go on: SIGSTOP of a worker does not stop them. So the
child checks the lease itself, before each save of its record and every fraction of a
second while it runs; once the lease is over it stops its Claude CLI and ends at once,
saving nothing, with FENCED_EXIT. The run is another worker's from then on.

A successor starts from the record the engine holds, so a save counts only once the
engine holds it: the worker hands its child one end of a socket pair (the seat's
`sync` names its descriptor), and each save asks the worker to store the record in the
engine now and waits for its answer. The runner says a turn finished only after that
save, so a worker killed the moment after leaves the engine a record with the turn in
it, never one the half-second copy had not reached yet. A worker gone (its end closed)
or fenced: the child stops as past its lease, since nothing it saved from then on would
reach a successor.

Standard library only: `claudeloop run` imports this module when a worker started it,
and it must not load dbos or a database driver (nor need the engine's password).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from pathlib import Path

from claudeloop.application.fleet_seat import FleetSeat
from claudeloop.application.ports import RunStore
from claudeloop.application.records import RunRecord

# One byte each way: the child's "saved, store it", the worker's "stored" or "fenced".
SAVED = b"s"
STORED = b"k"
REFUSED = b"f"
# The exit code of a child that ended because its lease was over; only a worker sees it.
FENCED_EXIT = 79
_WATCH_SECONDS = 0.2


def write_lease(path: Path, until: float) -> None:
    """Renew the lease to `until` (seconds since the epoch), replacing the file whole."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(f"{until:.3f}\n")
    temporary.replace(path)


def lease_holds(path: Path, now: float | None = None) -> bool:
    """Whether the lease in `path` has not run out (a file missing or unreadable: over)."""
    try:
        until = float(path.read_text().strip())
    except (OSError, ValueError):
        return False
    return (time.time() if now is None else now) < until


def descendants(of: int) -> list[int]:
    """The children of process `of` and theirs (Linux /proc): the Claude CLI and its
    tools."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = entry.read_text().rsplit(")", 1)[1].split()
            parents.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    found: list[int] = []
    waiting = [of]
    while waiting:
        for child in parents.get(waiting.pop(), []):
            found.append(child)
            waiting.append(child)
    return found


_LEASE_OVER = "the worker's lease on this run is over"


def fence(why: str = _LEASE_OVER) -> None:
    """Stop the Claude CLI and end this process now, writing nothing more."""
    with contextlib.suppress(OSError, ValueError):
        os.write(2, f"claudeloop: {why}; stopping\n".encode())
    for pid in descendants(os.getpid()):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    os._exit(FENCED_EXIT)


class EngineLink:
    """The child's end of the socket pair to its worker."""

    def __init__(self, descriptor: int) -> None:
        os.set_inheritable(descriptor, False)  # the Claude CLI and its tools get none
        self._socket = socket.socket(fileno=descriptor)

    def stored(self) -> bool:
        """Ask the worker to store the run's record in the engine now; True once the
        engine holds it, False when the worker is gone or no longer holds the run."""
        try:
            self._socket.sendall(SAVED)
            return self._socket.recv(1) == STORED
        except OSError:
            return False


class LeasedStore:
    """A run store that saves only while the worker's lease holds, and whose save is
    done once the engine holds the record too (when the worker gave it a link)."""

    def __init__(self, store: RunStore, lease: Path, link: EngineLink | None = None) -> None:
        self._store = store
        self._lease = lease
        self._link = link

    def save(self, record: RunRecord) -> None:
        if not lease_holds(self._lease):
            fence()
        self._store.save(record)
        if self._link is not None and not self._link.stored():
            fence("its worker is gone or no longer holds this run")


def watch(lease: Path) -> None:
    """Fence this process the moment its lease is over, mid-turn or mid-wait."""

    def keep_watching() -> None:
        while lease_holds(lease):
            time.sleep(_WATCH_SECONDS)
        fence()

    threading.Thread(target=keep_watching, name="fleet-lease", daemon=True).start()


def fenced_by_lease(store: RunStore, seat: FleetSeat) -> RunStore:
    """`store`, fenced by the worker's lease when a worker drives this run (its seat
    names a lease), its saves stored in the engine through the seat's link. A run no
    worker drives keeps `store` as it is, and no thread watches a lease."""
    if seat.lease is None:
        return store
    watch(seat.lease)
    link = None
    if seat.sync is not None:
        try:
            link = EngineLink(seat.sync)
        except OSError:
            fence("the link to this run's worker is gone")
    return LeasedStore(store, seat.lease, link)


def stop_tree(pid: int) -> None:
    """SIGKILL a child and everything under it (its Claude CLI and the CLI's tools)."""
    for each in [*descendants(pid), pid]:
        with contextlib.suppress(OSError):
            os.kill(each, signal.SIGKILL)
