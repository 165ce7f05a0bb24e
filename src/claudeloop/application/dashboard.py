"""What `claudeloop dashboard` and `claudeloop runs --all` show, between the ports and
the page: every run of this machine (the `RunIndex`) and its front page in parts, a
fleet's runs (the `Fleet`), the report of every run, and the accounts (the
`AccountBoards`). A run's own page is in run_page.py, the verbs of its buttons in
verbs.py.

Each reads records only, never a whole events.jsonl: a page costs the same after
100,000 events as after ten. Everything returned is masked by the `Mask` given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from claudeloop.application.durations import duration_said
from claudeloop.application.errors import UsageError
from claudeloop.application.inspection import Mask
from claudeloop.application.ports import AccountBoards, Fleet, IndexedRun, ProjectRuns, RunIndex
from claudeloop.application.records import RunRecord
from claudeloop.application.report import Report, merged, night_report
from claudeloop.application.run_facts import dollars_words, turns_words
from claudeloop.application.summary import row_fields
from claudeloop.application.verbs import VERBS, verb_forms
from claudeloop.domain.capacity import service_name

# The runs of one working directory, by the directory.
RunsOf = Callable[[Path], ProjectRuns]
# What a view of a working directory's run masks: its run's secrets (its profile's
# credentials, its notification URLs, this environment's).
MaskOf = Callable[[Path], Mask]


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
    return dict(
        masked({**row, **row_fields(record, now=now, driver_pid=runs.driver(entry.run_id))})
    )


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
                "verbs": verb_forms(tuple(verb for verb in VERBS if verb.ask_fleet is not None))
                if queued.state == "running"
                else [],
            }
        )
    return rows, None


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
    estimated = sum(float(row.get("estimated_dollars") or 0.0) for row in recent)
    waited = sum(int(row.get("waited_seconds") or 0) for row in recent)
    return {
        "hours": hours,
        "runs": len(recent),
        "outcomes": dict(sorted(outcomes.items())),
        "sent": sent,
        "answered": answered,
        "dollars": round(dollars, 6),
        "waited_seconds": waited,
        # In the read model's words (application.run_facts), as each run's row says them.
        "said": {
            "turns": turns_words(sent, answered),
            "dollars": dollars_words(dollars, probe_dollars, estimated),
            "waited": duration_said(waited),
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
                "window": service_name(signals.rate_limit_type)
                if signals.rate_limit_type is not None
                else None,
                "resets_at": signals.resets_at.isoformat() if signals.resets_at else None,
                "utilization": signals.utilization,
                "overage_in_use": signals.overage_in_use,
                "overage_status": signals.overage_status,
                "windows": [
                    {
                        "window": service_name(window.window),
                        "utilization": window.utilization,
                        "resets_at": window.resets_at.isoformat() if window.resets_at else None,
                        "status": window.status,
                    }
                    for window in signals.windows
                ],
            }
        accounts.append(account)
    return accounts
