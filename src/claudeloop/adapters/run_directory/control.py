"""A run's control file: what a person asks of its driver from outside.

Two forms, both read: the one word of before (`stop`, `wind-down`), which every
claudeloop since the first reads; and a JSON object through the one codec, for a file
that also carries requests (domain.steering), each numbered in the order sent:

    {"format": 2, "command": "stop", "requests": [{"seq": 3, "asked": {"kind": "note",
     "text": "..."}}]}

A stop or wind-down alone is still written as its word, so a driver of before obeys
it. The file is rewritten whole (atomically) under a lock of its own, by the command
that adds a request and by the driver that lets applied ones go, so neither loses the
other's write.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from claudeloop.adapters.atomic_file import write_atomically
from claudeloop.application.codec import Codec, DecodeError, Tagged
from claudeloop.application.ports import Request
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.steering import AddNote, ProbeNow, RaiseCap, Steer

CONTROL_FORMAT = 2


@dataclass(frozen=True, slots=True)
class ControlFile:
    """What the control file holds: a stop or wind-down asked for (sticky until the run
    ends), and the requests not yet let go of."""

    command: ControlCommand | None = None
    requests: tuple[Request, ...] = ()
    format: int = CONTROL_FORMAT

    @property
    def last_seq(self) -> int:
        return max((request.seq for request in self.requests), default=0)


CONTROL_CODEC = Codec(
    unions=(
        Tagged.covering(Steer, "kind", {ProbeNow: "probe-now", RaiseCap: "raise", AddNote: "note"}),
    ),
)


def read_control(path: Path) -> ControlFile:
    """The control file as it is; an absent or unreadable one asks nothing (a file a
    person broke by hand must not stop a run, nor crash it)."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ControlFile()
    if not text.startswith("{"):
        try:
            return ControlFile(command=ControlCommand(text))
        except ValueError:
            return ControlFile()
    try:
        data = json.loads(text)
        return CONTROL_CODEC.decode(data, ControlFile)  # type: ignore[no-any-return]
    except (json.JSONDecodeError, DecodeError):
        return ControlFile()


def write_control(path: Path, control: ControlFile) -> None:
    if control.command is None and not control.requests:
        path.unlink(missing_ok=True)
    elif not control.requests:
        assert control.command is not None
        write_atomically(path, control.command.value)
    else:
        write_atomically(path, json.dumps(CONTROL_CODEC.encode(control), ensure_ascii=False))


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """The control file held for a read and a write (a lock file beside it)."""
    lock = path.with_name(f".{path.name}.lock")
    descriptor = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def add_command(path: Path, command: ControlCommand) -> None:
    with locked(path):
        current = read_control(path)
        write_control(path, ControlFile(command, current.requests))


def add_request(path: Path, asked: Steer, *, after: int) -> int:
    """`asked` into the control file, numbered after the file's last request and after
    `after` (the last the run's record says it applied); its number."""
    with locked(path):
        current = read_control(path)
        # Requests the run applied already are let go of here too.
        kept = tuple(request for request in current.requests if request.seq > after)
        seq = max(current.last_seq, after) + 1
        write_control(path, ControlFile(current.command, (*kept, Request(seq, asked))))
        return seq


def let_go(path: Path, through: int) -> None:
    """The requests numbered up to `through` out of the file (applied and saved)."""
    with locked(path):
        current = read_control(path)
        kept = tuple(request for request in current.requests if request.seq > through)
        if kept != current.requests:
            write_control(path, ControlFile(current.command, kept))


def steer_to_json(asked: Steer) -> str:
    """A request as the fleet's engine carries it to the run's worker."""
    return json.dumps(CONTROL_CODEC.encode(asked), ensure_ascii=False)


def steer_from_json(text: str) -> Steer | None:
    """A request the engine carried; None for one this claudeloop cannot read (a newer
    one's)."""
    try:
        return CONTROL_CODEC.decode(json.loads(text), Steer)  # type: ignore[no-any-return]
    except (json.JSONDecodeError, DecodeError):
        return None
