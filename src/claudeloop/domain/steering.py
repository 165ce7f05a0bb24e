"""Steering a live run: what a person asks of it beyond stop and wind-down, and what
each request does to the run at the next safe point.

Three requests: end a wait early and probe now (`ProbeNow`), change a cap without a
restart (`RaiseCap`), and a note for the next turn (`AddNote`). Each is decided here,
purely: the runner applies the outcome and says it as an event.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import assert_never

from claudeloop.domain.budget import BudgetLedger, money
from claudeloop.domain.loop import Phase, RunState
from claudeloop.domain.waiting import WaitPolicyConfig

# At most this many notes wait for the next turn; an older one gives way to a newer.
MAX_NOTES = 10
# A note longer than this is cut: the prompt is the model's, not a letter box.
MAX_NOTE_CHARS = 2000


class Cap(enum.Enum):
    """A cap a live run's budget can be changed on, in the words of its flag."""

    TURNS = "max-turns"
    DOLLARS = "max-dollars"
    WAIT = "max-wait"


@dataclass(frozen=True, slots=True)
class ProbeNow:
    """End the wait going on and probe at once (capacity is known to be back)."""


@dataclass(frozen=True, slots=True)
class RaiseCap:
    """Set `cap` to `to` (turns, dollars, or seconds of one wait)."""

    cap: Cap
    to: float


@dataclass(frozen=True, slots=True)
class AddNote:
    """Text said to the model with the next turn's prompt."""

    text: str


Steer = ProbeNow | RaiseCap | AddNote


@dataclass(frozen=True, slots=True)
class Steered:
    """What a request did: the run's state and wait policy after it, whether it took
    effect and why, in words; `probe`: it ended the wait, the run probes now (its state
    is PROBING); `before`: a cap's value before the request (None: no cap)."""

    state: RunState
    wait_policy: WaitPolicyConfig
    applied: bool
    reason: str
    probe: bool = False
    before: float | None = None


def spent_on(cap: Cap, ledger: BudgetLedger, *, waited_seconds: float) -> float:
    """What the run has spent against `cap`: turns answered, dollars, or the seconds of
    the wait going on (max-wait bounds one wait)."""
    match cap:
        case Cap.TURNS:
            return float(ledger.turns)
        case Cap.DOLLARS:
            return ledger.dollars
        case Cap.WAIT:
            return waited_seconds
        case _:
            assert_never(cap)


def current_cap(cap: Cap, ledger: BudgetLedger, policy: WaitPolicyConfig) -> float | None:
    """The cap as it is (None: no cap)."""
    match cap:
        case Cap.TURNS:
            turns = ledger.budget.max_turns
            return float(turns) if turns is not None else None
        case Cap.DOLLARS:
            return ledger.budget.max_dollars
        case Cap.WAIT:
            wait = policy.max_wait
            return wait.total_seconds() if wait is not None else None
        case _:
            assert_never(cap)


def describe_cap(cap: Cap, value: float | None) -> str:
    """A cap's value as a person reads it."""
    if value is None:
        return "none"
    match cap:
        case Cap.TURNS:
            return f"{int(value)} turns"
        case Cap.DOLLARS:
            return money(value)
        case Cap.WAIT:
            return f"{int(value)} s"
        case _:
            assert_never(cap)


def malformed(cap: Cap, to: float) -> str | None:
    """Why `to` is no value of `cap` at all (None: it is one): not a positive number, or
    a turn count that is not whole."""
    if not math.isfinite(to) or to <= 0:
        return f"--{cap.value} must be a positive number, not {to:g}"
    if cap is Cap.TURNS and to != int(to):
        return f"--{cap.value} must be a whole number of turns, not {to:g}"
    return None


def refusal(cap: Cap, to: float, ledger: BudgetLedger, *, waited_seconds: float) -> str | None:
    """Why a person may not ask for `to` as `cap` now (None: they may): a malformed
    value, or one lower than what was spent (likely a slip: to end the run, give what
    was spent, or stop it). The run itself takes any well-formed value (`steer`): one
    that spending passed since it was asked for is reached, and ends the run."""
    wrong = malformed(cap, to)
    if wrong is not None:
        return wrong
    spent = spent_on(cap, ledger, waited_seconds=waited_seconds)
    if to < spent:
        return (
            f"--{cap.value} {describe_cap(cap, to)} is lower than what the run has spent "
            f"({describe_cap(cap, spent)}); give at least that"
        )
    return None


def waited_now(state: RunState, now: datetime) -> float:
    """Seconds of the wait going on (0 when the run is not waiting)."""
    if state.phase not in (Phase.WAITING, Phase.PROBING) or state.waiting_since is None:
        return 0.0
    return max((now - state.waiting_since).total_seconds(), 0.0)


def steer(state: RunState, policy: WaitPolicyConfig, asked: Steer, *, now: datetime) -> Steered:
    """What `asked` does to a run in `state` (under `policy`) at a safe point."""
    match asked:
        case ProbeNow():
            if state.phase is Phase.WAITING:
                return Steered(
                    replace(state, phase=Phase.PROBING),
                    policy,
                    applied=True,
                    reason="the wait ends early; probing now",
                    probe=True,
                )
            return Steered(
                state,
                policy,
                applied=False,
                reason=f"the run was {state.phase.value}, not waiting; nothing to end",
            )
        case RaiseCap(cap=cap, to=to):
            return _raised(state, policy, cap, to, now=now)
        case AddNote(text=text):
            note = text.strip()[:MAX_NOTE_CHARS]
            if not note:
                return Steered(state, policy, applied=False, reason="an empty note says nothing")
            notes = (*state.notes, note)[-MAX_NOTES:]
            return Steered(
                replace(state, notes=notes),
                policy,
                applied=True,
                reason="said with the next turn's prompt",
            )
        case _:
            assert_never(asked)


def _raised(
    state: RunState, policy: WaitPolicyConfig, cap: Cap, to: float, *, now: datetime
) -> Steered:
    ledger = state.ledger
    refused = malformed(cap, to)
    was = current_cap(cap, ledger, policy)
    if refused is not None:
        return Steered(state, policy, applied=False, reason=refused, before=was)
    changed = f"{cap.value} {describe_cap(cap, was)} -> {describe_cap(cap, to)}"
    spent = spent_on(cap, ledger, waited_seconds=waited_now(state, now))
    if to <= spent:  # spending reaches a cap at it (BudgetLedger, wait_exceeded)
        changed += f"; reached: the run has spent {describe_cap(cap, spent)}"
    match cap:
        case Cap.TURNS:
            budget = replace(ledger.budget, max_turns=int(to))
            state = replace(state, ledger=replace(ledger, budget=budget))
        case Cap.DOLLARS:
            budget = replace(ledger.budget, max_dollars=to)
            state = replace(state, ledger=replace(ledger, budget=budget))
        case Cap.WAIT:
            # Up to the microsecond a timedelta holds: never below what was asked for.
            policy = replace(policy, max_wait=timedelta(microseconds=math.ceil(to * 1e6)))
        case _:
            assert_never(cap)
    return Steered(state, policy, applied=True, reason=changed, before=was)
