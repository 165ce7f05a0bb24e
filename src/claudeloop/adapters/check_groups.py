"""A verification check's process group dies with its driver.

A check runs in a session of its own (so that a timeout or a stop can end all of it),
which keeps it out of reach of whatever ends the driver: a kill -9 of claudeloop's
process group, the OOM killer. Two things end it then:

- a watchdog, a tiny process of a session of its own that reads a pipe only the driver
  holds; the kernel closes the pipe when the driver dies, however it dies, and the
  watchdog kills the check's group. The kernel's parent-death signal would reach the
  check's first process only, not the children it left in its group.
- a note of the group in the run directory, for what a watchdog cannot have ended (it
  was killed too): a resumed run ends the group it names before it starts a check of
  its own.

A check starts behind a gate, its group already made: only once its watchdog is there
does the driver open the gate, so a driver that dies at any instant leaves either a gate
that reads end of file and runs nothing, or a watched check.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
from anyio.abc import Process

from claudeloop.adapters.atomic_file import write_atomically
from claudeloop.adapters.private_file import make_private_directory

# Reads the check's group from its argv, then its stdin: "ended" when the driver has
# ended the group itself; end of file without it when the driver is gone.
_WATCHDOG = """
import os, signal, sys
told = sys.stdin.readline()
if told != "ended\\n":
    try:
        os.killpg(int(sys.argv[1]), signal.SIGKILL)
    except OSError:
        pass
"""
_ENDED = b"ended\n"

# Runs argv[1:] once the driver writes "go"; end of file instead: the driver is gone, and
# nothing runs. The check's stdin is empty and its stderr its stdout. An exec that fails
# is told on the gate's own stderr (closed by an exec that succeeds) in the words
# subprocess would have raised.
_GATE = """
import os, sys
if sys.stdin.readline() != "go\\n":
    os._exit(1)
told = os.dup(2)
os.dup2(1, 2)
empty = os.open(os.devnull, os.O_RDONLY)
os.dup2(empty, 0)
os.close(empty)
try:
    os.execvp(sys.argv[1], sys.argv[1:])
except OSError as error:
    os.write(told, f"{error}: {sys.argv[1]!r}".encode())
    os._exit(127)
"""
_GO = b"go\n"
_PROC = Path("/proc")


def gated(argv: Sequence[str]) -> list[str]:
    """What to start for `argv`, with stdin, stdout and stderr pipes, in a session of its
    own; it waits at its gate for `open_gate`."""
    return [sys.executable, "-I", "-S", "-c", _GATE, *argv]


async def open_gate(process: Process) -> None:
    """Let the gated check run. OSError when it could not start (the gate is reaped)."""
    assert process.stdin is not None
    assert process.stderr is not None
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await process.stdin.send(_GO)
    await process.stdin.aclose()
    told = bytearray()
    async for chunk in process.stderr:  # end of file: the check's exec succeeded
        told += chunk
    if told:
        await process.aclose()
        raise OSError(told.decode(errors="replace"))


async def start_watchdog(group: int) -> Process | None:
    """A watchdog of `group`; None when it cannot start (the check runs unwatched)."""
    try:
        return await anyio.open_process(
            [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(group)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # Out of the driver's process group, so what kills the driver's spares it.
            start_new_session=True,
        )
    except OSError:
        return None


async def dismiss(watchdog: Process | None) -> None:
    """Tell the watchdog the group is ended, and reap it."""
    if watchdog is None:
        return
    assert watchdog.stdin is not None
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await watchdog.stdin.send(_ENDED)
    await watchdog.aclose()  # closes its pipe and waits for it


def note_group(note: Path, group: int) -> None:
    """Note the check in flight: its group, its first process's start, the boot."""
    make_private_directory(note.parent)
    record = {"group": group, "started": _started(group), "boot": _boot()}
    write_atomically(note, json.dumps(record))


def forget_group(note: Path) -> None:
    note.unlink(missing_ok=True)


def end_leftover(note: Path) -> int | None:
    """Kill the group a dead driver's check left, if it is still that check's; the group
    killed, or None. A process group lives while any of its processes does, and Linux
    gives no new process the number of a live group, so the group is the check's when
    its first process is the one noted (its start time) or gone with the group still
    there; a group noted before a reboot is no one's now."""
    try:
        record = json.loads(note.read_text(encoding="utf-8"))
        group, started, boot = int(record["group"]), record["started"], record["boot"]
    except (OSError, ValueError, KeyError, TypeError):
        forget_group(note)
        return None
    ours = started is not None and boot is not None and boot == _boot() and group > 1
    if ours:
        now = _started(group)
        # Gone (None): only the rest of its group can hold the number.
        ours = now is None or now == started
    forget_group(note)
    if not ours:
        return None
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:  # nothing left of it
        return None
    return group


def _started(pid: int) -> int | None:
    """When the process started, in clock ticks since boot; None when it is gone or
    this system has no /proc (then a note is never trusted)."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _boot() -> str | None:
    try:
        return (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except OSError:
        return None
