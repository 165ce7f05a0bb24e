"""A run's page of the dashboard: its row, plan checklist, last verification round, the
tail of its events, and the timeline and spend drawn from them.

It reads the run's record and the tail of its events only, never a whole events.jsonl:
a page costs the same after 100,000 events as after ten.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime

from claudeloop.application.dashboard import MaskOf, RunsOf, run_row
from claudeloop.application.errors import UsageError
from claudeloop.application.json_form import Json, JsonObject
from claudeloop.application.masking import masked
from claudeloop.application.ports import IndexedRun, RunIndex
from claudeloop.application.run_rows import RunRow
from claudeloop.application.verbs import VERBS, Verb

# How many of a run's last events its page reads: its timeline, spend and event list.
EVENT_TAIL = 400


@dataclass(frozen=True)
class Stretch:
    """A stretch of a run's timeline: a turn, a wait, a check, a review; or a probe (an
    instant: `end` equals `start`). `ok` False: it ended badly (a refused turn, a
    failed check)."""

    kind: str
    start: datetime
    end: datetime
    label: str
    ok: bool = True


@dataclass(frozen=True, slots=True)
class PlanItem:
    text: str
    done: bool


@dataclass(frozen=True, slots=True)
class CheckTail:
    """A check of the last verification round, with the tail of its output."""

    command: str
    passed: bool
    ended: str
    seconds: float
    tail: str


@dataclass(frozen=True, slots=True)
class RunView:
    """A run's page: its row, plan checklist, last verification round, the tail of its
    events (each as events.jsonl holds it, masked), its timeline and spend drawn from
    them, the offset its live events follow from, the notes that wait for the next
    turn and the verbs of its buttons."""

    row: RunRow
    plan: tuple[PlanItem, ...] = ()
    checks: tuple[CheckTail, ...] = ()
    events: tuple[JsonObject, ...] = ()
    timeline: tuple[Stretch, ...] = ()
    spend: tuple[tuple[datetime, float], ...] = ()
    offset: int = 0
    notes: tuple[str, ...] = ()
    verbs: tuple[Verb, ...] = VERBS


def run_view(
    entry: IndexedRun, index: RunIndex, runs_of: RunsOf, *, now: datetime, mask: MaskOf
) -> RunView:
    """A run's page: its row, plan checklist, last verification round (each check's
    output tail), the tail of its events, its timeline and spend drawn from them, and
    the offset its live events follow from."""
    row = run_row(entry, index, runs_of, now=now, mask=mask)
    if row.problem is not None:
        return RunView(row)
    runs = runs_of(entry.cwd)
    record = runs.record(entry.run_id)
    try:
        lines, offset = runs.event_tail(entry.run_id, EVENT_TAIL)
    except UsageError as error:
        lines, offset = [], 0
        row = replace(row, problem=str(error))
    events = parsed_events(lines)
    plan = record.plan.items if record.plan is not None else ()
    view = RunView(
        row=row,
        plan=tuple(PlanItem(item.text, item.done) for item in plan),
        checks=tuple(
            CheckTail(
                command=check.command.text,
                passed=check.passed,
                ended=check.ended,
                seconds=round(check.seconds, 1),
                tail=check.output_tail[-2000:],
            )
            for check in record.state.last_checks
        ),
        events=tuple(events),
        timeline=tuple(timeline(events, now=now)),
        spend=tuple(spend_series(events, total=record.state.ledger.dollars)),
        offset=offset,
        notes=tuple(record.state.notes),
    )
    return masked(view, mask(entry.cwd))


def parsed_events(lines: list[bytes]) -> list[JsonObject]:
    """The lines that are event objects (a half-written or foreign line is skipped)."""
    events: list[JsonObject] = []
    for raw in lines:
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("ts"), str):
            events.append(event)
    return events


def _instant(event: JsonObject) -> datetime | None:
    try:
        return datetime.fromisoformat(str(event["ts"]))
    except (KeyError, ValueError):
        return None


# Where each kind of stretch begins, and the events that end it.
_OPENERS = {
    "turn.started": ("turn", ("turn.finished", "turn.failed")),
    "wait.started": ("wait", ("probe.finished", "turn.started", "run.finished")),
    "verify.started": ("check", ("verify.finished",)),
    "review.started": ("review", ("review.finished",)),
}


def timeline(events: list[JsonObject], *, now: datetime) -> list[Stretch]:
    """The stretches the events show, in order: each opened by its start event and
    closed by the first event that ends it (one still open ends now); a probe is an
    instant of its own."""
    spans: list[Stretch] = []
    open_spans: dict[str, tuple[datetime, JsonObject]] = {}
    for event in events:
        at = _instant(event)
        if at is None:
            continue
        kind = str(event.get("type"))
        for name, (started, opener) in list(open_spans.items()):
            if kind in _OPENERS[str(opener["type"])][1]:
                del open_spans[name]
                spans.append(Stretch(name, started, at, _label(opener, event), _ok(event)))
        if kind in _OPENERS:
            open_spans[_OPENERS[kind][0]] = (at, event)
        if kind == "probe.finished":
            spans.append(Stretch("probe", at, at, f"probe: {event.get('capacity')}", True))
    for name, (started, opener) in open_spans.items():
        spans.append(Stretch(name, started, max(now, started), _label(opener, None), True))
    return sorted(spans, key=lambda span: span.start)


def _label(opener: JsonObject, closer: JsonObject | None) -> str:
    match opener["type"]:
        case "turn.started":
            verdict = f": {closer.get('verdict')}" if closer is not None else " (in flight)"
            return f"turn {opener.get('turn')}{verdict}"
        case "wait.started":
            return f"wait: {opener.get('capacity')}"
        case "verify.started":
            return f"check: {opener.get('command')}"
        case _:
            return f"review of turn {opener.get('turn')}"


def _ok(closer: JsonObject) -> bool:
    if closer.get("type") == "verify.finished":
        return bool(closer.get("passed"))
    if closer.get("type") == "turn.failed":
        return False
    return closer.get("error") in (None, "")


_COSTED = ("turn.finished", "probe.finished", "review.finished")


def _dollars(value: Json) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def spend_series(events: list[JsonObject], *, total: float) -> list[tuple[datetime, float]]:
    """The run's spend over the time the events span: from the first event's instant at
    what was spent before the tail (nothing, for a tail that is the whole run), then
    each costed event's instant and the dollars spent by then, ending at the record's
    `total`. No costed event: no series."""
    costed = [
        (at, _dollars(event.get("cost_usd")))
        for event in events
        if event.get("type") in _COSTED and (at := _instant(event)) is not None
    ]
    if not costed:
        return []
    spent = max(total - sum(cost for _, cost in costed), 0.0)
    began = min(at for event in events if (at := _instant(event)) is not None)
    series: list[tuple[datetime, float]] = [(began, round(spent, 6))]
    for at, cost in costed:
        spent += cost
        series.append((at, round(spent, 6)))
    return series
