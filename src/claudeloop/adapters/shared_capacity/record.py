"""The capacity board's record, as both boards hold it: a `Sighting` in JSON (the file
board's whole file; the fleet's table keeps its signals in a jsonb column), and what
either board needs of its writer (its machine, whether its process runs) and of a lock
held too long. The file board (`board`) and the fleet's (`postgres_board`) each import
this module, never each other.

The record never holds a credential: the account is named by a short hash.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from claudeloop.application.codec import Codec, Form, Shape, Versioned
from claudeloop.application.ports import Sighting
from claudeloop.domain.capacity import UnknownWindow, service_name
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.text import first_line

_LONGEST_TEXT = 300
# How long a writer waits for the record's lock by default (held for milliseconds).
LOCK_PATIENCE_SECONDS = 2.0


class BoardBusy(OSError):
    """Another process held the record's lock for longer than a writer waits."""


def this_host() -> str:
    """The machine's name, as a record says which machine its writer ran on."""
    return socket.gethostname()


def process_alive(pid: int) -> bool:
    """Whether process `pid` of this machine runs (or has not been reaped yet). A pid
    taken again by another process reads as alive: its record is then trusted, as every
    record was before records said who wrote them."""
    if pid <= 0:
        return False  # 0 and below name process groups, never a writer
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process (EPERM): it runs
    return True


def _unknown_window(name: object) -> UnknownWindow:
    if not isinstance(name, str):
        raise TypeError("not text")
    return UnknownWindow(name)


# The record's format: version 1 since the board began. The run id and host were added
# as keys an older reader skips, and a record an older version wrote (without them)
# reads with None for each; the overage's reset and use likewise.
RECORD_FORMAT = Versioned(key="version", current=1, assumed=0)
# Instants in UTC; a turn's result text is not capacity (only an error's first line is
# kept, by `shared`) and the turn's end reason is the turn's own. A grace period and a
# daily cap (read since 2026-12-02) are written only when set: a record without them is
# byte for byte what an older version wrote, and reads as neither.
RECORD_CODEC = Codec(
    shapes={
        TurnSignals: Shape(
            omitted=frozenset({"terminal_reason", "custom_address"}),
            sparse=frozenset({"grace_active", "daily_cap_paused"}),
        )
    },
    # A window the service named that this claudeloop does not know is written by its
    # name, as every version wrote it: an older reader reads the record unchanged.
    forms={UnknownWindow: Form(service_name, _unknown_window)},
    in_utc=True,
)


def shared(signals: TurnSignals) -> TurnSignals:
    """What of a turn's signals the board keeps: an error's first line, no result."""
    kept = first_line(signals.result_text, longest=_LONGEST_TEXT) if signals.is_error else ""
    return replace(signals, result_text=kept, terminal_reason=None)


def sighting_to_json(sighting: Sighting) -> str:
    shown = replace(sighting, signals=shared(sighting.signals))
    return json.dumps(RECORD_FORMAT.stamp(RECORD_CODEC.encode(shown)), sort_keys=True)


def sighting_from_json(text: str) -> Sighting | None:
    """The record, or None for anything that is not a whole record of this version."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            return None
        return cast(Sighting, RECORD_CODEC.decode(RECORD_FORMAT.upgraded(data), Sighting))
    except (ValueError, RecursionError):  # JSONDecodeError and DecodeError among them
        return None


def signals_to_dict(signals: TurnSignals) -> dict[str, Any]:
    """The signals as the record holds them (the fleet's table: its jsonb column)."""
    return cast(dict[str, Any], RECORD_CODEC.encode(shared(signals)))


def signals_from_dict(data: Mapping[str, Any]) -> TurnSignals:
    """DecodeError (a ValueError) for signals that are not what the record holds."""
    return cast(TurnSignals, RECORD_CODEC.decode(dict(data), TurnSignals, "signals"))
