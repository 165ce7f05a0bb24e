"""A typed answer's `--json` form as the plain dict a script reads from json.loads: the
tests read it by key, as scripts do."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from claudeloop.application.json_form import Json
from claudeloop.application.records import RunRecord
from claudeloop.application.run_status import run_status_of


def plain(value: Json) -> Any:
    """`value` as json.loads gives it back (tuples as lists)."""
    return json.loads(json.dumps(value))


def status_object(record: RunRecord, *, now: datetime, driver_pid: int | None) -> dict[str, Any]:
    """What `status --json` prints of `record` at `now`."""
    data: dict[str, Any] = plain(run_status_of(record, now=now, driver_pid=driver_pid).to_json())
    return data
