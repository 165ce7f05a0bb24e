"""What `claudeloop dashboard` and `claudeloop runs --all` show, between the ports and
the page: every run of this machine (the `RunIndex`) and its front page in parts, a
fleet's runs (the `Fleet`), the report of every run, and the accounts (the
`AccountBoards`). A run's own page is in run_page.py, the verbs of its buttons in
verbs.py.

Each reads records only, never a whole events.jsonl: a page costs the same after
100,000 events as after ten. Everything returned is masked by the `Mask` given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from claudeloop.application.durations import duration_said
from claudeloop.application.errors import UsageError
from claudeloop.application.json_form import JsonObject
from claudeloop.application.masking import Mask, masked
from claudeloop.application.ports import (
    AccountBoards,
    Fleet,
    IndexedRun,
    ProjectRuns,
    QueuedRun,
    RunIndex,
    Sighting,
)
from claudeloop.application.records import RunRecord
from claudeloop.application.report import Report, merged, night_report
from claudeloop.application.run_facts import dollars_words, turns_words
from claudeloop.application.run_rows import RunPlace, RunRow
from claudeloop.application.run_status import run_status_of
from claudeloop.application.verbs import VERBS, Verb

# The runs of one working directory, by the directory.
RunsOf = Callable[[Path], ProjectRuns]
# What a view of a working directory's run masks: its run's secrets (its profile's
# credentials, its notification URLs, this environment's).
MaskOf = Callable[[Path], Mask]


# Every run of the machine -------------------------------------------------------------


def machine_rows(index: RunIndex, runs_of: RunsOf, *, now: datetime, mask: MaskOf) -> list[RunRow]:
    """Every run registered on this machine, newest first: where it stands now; a run
    whose directory is gone, or whose record cannot be read, is a row that says so."""
    return [run_row(entry, index, runs_of, now=now, mask=mask) for entry in index.runs()]


def run_row(
    entry: IndexedRun, index: RunIndex, runs_of: RunsOf, *, now: datetime, mask: MaskOf
) -> RunRow:
    place = RunPlace(
        cwd=str(entry.cwd),
        key=entry.key,
        directory=str(entry.directory),
        host=entry.host,
        account=entry.account,
        registered_at=entry.registered_at,
    )
    if not index.present(entry):
        row = RunRow(entry.run_id, place, None, "gone", f"{entry.directory}: gone")
    else:
        runs = runs_of(entry.cwd)
        try:
            record = runs.record(entry.run_id)
        except UsageError as error:
            row = RunRow(entry.run_id, place, None, "unreadable", str(error))
        else:
            status = run_status_of(record, now=now, driver_pid=runs.driver(entry.run_id))
            row = RunRow(entry.run_id, place, status, status.facts.phase)
    return masked(row, mask(entry.cwd))


@dataclass(frozen=True, slots=True)
class FleetRow:
    """A run of the fleet's queue as the front page shows it: the queue's order, its
    phase (else its state in the queue), what its summary says, its machine and the
    verbs its buttons ask (a running run's)."""

    queued: QueuedRun
    phase: str
    turns: int | None
    dollars: float | None
    plan: tuple[int, int] | None
    next_probe_at: datetime | None
    host: str | None
    verbs: tuple[Verb, ...]


def fleet_rows(fleet: Fleet, *, mask: MaskOf) -> tuple[list[FleetRow], str | None]:
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
    rows: list[FleetRow] = []
    for queued in queue:
        held = stored.get(queued.run_id)
        summary = held.summary if held is not None else None
        done = summary.plan_done if summary else None
        total = summary.plan_total if summary else None
        row = FleetRow(
            queued=queued,
            phase=(held.phase if held is not None else None) or queued.state,
            turns=summary.turns if summary else None,
            dollars=summary.dollars if summary else None,
            plan=(done, total) if done is not None and total is not None else None,
            next_probe_at=summary.next_probe_at if summary else None,
            host=held.holder if held is not None else queued.worker,
            verbs=tuple(verb for verb in VERBS if verb.ask_fleet is not None)
            if queued.state == "running"
            else (),
        )
        rows.append(masked(row, mask(Path(queued.cwd))))
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


@dataclass(frozen=True, slots=True)
class RecentRuns:
    """What the front page says of the last `hours`: the runs started since, their
    outcomes, turns, spend and time waited."""

    hours: int
    runs: int
    outcomes: tuple[tuple[str, int], ...]
    sent: int
    answered: int
    dollars: float
    probe_dollars: float
    estimated_dollars: float
    waited_seconds: int

    @property
    def turns_said(self) -> str:
        return turns_words(self.sent, self.answered)

    @property
    def dollars_said(self) -> str:
        return dollars_words(self.dollars, self.probe_dollars, self.estimated_dollars)

    @property
    def waited_said(self) -> str:
        return duration_said(self.waited_seconds)

    def to_json(self) -> JsonObject:
        return {
            "hours": self.hours,
            "runs": self.runs,
            "outcomes": dict(self.outcomes),
            "sent": self.sent,
            "answered": self.answered,
            "dollars": round(self.dollars, 6),
            "waited_seconds": self.waited_seconds,
            # In the read model's words (application.run_facts), as each run's row says them.
            "said": {
                "turns": self.turns_said,
                "dollars": self.dollars_said,
                "waited": self.waited_said,
            },
        }


def last_hours(rows: list[RunRow], *, now: datetime, hours: int = 12) -> RecentRuns:
    """What the front page says of the last `hours`, from the rows alone (records, no
    events): the runs started since, their outcomes, turns and spend."""
    begins = now - timedelta(hours=hours)
    recent = [row for row in rows if (started := row.started_at) is not None and started >= begins]
    outcomes: dict[str, int] = {}
    for row in recent:
        outcome = row.outcome or row.phase or "unknown"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    facts = [row.facts for row in recent if row.facts is not None]
    return RecentRuns(
        hours=hours,
        runs=len(recent),
        outcomes=tuple(sorted(outcomes.items())),
        sent=sum(each.sent for each in facts),
        answered=sum(each.answered for each in facts),
        dollars=sum(each.dollars for each in facts),
        probe_dollars=sum(each.probe_dollars for each in facts),
        estimated_dollars=sum(each.estimated_dollars for each in facts),
        waited_seconds=sum(each.waited_seconds for each in facts),
    )


@dataclass(frozen=True)
class Section:
    """A part of the front page: its name (the page's anchor and colour), its heading,
    and its runs, newest first."""

    name: str
    heading: str
    rows: tuple[RunRow, ...]


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
    ("rehearsals", "Rehearsals kept (rehearse --keep)"),
    ("gone", "Gone (directory removed)"),
)


def severity(outcome: str | None) -> str | None:
    """How an outcome reads to a person, the colour every view gives it: `needs-you`
    (red: credentials, a backend, a blocker, a failure), `done`, or `ended` (a cap, a
    wait, a stop: it can go on); None for a run that has not ended."""
    if outcome is None:
        return None
    if outcome in NEEDS_YOU:
        return "needs-you"
    return "done" if outcome == "done" else "ended"


def section_of(row: RunRow) -> str:
    """Which part of the front page a run's row belongs to."""
    if row.phase == "gone":
        return "gone"
    if row.rehearsal and not row.driver_alive:
        # A rehearsal kept with --keep: a tryout, whatever it ended in, never beside
        # the real runs that need a person.
        return "rehearsals"
    if row.phase == "unreadable":
        return "needs-you"
    ended = severity(row.outcome)
    if ended is not None:
        return ended
    if not row.driver_alive:
        return "needs-you"  # killed mid-run: it goes on only with a resume
    return "waiting" if row.phase == "waiting" else "running"


def front_page(rows: list[RunRow]) -> tuple[Section, ...]:
    """Every run of the machine by what it asks of a person: what needs them first,
    then what waits (and until when), what runs, what is done, what ended and can go
    on, and last the runs whose directory is gone. Empty parts are left out."""
    parted: dict[str, list[RunRow]] = {name: [] for name, _ in SECTIONS}
    for row in rows:
        parted[section_of(row)].append(row)
    return tuple(
        Section(name, heading, tuple(parted[name])) for name, heading in SECTIONS if parted[name]
    )


def find_entry(index: RunIndex, key: str) -> IndexedRun:
    """The run of the index named `key`: its key, or its run id when one run alone has
    it (a link a person types, or copies from `claudeloop runs`); UsageError when there
    is none, or when the id names runs of several directories (each one's key said)."""
    entries = index.runs()
    for entry in entries:
        if entry.key == key:
            return entry
    named = [entry for entry in entries if entry.run_id == key]
    if len(named) == 1:
        return named[0]
    if named:
        keys = ", ".join(sorted(entry.key for entry in named))
        raise UsageError(f"run id {key!r} names {len(named)} runs of this machine: {keys}")
    raise UsageError(f"no run {key!r} in this machine's index of runs")


# The accounts -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AccountView:
    """An account of this machine's capacity board: what it was last seen to stand at
    (None: its record cannot be read), how long ago, the runs that spend it, those
    that wait on it and the next of their probes."""

    account: str
    sighting: Sighting | None
    age_seconds: int | None
    runs: tuple[str, ...]
    waiting: tuple[str, ...]
    next_probe_at: datetime | None


def accounts_view(boards: AccountBoards, rows: list[RunRow], *, now: datetime) -> list[AccountView]:
    """Each account of this machine's capacity board: its windows, their use and reset
    as last seen, whether paid overage is in use, the runs that wait on it and the next
    of their probes."""
    accounts: list[AccountView] = []
    for board in boards.sightings():
        waiting = [
            row for row in rows if row.account == board.account and row.next_probe_at is not None
        ]
        probes = sorted(at for row in waiting if (at := row.next_probe_at) is not None)
        sighting = board.sighting
        accounts.append(
            AccountView(
                account=board.account,
                sighting=sighting,
                age_seconds=None
                if sighting is None
                else round(max((now - sighting.at).total_seconds(), 0.0)),
                runs=tuple(row.run_id for row in rows if row.account == board.account),
                waiting=tuple(row.run_id for row in waiting),
                next_probe_at=probes[0] if probes else None,
            )
        )
    return accounts
