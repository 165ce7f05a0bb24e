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
from datetime import UTC, datetime
from typing import Any

from claudeloop.application.ports import Sighting
from claudeloop.domain.signals import TurnSignals, WindowUsage
from claudeloop.domain.text import first_line

_VERSION = 1
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


def sighting_to_json(sighting: Sighting) -> str:
    # Still version 1: the run id and host are keys an older reader skips, and a record
    # an older version wrote (without them) reads here with None for each.
    return json.dumps(
        {
            "version": _VERSION,
            "seq": sighting.seq,
            "at": sighting.at.isoformat(),
            "pid": sighting.pid,
            "writer": sighting.writer,
            "run_id": sighting.run_id,
            "host": sighting.host,
            "source": sighting.source,
            "standing": sighting.standing,
            "signals": signals_to_dict(sighting.signals),
        },
        sort_keys=True,
    )


def sighting_from_json(text: str) -> Sighting | None:
    """The record, or None for anything that is not a whole record of this version."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            return None
        source, standing = data["source"], data["standing"]
        if source not in ("turn", "probe") or standing not in ("open", "closed", "other"):
            return None
        return Sighting(
            seq=int(data["seq"]),
            at=_aware(data["at"]),
            pid=int(data["pid"]),
            writer=str(data["writer"]),
            source=source,
            standing=standing,
            signals=signals_from_dict(data["signals"]),
            run_id=_text(data.get("run_id")),
            host=_text(data.get("host")),
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def signals_to_dict(signals: TurnSignals) -> dict[str, Any]:
    return {
        "rate_limit_status": signals.rate_limit_status,
        "rate_limit_type": signals.rate_limit_type,
        "resets_at": _instant(signals.resets_at),
        "utilization": signals.utilization,
        "overage_status": signals.overage_status,
        "overage_disabled_reason": signals.overage_disabled_reason,
        "overage_resets_at": _instant(signals.overage_resets_at),
        "overage_in_use": signals.overage_in_use,
        "error_code": signals.error_code,
        "api_error_status": signals.api_error_status,
        "assistant_error": signals.assistant_error,
        # An error's first line only: a result is the model's work, not capacity.
        "result_text": first_line(signals.result_text, longest=_LONGEST_TEXT)
        if signals.is_error
        else "",
        "local_backend": signals.local_backend,
        "is_error": signals.is_error,
        "windows": [
            {
                "window": usage.window,
                "utilization": usage.utilization,
                "resets_at": _instant(usage.resets_at),
                "status": usage.status,
            }
            for usage in signals.windows
        ],
    }


def signals_from_dict(data: Mapping[str, Any]) -> TurnSignals:
    status = data.get("api_error_status")
    utilization = data.get("utilization")
    return TurnSignals(
        rate_limit_status=_text(data.get("rate_limit_status")),
        rate_limit_type=_text(data.get("rate_limit_type")),
        resets_at=_aware(data["resets_at"]) if data.get("resets_at") else None,
        utilization=float(utilization) if utilization is not None else None,
        overage_status=_text(data.get("overage_status")),
        overage_disabled_reason=_text(data.get("overage_disabled_reason")),
        # Written since 2026-12-02: a record from before has neither.
        overage_resets_at=_aware(data["overage_resets_at"])
        if data.get("overage_resets_at")
        else None,
        overage_in_use=bool(data.get("overage_in_use")),
        error_code=_text(data.get("error_code")),
        api_error_status=int(status) if status is not None else None,
        assistant_error=_text(data.get("assistant_error")),
        result_text=str(data.get("result_text") or ""),
        local_backend=bool(data.get("local_backend")),
        is_error=bool(data.get("is_error")),
        windows=tuple(
            WindowUsage(
                window=str(usage["window"]),
                utilization=(
                    float(usage["utilization"]) if usage.get("utilization") is not None else None
                ),
                resets_at=_aware(usage["resets_at"]) if usage.get("resets_at") else None,
                status=_text(usage.get("status")),
            )
            for usage in data.get("windows") or ()
        ),
    )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _instant(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def _aware(text: object) -> datetime:
    instant = datetime.fromisoformat(str(text))
    if instant.utcoffset() is None:
        raise ValueError("not an aware instant")
    return instant
