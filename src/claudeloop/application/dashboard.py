"""What `claudeloop dashboard` and `claudeloop runs --all` show, between the ports and
the page: every run of this machine (the `RunIndex`), a fleet's runs (the `Fleet`), one
run (its record and the tail of its events), the accounts (the `AccountBoards`), and the
verbs its buttons ask of a live run.

Each reads records and tails only, never a whole events.jsonl: a page costs the same
after 100,000 events as after ten. Everything returned is masked by the `Mask` given.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from claudeloop.application.durations import parse_duration
from claudeloop.application.errors import UsageError
from claudeloop.application.fleet import control as fleet_control
from claudeloop.application.fleet import steer as fleet_steer
from claudeloop.application.inspection import Mask, control, takes_effect
from claudeloop.application.ports import AccountBoards, Fleet, IndexedRun, ProjectRuns, RunIndex
from claudeloop.application.records import RunRecord
from claudeloop.application.report import Report, merged, night_report
from claudeloop.application.run_facts import dollars_words, turns_words
from claudeloop.application.steering import add_note, probe_now, raise_caps
from claudeloop.application.summary import status_object
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.steering import AddNote, Cap, ProbeNow, RaiseCap, Steer

# How many of a run's last events its page reads: its timeline, spend and event list.
EVENT_TAIL = 400
# The runs of one working directory, by the directory.
RunsOf = Callable[[Path], ProjectRuns]
# What a view of a working directory's run masks: its run's secrets (its profile's
# credentials, its notification URLs, this environment's).
MaskOf = Callable[[Path], Mask]


# The verbs a run's page offers as buttons ---------------------------------------------


@dataclass(frozen=True)
class Verb:
    """A button of a live run's page: its name in the URL, its label, and what it asks
    of the run (given the run's directory's runs, the run id and the form's fields),
    returning what it said in words; a UsageError it raises is said on the page. A new
    verb is one more entry of `VERBS`."""

    name: str
    label: str
    ask: Callable[[ProjectRuns, str, Mapping[str, str]], str]
    # The text fields its form carries (a note's text, a cap's new value), by name.
    fields: tuple[str, ...] = ()
    # What it asks of a fleet's run (given the fleet, the run id and the form's fields);
    # None: a verb of this machine's runs only.
    ask_fleet: Callable[[Fleet, str, Mapping[str, str]], str] | None = None


def _controlled(command: ControlCommand) -> Callable[[ProjectRuns, str, Mapping[str, str]], str]:
    def ask(runs: ProjectRuns, run_id: str, _form: Mapping[str, str]) -> str:
        asked = control(runs, run_id, command)
        return f"asked run {asked.run_id} to {command.value}: {takes_effect(command)}"

    return ask


def _fleet_controlled(command: ControlCommand) -> Callable[[Fleet, str, Mapping[str, str]], str]:
    def ask(fleet: Fleet, run_id: str, _form: Mapping[str, str]) -> str:
        found = fleet_control(fleet, run_id, command)
        return f"asked run {run_id} (on {found.worker or 'its worker'}) to {command.value}"

    return ask


def _probe_now(runs: ProjectRuns, run_id: str, _form: Mapping[str, str]) -> str:
    sent = probe_now(runs, run_id)
    return f"asked run {sent.run_id} to probe now: {sent.will}"


def _caps(form: Mapping[str, str]) -> dict[Cap, float]:
    """The caps a raise form gives (empty fields left out); UsageError naming a field
    whose value is no positive number, or no duration."""
    caps: dict[Cap, float] = {}
    for cap, field in ((Cap.TURNS, "max_turns"), (Cap.DOLLARS, "max_dollars")):
        text = form.get(field, "").strip()
        if not text:
            continue
        try:
            value = float(int(text) if cap is Cap.TURNS else float(text))
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"{cap.value}: {text!r} is not a positive number")
        caps[cap] = value
    wait = form.get("max_wait", "").strip()
    if wait:
        try:
            caps[Cap.WAIT] = parse_duration(wait).total_seconds()
        except ValueError as error:
            raise UsageError(f"{Cap.WAIT.value}: {error}") from None
    if not caps:
        raise UsageError("give at least one of max-turns, max-dollars, max-wait")
    return caps


def _raise(runs: ProjectRuns, run_id: str, form: Mapping[str, str]) -> str:
    sent = raise_caps(runs, run_id, _caps(form), now=datetime.now(UTC))
    return "; ".join(f"asked run {each.run_id}: {each.will}" for each in sent)


def _note(runs: ProjectRuns, run_id: str, form: Mapping[str, str]) -> str:
    sent = add_note(runs, run_id, form.get("text", ""))
    return f"asked run {sent.run_id}: {sent.will}"


def _fleet_steered(
    asked: Callable[[Mapping[str, str]], list[Steer]],
) -> Callable[[Fleet, str, Mapping[str, str]], str]:
    def ask(fleet: Fleet, run_id: str, form: Mapping[str, str]) -> str:
        found = fleet_steer(fleet, run_id, asked(form), now=datetime.now(UTC))
        return (
            f"asked run {run_id} (on {found.worker or 'its worker'}); it applies it at a safe point"
        )

    return ask


def _fleet_note(form: Mapping[str, str]) -> list[Steer]:
    text = form.get("text", "")
    if not text.strip():
        raise UsageError("the note is empty; give the text to say to the next turn")
    return [AddNote(text)]


VERBS: tuple[Verb, ...] = (
    Verb(
        "stop",
        "Stop",
        _controlled(ControlCommand.STOP),
        ask_fleet=_fleet_controlled(ControlCommand.STOP),
    ),
    Verb(
        "wind-down",
        "Wind down",
        _controlled(ControlCommand.WIND_DOWN),
        ask_fleet=_fleet_controlled(ControlCommand.WIND_DOWN),
    ),
    Verb(
        "probe-now",
        "Probe now",
        _probe_now,
        ask_fleet=_fleet_steered(lambda _form: [ProbeNow()]),
    ),
    Verb(
        "raise",
        "Raise caps",
        _raise,
        fields=("max_turns", "max_dollars", "max_wait"),
        ask_fleet=_fleet_steered(lambda form: [RaiseCap(c, v) for c, v in _caps(form).items()]),
    ),
    Verb("note", "Add note", _note, fields=("text",), ask_fleet=_fleet_steered(_fleet_note)),
)


def verb_named(name: str) -> Verb | None:
    return next((verb for verb in VERBS if verb.name == name), None)


# Every run of the machine -------------------------------------------------------------


def machine_rows(
    index: RunIndex, runs_of: RunsOf, *, now: datetime, mask: MaskOf
) -> list[dict[str, Any]]:
    """Every run registered on this machine, newest first: where it stands now; a run
    whose directory is gone, or whose record cannot be read, is a row that says so."""
    return [run_row(entry, index, runs_of, now=now, mask=mask) for entry in index.runs()]


def run_row(
    entry: IndexedRun, index: RunIndex, runs_of: RunsOf, *, now: datetime, mask: MaskOf
) -> dict[str, Any]:
    masked = mask(entry.cwd)
    row: dict[str, Any] = {
        "key": entry.key,
        "run_id": entry.run_id,
        "cwd": str(entry.cwd),
        "directory": str(entry.directory),
        "host": entry.host,
        "account": entry.account,
        "started_at": entry.registered_at.isoformat(),
        "problem": None,
    }
    if not index.present(entry):
        return dict(masked({**row, "phase": "gone", "problem": f"{entry.directory}: gone"}))
    runs = runs_of(entry.cwd)
    try:
        record = runs.record(entry.run_id)
    except UsageError as error:
        return dict(masked({**row, "phase": "unreadable", "problem": str(error)}))
    status = status_object(record, now=now, driver_pid=runs.driver(entry.run_id))
    checks = status["verification"]
    return dict(
        masked(
            {
                **row,
                **{key: status[key] for key in _ROW_FIELDS},
                "waiting_for": status["capacity"] if status["next_probe_at"] else None,
                "last_verification": _verification_word(checks),
            }
        )
    )


_ROW_FIELDS = (
    # The read model's (application.run_facts), as every view says them.
    "title",
    "started_at",
    "ended_at",
    "duration_seconds",
    "sent",
    "answered",
    "refused",
    "probes",
    "turn_dollars",
    "probe_dollars",
    "said",
    "phase",
    "outcome",
    "capacity",
    "next_probe_at",
    "next_probe_in_seconds",
    "plan",
    "turns",
    "attempts",
    "dollars",
    "driver_alive",
    "overage_in_use",
    "reason",
    "sandbox",
    "blocked",
)


def _verification_word(checks: list[dict[str, Any]]) -> str | None:
    if not checks:
        return None
    passed = sum(1 for check in checks if check["passed"])
    return f"{passed}/{len(checks)} passed"


def fleet_rows(fleet: Fleet, *, mask: MaskOf) -> tuple[list[dict[str, Any]], str | None]:
    """The fleet's runs as rows, and what went wrong reading them (an engine that does
    not answer): the page says so and keeps serving."""
    try:
        if not fleet.exists():
            return [], f"{fleet.masked_url}: no fleet there yet (`claudeloop fleet init` makes one)"
        queue = fleet.queue()
        # Each run's summary row, never its record (issue 27).
        stored = fleet.summaries()
    except Exception as error:  # a driver's own errors: the engine is away, or refuses
        return [], f"{fleet.masked_url}: unreachable ({type(error).__name__}: {error})"
    rows: list[dict[str, Any]] = []
    for queued in queue:
        held = stored.get(queued.run_id)
        summary = held.summary if held is not None else None
        done = summary.plan_done if summary else None
        total = summary.plan_total if summary else None
        rows.append(
            {
                **mask(Path(queued.cwd))(queued.to_json()),
                "phase": (held.phase if held is not None else None) or queued.state,
                "turns": summary.turns if summary else None,
                "dollars": summary.dollars if summary else None,
                "plan": {"done": done, "total": total}
                if done is not None and total is not None
                else None,
                "next_probe_at": summary.next_probe_at.isoformat()
                if summary and summary.next_probe_at
                else None,
                "host": held.holder if held is not None else queued.worker,
                "verbs": [
                    {"name": verb.name, "label": verb.label, "fields": list(verb.fields)}
                    for verb in VERBS
                    if verb.ask_fleet is not None
                ]
                if queued.state == "running"
                else [],
            }
        )
    return rows, None


# One run ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    """A stretch of a run's timeline: a turn, a wait, a check, a review; or a probe (an
    instant: `end` equals `start`). `ok` False: it ended badly (a refused turn, a
    failed check)."""

    kind: str
    start: datetime
    end: datetime
    label: str
    ok: bool = True


@dataclass(frozen=True, slots=True)
class _IndexedSource:
    """The runs of one working directory that the index names, as a report reads them."""

    runs: ProjectRuns
    run_ids_here: tuple[str, ...]

    def run_ids(self) -> list[str]:
        return list(self.run_ids_here)

    def record(self, run_id: str) -> RunRecord:
        return self.runs.record(run_id)

    def event_lines(self, run_id: str, offset: int) -> tuple[list[bytes], int]:
        return self.runs.event_lines(run_id, offset)


def machine_report(
    index: RunIndex, runs_of: RunsOf, *, now: datetime, since: timedelta | None, mask: MaskOf
) -> Report:
    """`claudeloop report` of every run this machine's index names (the dashboard's
    report page), each working directory's runs masked by their own secrets. It reads
    each run's events whole, as the report does: a page asked for, never a stream."""
    by_cwd: dict[Path, list[str]] = {}
    for entry in index.runs():
        if index.present(entry):
            by_cwd.setdefault(entry.cwd, []).append(entry.run_id)
    reports = [
        night_report(_IndexedSource(runs_of(cwd), tuple(ids)), now=now, since=since, mask=mask(cwd))
        for cwd, ids in by_cwd.items()
    ]
    return merged(reports, now=now, since=since)


def last_hours(rows: list[dict[str, Any]], *, now: datetime, hours: int = 12) -> dict[str, Any]:
    """What the front page says of the last `hours`, from the rows alone (records, no
    events): the runs started since, their outcomes, turns and spend."""
    begins = now - timedelta(hours=hours)
    recent = [
        row
        for row in rows
        if row.get("started_at") and datetime.fromisoformat(str(row["started_at"])) >= begins
    ]
    outcomes: dict[str, int] = {}
    for row in recent:
        outcome = str(row.get("outcome") or row.get("phase") or "unknown")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    sent = sum(int(row.get("sent") or 0) for row in recent)
    answered = sum(int(row.get("answered") or 0) for row in recent)
    dollars = sum(float(row.get("dollars") or 0.0) for row in recent)
    probe_dollars = sum(float(row.get("probe_dollars") or 0.0) for row in recent)
    return {
        "hours": hours,
        "runs": len(recent),
        "outcomes": dict(sorted(outcomes.items())),
        "turns": sum(int(row.get("turns") or 0) for row in recent),
        "dollars": round(dollars, 6),
        # In the read model's words (application.run_facts), as each run's row says them.
        "said": {
            "turns": turns_words(sent, answered),
            "dollars": dollars_words(dollars, probe_dollars),
        },
    }


@dataclass(frozen=True)
class Section:
    """A part of the front page: its name (the page's anchor and colour), its heading,
    and its runs, newest first."""

    name: str
    heading: str
    rows: tuple[dict[str, Any], ...]


# What ends a run and needs a person before it can go on: credentials, a backend, a
# blocker the model named, a failure.
NEEDS_YOU = frozenset({"auth_failed", "backend_misconfigured", "blocked", "failed"})
# The front page's parts, in the order a person reads them at 7 am.
SECTIONS = (
    ("needs-you", "Needs you"),
    ("waiting", "Waiting"),
    ("running", "Running"),
    ("done", "Done"),
    ("ended", "Ended, can go on"),
    ("gone", "Gone (directory removed)"),
)


def section_of(row: Mapping[str, Any]) -> str:
    """Which part of the front page a run's row belongs to."""
    phase, outcome = row.get("phase"), row.get("outcome")
    if phase == "gone":
        return "gone"
    if phase == "unreadable" or outcome in NEEDS_YOU:
        return "needs-you"
    if outcome == "done":
        return "done"
    if outcome is not None:
        return "ended"
    if not row.get("driver_alive"):
        return "needs-you"  # killed mid-run: it goes on only with a resume
    return "waiting" if phase == "waiting" else "running"


def front_page(rows: list[dict[str, Any]]) -> tuple[Section, ...]:
    """Every run of the machine by what it asks of a person: what needs them first,
    then what waits (and until when), what runs, what is done, what ended and can go
    on, and last the runs whose directory is gone. Empty parts are left out."""
    parted: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in SECTIONS}
    for row in rows:
        parted[section_of(row)].append(row)
    return tuple(
        Section(name, heading, tuple(parted[name])) for name, heading in SECTIONS if parted[name]
    )


def find_entry(index: RunIndex, key: str) -> IndexedRun:
    """The run of the index named `key`; UsageError when there is none."""
    for entry in index.runs():
        if entry.key == key:
            return entry
    raise UsageError(f"no run {key!r} in this machine's index of runs")


def run_view(
    entry: IndexedRun, index: RunIndex, runs_of: RunsOf, *, now: datetime, mask: MaskOf
) -> dict[str, Any]:
    """A run's page: its row, plan checklist, last verification round (each check's
    output tail), the tail of its events, its timeline and spend drawn from them, and
    the offset its live events follow from."""
    row = run_row(entry, index, runs_of, now=now, mask=mask)
    view: dict[str, Any] = {
        "row": row,
        "plan": [],
        "checks": [],
        "events": [],
        "timeline": [],
        "spend": [],
        "offset": 0,
        # Notes a person left that wait for the next turn.
        "notes": [],
        "verbs": [
            {"name": verb.name, "label": verb.label, "fields": list(verb.fields)} for verb in VERBS
        ],
    }
    if row["problem"] is not None:
        return view
    runs, masked = runs_of(entry.cwd), mask(entry.cwd)
    record = runs.record(entry.run_id)
    try:
        lines, offset = runs.event_tail(entry.run_id, EVENT_TAIL)
    except UsageError as error:
        lines, offset = [], 0
        row["problem"] = str(error)
    events = [dict(masked(event)) for event in parsed_events(lines)]
    plan = record.plan.items if record.plan is not None else ()
    return {
        **view,
        "plan": [dict(masked({"text": item.text, "done": item.done})) for item in plan],
        "checks": [
            dict(
                masked(
                    {
                        "command": check.command.text,
                        "passed": check.passed,
                        "ended": check.ended,
                        "seconds": round(check.seconds, 1),
                        "tail": check.output_tail[-2000:],
                    }
                )
            )
            for check in record.state.last_checks
        ],
        "events": events,
        "timeline": timeline(events, now=now),
        "spend": spend_series(events, total=record.state.ledger.dollars),
        "offset": offset,
        "notes": [masked({"text": note})["text"] for note in record.state.notes],
    }


def parsed_events(lines: list[bytes]) -> list[dict[str, Any]]:
    """The lines that are event objects (a half-written or foreign line is skipped)."""
    events: list[dict[str, Any]] = []
    for raw in lines:
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("ts"), str):
            events.append(event)
    return events


def _instant(event: Mapping[str, Any]) -> datetime | None:
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


def timeline(events: list[dict[str, Any]], *, now: datetime) -> list[Span]:
    """The stretches the events show, in order: each opened by its start event and
    closed by the first event that ends it (one still open ends now); a probe is an
    instant of its own."""
    spans: list[Span] = []
    open_spans: dict[str, tuple[datetime, dict[str, Any]]] = {}
    for event in events:
        at = _instant(event)
        if at is None:
            continue
        kind = str(event.get("type"))
        for name, (started, opener) in list(open_spans.items()):
            if kind in _OPENERS[opener["type"]][1]:
                del open_spans[name]
                spans.append(Span(name, started, at, _label(opener, event), _ok(event)))
        if kind in _OPENERS:
            open_spans[_OPENERS[kind][0]] = (at, event)
        if kind == "probe.finished":
            spans.append(Span("probe", at, at, f"probe: {event.get('capacity')}", True))
    for name, (started, opener) in open_spans.items():
        spans.append(Span(name, started, max(now, started), _label(opener, None), True))
    return sorted(spans, key=lambda span: span.start)


def _label(opener: Mapping[str, Any], closer: Mapping[str, Any] | None) -> str:
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


def _ok(closer: Mapping[str, Any]) -> bool:
    if closer.get("type") == "verify.finished":
        return bool(closer.get("passed"))
    if closer.get("type") == "turn.failed":
        return False
    return closer.get("error") in (None, "")


_COSTED = ("turn.finished", "probe.finished", "review.finished")


def spend_series(events: list[dict[str, Any]], *, total: float) -> list[tuple[datetime, float]]:
    """The run's spend over the time the events span: each costed event's instant and
    the dollars spent by then, ending at the record's `total` (what came before the
    tail is the series' start)."""
    costed = [
        (at, float(event.get("cost_usd") or 0.0))
        for event in events
        if event.get("type") in _COSTED and (at := _instant(event)) is not None
    ]
    spent = max(total - sum(cost for _, cost in costed), 0.0)
    series: list[tuple[datetime, float]] = []
    for at, cost in costed:
        spent += cost
        series.append((at, round(spent, 6)))
    return series


# The accounts -----------------------------------------------------------------------


def accounts_view(
    boards: AccountBoards, rows: list[dict[str, Any]], *, now: datetime
) -> list[dict[str, Any]]:
    """Each account of this machine's capacity board: its windows, their use and reset
    as last seen, whether paid overage is in use, the runs that wait on it and the next
    of their probes."""
    accounts: list[dict[str, Any]] = []
    for board in boards.sightings():
        waiting = [
            row
            for row in rows
            if row.get("account") == board.account and row.get("next_probe_at") is not None
        ]
        probes = sorted(str(row["next_probe_at"]) for row in waiting)
        account: dict[str, Any] = {
            "account": board.account,
            "readable": board.sighting is not None,
            "waiting": [row["run_id"] for row in waiting],
            "next_probe_at": probes[0] if probes else None,
            "runs": [row["run_id"] for row in rows if row.get("account") == board.account],
        }
        sighting = board.sighting
        if sighting is not None:
            signals = sighting.signals
            account |= {
                "standing": sighting.standing,
                "at": sighting.at.isoformat(),
                "age_seconds": round(max((now - sighting.at).total_seconds(), 0.0)),
                "source": sighting.source,
                "run_id": sighting.run_id,
                "host": sighting.host,
                "status": signals.rate_limit_status,
                "window": signals.rate_limit_type,
                "resets_at": signals.resets_at.isoformat() if signals.resets_at else None,
                "utilization": signals.utilization,
                "overage_in_use": signals.overage_in_use,
                "overage_status": signals.overage_status,
                "windows": [
                    {
                        "window": window.window,
                        "utilization": window.utilization,
                        "resets_at": window.resets_at.isoformat() if window.resets_at else None,
                        "status": window.status,
                    }
                    for window in signals.windows
                ],
            }
        accounts.append(account)
    return accounts
