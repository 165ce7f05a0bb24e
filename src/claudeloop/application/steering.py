"""What `probe-now`, `raise` and `note` do between parsing and rendering, on the
`ProjectRuns` port; how the run applies the requests at a safe point, and the event each
is said as once it is applied.

Each use case is shaped like `inspection.control` (the runs, the run id, what is asked)
so the dashboard calls the same functions: the request goes into the run's control
file, and its driver applies it at the next safe point (domain.steering).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import assert_never

from claudeloop.application.errors import UsageError
from claudeloop.application.events import CapRaised, Event, NoteAdded, ProbeAsked
from claudeloop.application.ports import Clock, ControlInbox, EventSink, ProjectRuns, RunStore
from claudeloop.application.records import RunRecord
from claudeloop.domain.capacity import describe
from claudeloop.domain.loop import Outcome, Phase, RunState
from claudeloop.domain.steering import (
    AddNote,
    Cap,
    ProbeNow,
    RaiseCap,
    Steer,
    Steered,
    current_cap,
    describe_cap,
    refusal,
    spent_on,
    steer,
    waited_now,
)


@dataclass(frozen=True, slots=True)
class Sent:
    """A request handed to a live run's driver, and what it will do, in words."""

    run_id: str
    # None: no live driver, and nothing was sent (a probe now of a run that has ended).
    pid: int | None
    asked: Steer
    will: str
    # False: the run is in no state for it to do anything (a probe now outside a wait);
    # it is sent all the same, and said as an event, when a driver is live.
    effective: bool = True


def probe_now(runs: ProjectRuns, run_id: str | None) -> Sent:
    """`probe-now`: end the wait going on and probe at once; outside a wait it does
    nothing (a live run says so in its events). A run no driver drives waits for
    nothing: nothing is sent, and the answer says what goes on with it."""
    chosen = runs.watched(run_id)
    pid = runs.driver(chosen)
    if pid is None:
        record = runs.record(chosen)
        will = f"{_undriven(record)}: a probe now does nothing{_goes_on(record)}"
        return Sent(chosen, None, ProbeNow(), will, effective=False)
    phase = runs.record(chosen).state.phase
    waiting = phase is Phase.WAITING
    _send(runs, chosen, pid, ProbeNow())
    if waiting:
        return Sent(chosen, pid, ProbeNow(), "the wait ends and the run probes within a second")
    return Sent(
        chosen,
        pid,
        ProbeNow(),
        f"the run is {phase.value}, not waiting: a probe now does nothing",
        effective=False,
    )


def raise_caps(
    runs: ProjectRuns, run_id: str | None, caps: Mapping[Cap, float], *, now: datetime
) -> list[Sent]:
    """`raise`: set caps of the live run; UsageError when one is lower than what it
    spent, and then none is sent (the run takes each as it applies it: one that its
    spending passed meanwhile is reached, and ends it)."""
    if not caps:
        raise UsageError("give at least one of --max-turns, --max-dollars, --max-wait")
    chosen = runs.watched(run_id)
    pid = runs.driver(chosen)
    record = runs.record(chosen)
    if pid is None:
        raise UsageError(_cannot_raise(record, caps))
    state = record.state
    for cap, to in caps.items():
        refused = refusal(cap, to, state.ledger, waited_seconds=waited_now(state, now))
        if refused is not None:
            raise UsageError(f"run {chosen}: {refused}")
    sent: list[Sent] = []
    for cap, to in caps.items():
        before = current_cap(cap, state.ledger, record.spec.wait_policy)
        asked = RaiseCap(cap, to)
        _send(runs, chosen, pid, asked)
        will = (
            f"{cap.value} {describe_cap(cap, before)} -> {describe_cap(cap, to)} at the "
            "next safe point (kept by a resume)"
        )
        if to <= spent_on(cap, state.ledger, waited_seconds=waited_now(state, now)):
            will += f"; reached: {_ended_by(cap)}"
        sent.append(Sent(chosen, pid, asked, will))
    return sent


def _ended_by(cap: Cap) -> str:
    """What a cap set to what was spent ends, in words."""
    match cap:
        case Cap.TURNS | Cap.DOLLARS:
            return "the run ends there, budget_exhausted (at once if it is waiting)"
        case Cap.WAIT:
            return "the wait ends there, max_wait_exceeded"
        case _:
            assert_never(cap)


def add_note(runs: ProjectRuns, run_id: str | None, text: str) -> Sent:
    """`note`: text said to the model with the next turn's prompt; it waits for that
    turn, after the wait for capacity when the run is waiting (and `status` shows it)."""
    if not text.strip():
        raise UsageError("the note is empty; give the text to say to the next turn")
    chosen = runs.watched(run_id)
    pid = runs.driver(chosen)
    if pid is None:
        record = runs.record(chosen)
        raise UsageError(f"{_undriven(record)}: no turn will read a note{_goes_on(record)}")
    state = runs.record(chosen).state
    asked = AddNote(text)
    _send(runs, chosen, pid, asked)
    return Sent(chosen, pid, asked, _note_waits(state))


def _note_waits(state: RunState) -> str:
    """What becomes of a note sent to a run in `state`, in words."""
    if state.phase in (Phase.WAITING, Phase.PROBING):
        return (
            "the note waits for the next turn, once the run has capacity again "
            f"({describe(state.capacity)}); `claudeloop status` shows it till then"
        )
    return "the note waits for the next turn, said with its prompt"


def steering_event(asked: Steer, steered: Steered) -> Event:
    """The event a request applied at a safe point is said as."""
    match asked:
        case ProbeNow():
            return ProbeAsked(applied=steered.applied, reason=steered.reason)
        case RaiseCap(cap=cap, to=to):
            return CapRaised(
                cap=cap.value,
                before=steered.before,
                after=to,
                applied=steered.applied,
                reason=steered.reason,
            )
        case AddNote(text=text):
            return NoteAdded(text=text.strip(), applied=steered.applied)
        case _:
            assert_never(asked)


def apply_requests(
    record: RunRecord,
    control: ControlInbox,
    *,
    clock: Clock,
    store: RunStore,
    events: EventSink,
) -> tuple[RunRecord, bool]:
    """The requests of the control file this run has not applied yet, applied in the
    order sent (domain.steering), saved, then said; and whether one of them ended the
    wait going on (probe now). A request applied before a crash is not applied again:
    the record keeps the number of the last one (`steered`)."""
    requests = control.requests()
    fresh = [request for request in requests if request.seq > record.steered]
    if not fresh:
        if requests:  # applied and saved before, not let go of yet
            control.consumed(record.steered)
        return record, False
    state, policy = record.state, record.spec.wait_policy
    said: list[Event] = []
    probe_now = False
    for request in fresh:
        steered = steer(state, policy, request.asked, now=clock.now())
        state, policy = steered.state, steered.wait_policy
        probe_now = probe_now or steered.probe
        said.append(steering_event(request.asked, steered))
    spec = replace(record.spec, budget=state.ledger.budget, wait_policy=policy)
    record = replace(record, spec=spec, state=state, steered=fresh[-1].seq)
    store.save(record)
    control.consumed(record.steered)
    for event in said:
        events.emit(event)
    return record, probe_now


def _undriven(record: RunRecord) -> str:
    """A run no live driver drives, in words: done, ended short of done, or cut off."""
    state = record.state
    if state.outcome is Outcome.DONE:
        return f"run {record.run_id} is done"
    if state.outcome is not None:
        return f"run {record.run_id} has ended ({state.outcome.value}) and nothing drives it"
    return f"run {record.run_id} has no live driver (cut off before it ended)"


def _goes_on(record: RunRecord, flags: str = "") -> str:
    """What the person can do instead, after a semicolon: resume a run that can go on
    (with `flags`), start a new one after a run done."""
    if record.state.outcome is Outcome.DONE:
        return "; more work is a new run (`claudeloop run`)"
    return f"; `claudeloop resume {record.run_id}{flags}` goes on"


def _cannot_raise(record: RunRecord, caps: Mapping[Cap, float]) -> str:
    """Why caps are not raised on a run no driver drives, and what does it instead."""
    if record.state.outcome is Outcome.DONE:
        return f"{_undriven(record)}: it sends no more turns, so no cap is left to raise" + (
            _goes_on(record)
        )
    flags = "".join(f" --{cap.value} {_as_flag(cap, to)}" for cap, to in caps.items())
    return f"{_undriven(record)}: its caps change as it resumes" + _goes_on(record, flags)


def _as_flag(cap: Cap, to: float) -> str:
    """A cap as its flag of `resume` takes it."""
    match cap:
        case Cap.TURNS:
            return str(int(to))
        case Cap.DOLLARS:
            return f"{to:g}"
        case Cap.WAIT:
            return f"{int(to)}s"
        case _:
            assert_never(cap)


def _send(runs: ProjectRuns, run_id: str, pid: int, asked: Steer) -> None:
    try:
        runs.send(run_id, asked)
    except OSError as error:
        raise UsageError(
            f"{runs.control_file(run_id)}: cannot be written ({error.strerror}); "
            f"the run (pid {pid}) cannot be asked"
        ) from None


__all__ = ["Cap", "Sent", "add_note", "probe_now", "raise_caps", "steering_event"]
