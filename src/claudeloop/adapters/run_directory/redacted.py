"""A run record and its events as they may leave the process: the words of the model and
of the service with every secret masked, the rest (ids, times, counts, the user's own
spec) untouched so that a resumed run goes on exactly where it was."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, assert_never

from claudeloop.adapters.redaction import Redactor
from claudeloop.application.events import Event
from claudeloop.application.ports import EventSink
from claudeloop.application.records import RunRecord
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    WindowExhausted,
)
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.verification import Rejected, ReviewDisagreed


def redacted_record(record: RunRecord, redactor: Redactor) -> RunRecord:
    """`record` with its summary, remaining work, reason, blocker, notes, plan text and
    the service's details masked: the text a model may have copied a credential into."""
    state = record.state
    detour = state.detour
    if detour is not None:
        awaiting = detour.awaiting
        if isinstance(awaiting, CreditsExhausted):
            credits = replace(awaiting, detail=redactor.text(awaiting.detail))
            detour = replace(detour, awaiting=credits)
    state = replace(
        state,
        summary=redactor.text(state.summary),
        remaining_work=tuple(redactor.text(entry) for entry in state.remaining_work),
        reason=redactor.text(state.reason),
        blocked_on=redactor.text(state.blocked_on) if state.blocked_on is not None else None,
        capacity=_capacity(state.capacity, redactor),
        detour=detour,
        verifying=replace(state.verifying, summary=redactor.text(state.verifying.summary))
        if state.verifying is not None
        else None,
        rejection=_rejection(state.rejection, redactor),
        notes=tuple(redactor.text(note) for note in state.notes),
    )
    plan = record.plan
    if plan is not None:
        text = plan.render()
        masked = redactor.text(text)
        if masked != text:
            # Parsing what rendering gave back keeps every line, mark and line number.
            plan = WorkPlan.parse(masked)
    return replace(record, state=state, plan=plan)


def _rejection(rejection: Rejected | None, redactor: Redactor) -> Rejected | None:
    """A reviewer's words are the model's; a check's tail was masked as it was read."""
    if not isinstance(rejection, ReviewDisagreed):
        return rejection
    return ReviewDisagreed(
        remaining_work=tuple(redactor.text(entry) for entry in rejection.remaining_work),
        blocked_on=redactor.text(rejection.blocked_on) if rejection.blocked_on else None,
        summary=redactor.text(rejection.summary),
    )


def _capacity(capacity: CapacityState, redactor: Redactor) -> CapacityState:
    match capacity:
        case Available() | WindowExhausted():
            return capacity
        case CreditsExhausted(detail=detail):
            return replace(capacity, detail=redactor.text(detail))
        case AuthenticationFailed(detail=detail):
            return replace(capacity, detail=redactor.text(detail))
        case BackendMisconfigured(reason=reason):
            return replace(capacity, reason=redactor.text(reason))
        case _:
            assert_never(capacity)


class RedactedEvents:
    """Passes events on with every secret masked: the screen and the notifications get
    no more of the model's words than events.jsonl does."""

    def __init__(self, sink: EventSink, redactor: Redactor) -> None:
        self._sink = sink
        self._redactor = redactor

    def emit(self, event: Event) -> None:
        self._sink.emit(redacted_event(event, self._redactor))


def redacted_event(event: Event, redactor: Redactor) -> Event:
    """The event with every text in it masked (a summary, a reason, a tool's name)."""
    masked: dict[str, Any] = {}
    for item in fields(event):
        value = getattr(event, item.name)
        if isinstance(value, str):
            masked[item.name] = redactor.text(value)
        elif isinstance(value, tuple):
            masked[item.name] = tuple(redactor.data(list(value)))
    return replace(event, **masked)
