"""What is worth telling a person, decided from the run's events alone.

Pure: `notification_for` reads one event and what the run has shown so far, and says
what to send (or nothing) and what the run has shown now. A person hears when a run
ends (done, blocked, or any other way), when it starts waiting for a window, and when
credits run out. A wait is told once: the probes that find the window still closed, or
the credits still empty, each start a new wait that says nothing new.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal, assert_never

from claudeloop.application import events
from claudeloop.application.durations import instant_said
from claudeloop.application.events import Event
from claudeloop.application.settings import NOTIFY_KINDS, NotifyKind
from claudeloop.domain.budget import money
from claudeloop.domain.capacity import CREDIT_KINDS, CapacityKind
from claudeloop.domain.loop import Outcome

# Apprise's notify types, which services render as an icon or a colour.
Level = Literal["info", "success", "warning", "failure"]


@dataclass(frozen=True, slots=True)
class Notification:
    kind: NotifyKind
    title: str
    body: str
    level: Level


@dataclass(frozen=True, slots=True)
class RunSoFar:
    """What the run's events have shown: enough to say where a run stands."""

    run_id: str
    cwd: str
    dollars: float = 0.0
    # (items done, items in all) of the plan file, when the run has one.
    plan: tuple[int, int] | None = None
    # The wait a person has been told of, as its kind and, but for credits, its words (a
    # window's words change when its reset moved); None while turns are being sent.
    wait_notified: tuple[CapacityKind | None, str] | None = None

    @property
    def progress(self) -> str:
        spent = money(self.dollars)
        if self.plan is None or self.plan[1] == 0:
            return spent
        return f"{self.plan[0]}/{self.plan[1]} plan items, {spent}"


def notification_for(
    event: Event,
    run: RunSoFar,
    *,
    on: Collection[str] = NOTIFY_KINDS,
) -> tuple[Notification | None, RunSoFar]:
    """The notification an event calls for (None: nothing to tell, or a kind not in
    `on`), and the run as it stands after the event."""
    notification: Notification | None = None
    match event:
        case events.TurnFinished(cost_usd=cost) | events.ProbeFinished(cost_usd=cost):
            run = replace(run, dollars=run.dollars + cost)
        case events.PlanUpdated(done=done, total=total):
            run = replace(run, plan=(done, total))
        case events.TurnStarted():
            run = replace(run, wait_notified=None)
        case events.WaitStarted(capacity=capacity, probe_at=probe_at, capacity_kind=kind):
            # A line of before carries no kind: whatever its words, it is told as a wait.
            capacity = capacity or "capacity"
            # Credits are told once however their words change between probes.
            awaited = (kind, "" if kind in CREDIT_KINDS else capacity)
            if awaited != run.wait_notified:
                notification = _wait(capacity, kind, probe_at, run)
            run = replace(run, wait_notified=awaited)
        case events.OverageStarted():
            notification = _overage(event, run)
        case events.RunFinished():
            notification = _finished(event, run)
            run = replace(run, wait_notified=None)
        case (
            events.RunStarted()
            | events.RunResumed()
            | events.TurnRetrying()
            | events.TurnFailed()
            | events.TurnInterrupted()
            | events.TurnSilent()
            | events.SessionWritesLost()
            | events.SessionReplaced()
            | events.ToolsDenied()
            | events.SandboxSet()
            | events.SandboxBlocked()
            | events.CostGuessed()
            | events.PauseIgnored()
            | events.ProfileSwitched()
            | events.ProfileRestored()
            | events.ModelSwitched()
            | events.ModelRestored()
            | events.VerifyStarted()
            | events.VerifyFinished()
            | events.ReviewStarted()
            | events.ReviewFinished()
            | events.NoProgress()
            | events.TurnCommitted()
            | events.CommitRefused()
            | events.BranchRewound()
            | events.NotifyFailed()
            # A person's own request: they know they asked.
            | events.ProbeAsked()
            | events.CapRaised()
            | events.NoteAdded()
        ):
            pass  # nothing a person needs to hear of
        case _:
            assert_never(event)
    if notification is not None and notification.kind not in on:
        notification = None
    return notification, run


def _overage(event: events.OverageStarted, run: RunSoFar) -> Notification:
    reset = f" The window resets at {_instant(event.resets_at)}." if event.resets_at else ""
    doing = {
        "wait": "claudeloop sends no more turns until the window resets",
        "wind-down": "claudeloop winds the run down with a handoff",
        "go-on": "claudeloop goes on, spending extra usage, as its policy says",
    }.get(event.action, f"claudeloop does what its policy says: {event.action}")
    return Notification(
        kind="overage",
        title=f"claudeloop: run {run.run_id} — paid overage in use",
        body=(
            f"Turn {event.turn} was answered on paid overage: extra usage billed to the "
            f"account.{reset} {doing} (--on-limit overage_in_use=ACTION).\n"
            f"So far: {run.progress}. Project: {run.cwd}"
        ),
        level="warning",
    )


def _wait(
    capacity: str, kind: CapacityKind | None, probe_at: datetime, run: RunSoFar
) -> Notification:
    probe = _instant(probe_at)
    where = f"So far: {run.progress}. Project: {run.cwd}"
    backoff = f"claudeloop probes with backoff (next probe at {probe}) and goes on within"
    if kind == "credits":
        return Notification(
            kind="credits",
            title=f"claudeloop: run {run.run_id} — credits exhausted",
            body=(
                f"The credit balance is empty and no clock refills it. {backoff} minutes "
                f"of a top-up.\n{where}"
            ),
            level="warning",
        )
    if kind == "proxy_budget":
        return Notification(
            kind="credits",
            title=f"claudeloop: run {run.run_id} — the proxy's budget is spent",
            body=(
                "The proxy in front of the service refuses more spend (its key, team or "
                f"deployment budget) and announces no reset. {backoff} minutes of its "
                f"admin raising or resetting it.\n{where}"
            ),
            level="warning",
        )
    return Notification(
        kind="wait",
        title=f"claudeloop: run {run.run_id} waiting — {capacity}",
        body=(
            f"Waiting: {capacity}. Next probe at {probe}; the run goes on by itself "
            f"when capacity returns.\n{where}"
        ),
        level="info",
    )


def _finished(event: events.RunFinished, run: RunSoFar) -> Notification:
    outcome = event.outcome
    reason = event.reason.strip() or "no reason given"
    resume = f"claudeloop resume {run.run_id} --cwd {shlex.quote(run.cwd)}"
    if outcome is Outcome.DONE:
        return Notification(
            kind="done",
            title=f"claudeloop: run {run.run_id} done — {run.progress}",
            body=f"{reason}\nProject: {run.cwd}",
            level="success",
        )
    if outcome is Outcome.BLOCKED:
        return Notification(
            kind="blocked",
            title=f"claudeloop: run {run.run_id} blocked — {run.progress}",
            body=f"{reason}\nOnce that is settled: {resume}",
            level="warning",
        )
    return Notification(
        kind="failed",
        title=(
            f"claudeloop: run {run.run_id} ended: {outcome.value} "
            f"(exit {event.exit_code}) — {run.progress}"
        ),
        body=f"{reason}\nTo go on: {resume}",
        level="failure",
    )


def _instant(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return instant_said(moment)
