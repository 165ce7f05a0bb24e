"""One read model of a run: what every view says of it (`status`, `runs`, `report`,
summary.md, the dashboard, and each `--json`), made once from its record by
`run_facts`, so no two of them can seem to disagree.

The counts and the money are said in the same words everywhere (`turns_said`,
`dollars_said`): "4 sent, 3 answered, 1 refused"; "$0.0056 (turns $0.0048 + probes
$0.0008)", each sum at the precision of `money` (cents from a dollar up, else up to
four decimals), and the parts adding up to the total as written. So are the time
waited (whole seconds; what it was waited on, `apportioned`, adds up to it), the times
(`instant_said`, `duration_said`: "running for 42s" while it goes on), what is left
and the plan's progress.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from claudeloop.application.durations import duration_said, instant_said
from claudeloop.application.json_form import JsonObject
from claudeloop.application.records import RunRecord
from claudeloop.application.waiting import with_time_waited
from claudeloop.domain.budget import money
from claudeloop.domain.loop import Outcome
from claudeloop.domain.text import first_line

# How long a title may be: a prompt's first line can be a paragraph.
TITLE_LENGTH = 80


@dataclass(frozen=True, slots=True)
class RunFacts:
    """A run as a person reads it: its title, where it stands or how it ended and why,
    the turns sent, answered and refused, its probes, what it cost (probes included,
    and said apart), and when it started, ended and how long it took."""

    run_id: str
    title: str
    cwd: str
    phase: str
    # done, blocked, ...; None while it goes on.
    outcome: str | None
    # Why it stopped (or, going on, what the last thing that ended it said).
    reason: str
    sent: int
    answered: int
    probes: int
    # Every dollar billed: the turns' (answered, refused, reviews) and the probes'.
    dollars: float
    probe_dollars: float
    # The part of `dollars` that is an estimate (requests a crash cut off in flight).
    estimated_dollars: float
    started_at: datetime
    # None while the run goes on, or for a run a claudeloop of before ended.
    ended_at: datetime | None
    # From its start to its end, or to now while it goes on; None: the end is unknown.
    duration_seconds: float | None
    # The time waited for capacity, in whole seconds, as every view says it.
    waited_seconds: int = 0
    # What is left: the plan's open items, else the remaining work the model listed
    # last turn (`left_from` says which); nothing once it is done.
    left: tuple[str, ...] = ()
    left_from: Literal["plan", "model"] | None = None
    # The plan's items checked and in all, by the run's own count (None: no plan).
    plan: tuple[int, int] | None = None
    # Whether the run writes its checkmarks into the plan file (`--update-plan`).
    plan_written: bool = False

    @property
    def refused(self) -> int:
        """Prompts sent that were not answered: a limit or an error refused them."""
        return max(self.sent - self.answered, 0)

    @property
    def turn_dollars(self) -> float:
        return max(self.dollars - self.probe_dollars, 0.0)

    @property
    def state(self) -> str:
        """One word for where it stands: how it ended, else its phase."""
        return self.outcome or self.phase

    @property
    def turns_said(self) -> str:
        return turns_words(self.sent, self.answered)

    @property
    def dollars_said(self) -> str:
        return dollars_words(self.dollars, self.probe_dollars, self.estimated_dollars)

    @property
    def duration_said(self) -> str:
        if self.duration_seconds is None:
            return "-"
        return duration_said(self.duration_seconds)

    @property
    def times_said(self) -> str:
        """`started 2026-11-30 09:00:00 UTC, ended ... UTC, took 1m04s`; while it goes
        on, `started ..., running for 42s`."""
        started = f"started {instant_said(self.started_at)}"
        if self.ended_at is not None:
            return f"{started}, ended {instant_said(self.ended_at)}, took {self.duration_said}"
        if self.outcome is None:
            return f"{started}, running for {self.duration_said}"
        return f"{started}, ended at a time not recorded"

    @property
    def waited_said(self) -> str:
        return duration_said(self.waited_seconds)

    @property
    def left_from_said(self) -> str:
        """Where what is left comes from, in words (a view says it beside the list)."""
        match self.left_from:
            case "plan":
                return "the plan's open items"
            case "model":
                return "the remaining work the model listed last turn"
            case None:
                return "nothing"

    @property
    def plan_said(self) -> str | None:
        """`2/3 items done`, saying where "done" comes from when the file is not kept
        in step: the run's own count (an accepted Done checks every item) is not what
        the file shows unless the model ticked it or the run writes it."""
        if self.plan is None:
            return None
        done, total = self.plan
        if self.plan_written:
            return f"{done}/{total} items done"
        return (
            f"{done}/{total} items done (the run's count; the plan file gets checkmarks "
            "only with --update-plan)"
        )

    def to_json(self) -> JsonObject:
        """The facts as every `--json` carries them, beside its own keys."""
        return {
            "run_id": self.run_id,
            "title": self.title,
            "phase": self.phase,
            "outcome": self.outcome,
            "reason": self.reason,
            "sent": self.sent,
            "answered": self.answered,
            "refused": self.refused,
            "probes": self.probes,
            "dollars": round(self.dollars, 6),
            "turn_dollars": round(self.turn_dollars, 6),
            "probe_dollars": round(self.probe_dollars, 6),
            "estimated_dollars": round(self.estimated_dollars, 6),
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat() if self.ended_at else None,
            "duration_seconds": None
            if self.duration_seconds is None
            else round(self.duration_seconds, 1),
            "waited_seconds": self.waited_seconds,
            "left": list(self.left),
            "left_from": self.left_from,
            "plan": None if self.plan is None else {"done": self.plan[0], "total": self.plan[1]},
            # The same words every view says them in.
            "said": {
                "turns": self.turns_said,
                "dollars": self.dollars_said,
                "duration": self.duration_said,
                "times": self.times_said,
                "waited": self.waited_said,
                "plan": self.plan_said,
                "left_from": self.left_from_said,
            },
        }


def turns_words(sent: int, answered: int) -> str:
    """`4 sent, 3 answered, 1 refused`: the one way every view says a run's turns (or a
    report's total of them)."""
    return f"{sent} sent, {answered} answered, {max(sent - answered, 0)} refused"


def dollars_words(dollars: float, probe_dollars: float, estimated_dollars: float = 0.0) -> str:
    """The total, and, when probes cost something, its two parts, which add up to the
    total as written (each rounded to the total's precision): `$0.0056 (turns $0.0048 +
    probes $0.0008)`. A total that holds an estimate (requests a turn cut off had in
    flight, docs/architecture/decisions/0010-the-ledger-under-kill-9.md) says so, with
    the estimated part: `$0.0056 (≈, includes $0.0004 estimated for a turn cut off)`."""
    quantum = 0.01 if dollars >= 1 else 0.0001
    parts: list[str] = []
    total = dollars
    if probe_dollars > 0:
        total = round(dollars / quantum) * quantum
        probes = round(probe_dollars / quantum) * quantum
        parts.append(f"turns {money(max(total - probes, 0.0))} + probes {money(probes)}")
    if estimated_dollars > 0:
        parts.append(f"≈, includes {money(estimated_dollars)} estimated for a turn cut off")
    return money(total) + (f" ({'; '.join(parts)})" if parts else "")


def run_facts(record: RunRecord, *, now: datetime, ended_at: datetime | None = None) -> RunFacts:
    """The facts of `record` at `now`. `ended_at`: when its events say it ended, for a
    record that does not know (written by a claudeloop of before)."""
    state = record.state
    ledger = state.ledger
    terminal = state.phase.terminal
    end = (record.ended_at or ended_at) if terminal else None
    if terminal:
        duration = (end - record.started_at).total_seconds() if end is not None else None
    else:
        duration = (now - record.started_at).total_seconds()
    left, left_from = _left(record)
    return RunFacts(
        run_id=record.run_id,
        title=task_title(record),
        cwd=str(record.spec.cwd),
        phase=state.phase.value,
        outcome=state.outcome.value if state.outcome else None,
        reason=state.reason,
        sent=ledger.attempts,
        answered=ledger.turns,
        probes=state.probes,
        dollars=ledger.dollars,
        probe_dollars=ledger.probe_dollars,
        estimated_dollars=ledger.estimated_dollars,
        started_at=record.started_at,
        ended_at=end,
        duration_seconds=None if duration is None else max(duration, 0.0),
        # Counted as the runner counts it, up to now while a wait goes on.
        waited_seconds=max(round(with_time_waited(record, now=now).waited_seconds), 0)
        if not terminal
        else max(round(record.waited_seconds), 0),
        left=left,
        left_from=left_from,
        plan=record.plan_progress,
        plan_written=record.spec.update_plan,
    )


def _left(record: RunRecord) -> tuple[tuple[str, ...], Literal["plan", "model"] | None]:
    """What is left of `record`, and where that comes from: the plan is the person's
    own list, so its open items come first; the model's remaining work, without one."""
    state = record.state
    if state.outcome is Outcome.DONE:
        return (), None
    if record.plan is not None and record.plan.open_items:
        return tuple(item.text for item in record.plan.open_items), "plan"
    if state.remaining_work:
        return tuple(state.remaining_work), "model"
    return (), None


def apportioned(total: int, parts: Mapping[str, float]) -> dict[str, int]:
    """`parts` (seconds waited on each thing, measured between events) in whole seconds
    that add up to `total` (the record's count): each its share, the seconds the
    rounding leaves given to the largest remainders. A part of nothing is left out."""
    weight = sum(max(seconds, 0.0) for seconds in parts.values())
    if total <= 0 or weight <= 0:
        return {}
    exact = {what: max(seconds, 0.0) * total / weight for what, seconds in parts.items()}
    whole = {what: int(share) for what, share in exact.items()}
    short = total - sum(whole.values())
    for what in sorted(exact, key=lambda key: exact[key] - whole[key], reverse=True)[:short]:
        whole[what] += 1
    return {what: seconds for what, seconds in whole.items() if seconds > 0}


def task_title(record: RunRecord) -> str:
    """What the run is for, in a line: its plan's first heading, else the plan file's
    name, else the prompt's first line."""
    if record.plan is not None:
        for line in record.plan.lines:
            heading = line.strip()
            if heading.startswith("#") and heading.lstrip("#").strip():
                return heading.lstrip("#").strip()[:TITLE_LENGTH]
    if record.spec.plan_path is not None:
        return record.spec.plan_path.name
    return first_line(record.spec.task, longest=TITLE_LENGTH, empty="(no task)")
