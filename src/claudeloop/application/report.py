"""`claudeloop report`: what the runs did over a night (or any stretch), per run and in
total: outcome, turns, dollars, the time spent waiting and on what, turns refused,
checks and reviews passed and failed, and what is left.

It reads each run's record (state.json) and its events (events.jsonl) through a
`ReportSource`: a project's runs (`ProjectRuns` is one), or any other list of runs
that reads the same way (the dashboard's index of every run of the machine).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Protocol

from claudeloop.application import events
from claudeloop.application.durations import duration_said
from claudeloop.application.errors import UsageError
from claudeloop.application.events import event_from
from claudeloop.application.json_form import JsonObject
from claudeloop.application.masking import Mask
from claudeloop.application.pictures import Series, Span
from claudeloop.application.records import RunRecord
from claudeloop.application.run_facts import (
    RunFacts,
    apportioned,
    dollars_words,
    run_facts,
    turns_words,
)


class ReportSource(Protocol):
    """The runs a report is of, each by its id (what `ProjectRuns` offers of them)."""

    def run_ids(self) -> list[str]: ...

    def record(self, run_id: str) -> RunRecord:
        """UsageError, naming the file, when it cannot be read."""
        ...

    def event_lines(self, run_id: str, offset: int) -> tuple[list[bytes], int]: ...


@dataclass(frozen=True, slots=True)
class RunReport:
    # What every view says of the run (application.run_facts): its title, counts,
    # money, times, the time waited, what is left and the plan's progress.
    facts: RunFacts
    run_id: str
    cwd: str
    started_at: datetime
    # done, blocked, stopped... or, for a run going on, its phase (waiting, running).
    outcome: str
    ended: bool
    reason: str
    # Whole seconds waited on each thing waited for ("5-hour window closed"), measured
    # between its events and apportioned so they add up to the facts' time waited.
    waited_on: dict[str, int]
    checks_passed: int
    checks_failed: int
    reviews_passed: int
    reviews_failed: int
    spend: Series
    spans: tuple[Span, ...]
    last_event_at: datetime | None

    @property
    def left(self) -> tuple[str, ...]:
        return self.facts.left

    @property
    def waited_seconds(self) -> int:
        return self.facts.waited_seconds


@dataclass(frozen=True, slots=True)
class Unreadable:
    run_id: str
    problem: str


@dataclass(frozen=True, slots=True)
class Totals:
    """What the report's runs add up to: their outcomes, turns, probes, spend, the time
    waited and on what, their checks and reviews."""

    of: tuple[RunReport, ...] = ()

    @property
    def runs(self) -> int:
        return len(self.of)

    @property
    def outcomes(self) -> dict[str, int]:
        counted: dict[str, int] = {}
        for run in self.of:
            counted[run.outcome] = counted.get(run.outcome, 0) + 1
        return dict(sorted(counted.items()))

    @property
    def waited_on(self) -> dict[str, int]:
        waited_on: dict[str, int] = {}
        for run in self.of:
            for what, seconds in run.waited_on.items():
                waited_on[what] = waited_on.get(what, 0) + seconds
        return dict(sorted(waited_on.items()))

    @property
    def sent(self) -> int:
        return sum(run.facts.sent for run in self.of)

    @property
    def answered(self) -> int:
        return sum(run.facts.answered for run in self.of)

    @property
    def probes(self) -> int:
        return sum(run.facts.probes for run in self.of)

    @property
    def dollars(self) -> float:
        return sum(run.facts.dollars for run in self.of)

    @property
    def probe_dollars(self) -> float:
        return sum(run.facts.probe_dollars for run in self.of)

    @property
    def waited_seconds(self) -> int:
        # Whole seconds, the parts adding up to the total as each run's do.
        return sum(run.waited_seconds for run in self.of)

    @property
    def turns_said(self) -> str:
        return turns_words(self.sent, self.answered)

    @property
    def dollars_said(self) -> str:
        estimated = sum(run.facts.estimated_dollars for run in self.of)
        return dollars_words(self.dollars, self.probe_dollars, estimated)

    @property
    def waited_said(self) -> str:
        return duration_said(self.waited_seconds)

    def to_json(self) -> JsonObject:
        return {
            "runs": self.runs,
            "outcomes": self.outcomes,
            "sent": self.sent,
            "answered": self.answered,
            "refused": sum(run.facts.refused for run in self.of),
            "probes": self.probes,
            "dollars": round(self.dollars, 6),
            "turn_dollars": round(max(self.dollars - self.probe_dollars, 0.0), 6),
            "probe_dollars": round(self.probe_dollars, 6),
            "said": {
                "turns": self.turns_said,
                "dollars": self.dollars_said,
                "waited": self.waited_said,
            },
            "waited_seconds": self.waited_seconds,
            "waited_on": self.waited_on,
            "checks": {
                "passed": sum(run.checks_passed for run in self.of),
                "failed": sum(run.checks_failed for run in self.of),
            },
            "reviews": {
                "passed": sum(run.reviews_passed for run in self.of),
                "failed": sum(run.reviews_failed for run in self.of),
            },
        }


@dataclass(frozen=True, slots=True)
class Report:
    now: datetime
    # Where the report begins (None: every run there is).
    since: datetime | None
    runs: tuple[RunReport, ...]
    unreadable: tuple[Unreadable, ...] = ()
    totals: Totals = field(default_factory=Totals)

    @property
    def start(self) -> datetime:
        """Where the pictures' time axis begins."""
        firsts = [run.spans[0].start if run.spans else run.started_at for run in self.runs]
        first = min(firsts, default=self.now - timedelta(hours=12))
        return max(first, self.since) if self.since else first

    @property
    def end(self) -> datetime:
        """Where it ends: now while a run goes on, else the last thing a run did."""
        if not self.runs or any(not run.ended for run in self.runs):
            return self.now
        return max(run.last_event_at or run.started_at for run in self.runs)


def night_report(
    source: ReportSource, *, now: datetime, since: timedelta | None, mask: Mask
) -> Report:
    """The runs that started or did something since `now - since` (every run: None),
    oldest first, masked as every view of a run is."""
    begins = now - since if since is not None else None
    found: list[RunReport] = []
    unreadable: list[Unreadable] = []
    for run_id in source.run_ids():
        try:
            record = source.record(run_id)
            lines, _ = source.event_lines(run_id, 0)
        except UsageError as error:
            # What was wrong may quote the file (a value the codec could not read).
            unreadable.append(Unreadable(run_id, str(mask({"problem": str(error)})["problem"])))
            continue
        run = _run_report(record, lines, now=now, begins=begins, mask=mask)
        recent = run.last_event_at or run.started_at
        if begins is None or run.started_at >= begins or recent >= begins:
            found.append(run)
    found.sort(key=lambda run: run.started_at)
    return Report(now, begins, tuple(found), tuple(unreadable), Totals(tuple(found)))


def merged(reports: list[Report], *, now: datetime, since: timedelta | None) -> Report:
    """One report of several sources' (each masked by its own run's secrets): the
    runs oldest first, the totals over all of them."""
    runs = sorted((run for each in reports for run in each.runs), key=lambda run: run.started_at)
    unreadable = tuple(u for each in reports for u in each.unreadable)
    begins = now - since if since is not None else None
    return Report(now, begins, tuple(runs), unreadable, Totals(tuple(runs)))


def report_object(report: Report) -> JsonObject:
    """The report as `--json` writes it."""
    return {
        "now": report.now.isoformat(),
        "since": report.since.isoformat() if report.since else None,
        "totals": report.totals.to_json(),
        "runs": [
            {
                **run.facts.to_json(),
                "cwd": run.cwd,
                "outcome": run.outcome,
                "ended": run.ended,
                "waited_on": run.waited_on,
                "checks": {"passed": run.checks_passed, "failed": run.checks_failed},
                "reviews": {"passed": run.reviews_passed, "failed": run.reviews_failed},
            }
            for run in report.runs
        ],
        "unreadable": [{"run_id": u.run_id, "problem": u.problem} for u in report.unreadable],
    }


@dataclass
class _Tally:
    """What the events of one run add up to, read once from first to last."""

    now: datetime
    spans: list[Span] = field(default_factory=list)
    points: list[tuple[datetime, float]] = field(default_factory=list)
    dollars: float = 0.0
    waited_on: dict[str, float] = field(default_factory=dict)
    checks: list[bool] = field(default_factory=list)
    reviews: list[bool] = field(default_factory=list)
    last: datetime | None = None
    # When the events say the run last ended.
    finished: datetime | None = None
    # What began and has not ended yet: (kind, since, label).
    open: dict[str, tuple[datetime, str]] = field(default_factory=dict)

    def close(
        self, kind: str, at: datetime, label: str | None = None, *, refused: bool = False
    ) -> None:
        began = self.open.pop(kind, None)
        if began is None:
            return
        since, said = began
        drawn = "turn_refused" if refused else kind
        self.spans.append(Span(drawn, since, max(at, since), label or said))
        if kind == "wait":
            seconds = max((at - since).total_seconds(), 0.0)
            # What was waited on, without when it was to end: one line per limit.
            what = said.split(" until ")[0]
            self.waited_on[what] = self.waited_on.get(what, 0.0) + seconds

    def bill(self, at: datetime, cost: float) -> None:
        if cost > 0:
            self.dollars += cost
            self.points.append((at, self.dollars))

    def hear(self, event: events.Event, at: datetime) -> None:
        self.last = at
        match event:
            case events.TurnStarted(turn=turn):
                self.close("wait", at)
                self.open["turn"] = (at, f"turn {turn}")
            case events.TurnFinished(turn=turn, verdict=verdict, cost_usd=cost, error=error):
                # A turn a limit or an error refused is marked, as a failed check is.
                refused = verdict == "refused" or bool(error)
                self.close("turn", at, f"turn {turn}: {verdict}", refused=refused)
                self.bill(at, cost)
            case events.TurnFailed(turn=turn, reason=reason):
                self.close("turn", at, f"turn {turn}: failed: {reason}", refused=True)
            case events.WaitStarted(capacity=capacity):
                self.close("wait", at)
                self.open["wait"] = (at, capacity)
            case events.ProbeFinished(capacity=capacity, cost_usd=cost):
                self.close("wait", at)
                self.spans.append(Span("probe", at, at, f"probe: {capacity}"))
                self.bill(at, cost)
            case events.VerifyStarted(command=command):
                self.open["check"] = (at, command)
            case events.VerifyFinished(command=command, passed=passed):
                self.checks.append(passed)
                began = self.open.pop("check", None)
                since = began[0] if began else at
                kind = "check" if passed else "check_failed"
                ended = "passed" if passed else "failed"
                self.spans.append(Span(kind, since, max(at, since), f"{command}: {ended}"))
            case events.ReviewStarted(turn=turn):
                self.open["review"] = (at, f"review of turn {turn}")
            case events.ReviewFinished(verdict=verdict, cost_usd=cost):
                if verdict != "refused":
                    self.reviews.append(verdict == "done")
                self.close("review", at, f"review: {verdict}")
                self.bill(at, cost)
            case events.RunFinished():
                self.finished = at
                for kind in list(self.open):
                    self.close(kind, at)
            case _:
                pass

    def finish(self) -> None:
        """What is going on still is drawn up to now."""
        for kind in list(self.open):
            self.close(kind, self.now)


def _run_report(
    record: RunRecord, lines: list[bytes], *, now: datetime, begins: datetime | None, mask: Mask
) -> RunReport:
    tally = _Tally(now)
    for raw in lines:
        try:
            line = json.loads(raw)
            at = datetime.fromisoformat(str(line["ts"]))
        except (ValueError, KeyError, TypeError):
            continue  # a line cut off by a crash, or hand-edited: the rest still counts
        if at.tzinfo is None:
            continue
        event = event_from(line)
        if event is not None:
            tally.hear(event, at)
    tally.finish()
    state = record.state
    facts = run_facts(record, now=now, ended_at=tally.finished)
    texts = dict(
        mask(
            {
                "reason": state.reason,
                "title": facts.title,
                "left": list(facts.left),
                "waited_on": tally.waited_on,
                "spans": [span.label for span in tally.spans],
            }
        )
    )
    spans = tuple(
        Span(span.kind, span.start, span.end, str(label))
        for span, label in zip(tally.spans, texts["spans"], strict=True)
        if begins is None or span.end >= begins
    )
    outcome = state.outcome.value if state.outcome else state.phase.value
    shown = replace(
        facts,
        reason=str(texts["reason"]),
        title=str(texts["title"]),
        left=tuple(str(item) for item in texts["left"]),
    )
    waited_on = {str(k): float(v) for k, v in dict(texts["waited_on"]).items()}
    return RunReport(
        facts=shown,
        run_id=record.run_id,
        cwd=str(record.spec.cwd),
        started_at=record.started_at,
        outcome=outcome,
        ended=state.phase.terminal,
        reason=str(texts["reason"]),
        waited_on=apportioned(facts.waited_seconds, waited_on),
        checks_passed=sum(tally.checks),
        checks_failed=len(tally.checks) - sum(tally.checks),
        reviews_passed=sum(tally.reviews),
        reviews_failed=len(tally.reviews) - sum(tally.reviews),
        spend=Series(record.run_id, tuple(tally.points)),
        spans=spans,
        last_event_at=tally.last,
    )
