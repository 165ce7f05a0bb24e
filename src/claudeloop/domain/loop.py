"""The run-loop state machine: pure decisions from what happened to what to do next.

The runner executes each `Decision` and feeds back what came of it; every rule about
what comes next lives here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import assert_never

from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    WaitableState,
    WindowExhausted,
    describe,
    is_waitable,
)
from claudeloop.domain.completion import Blocked, CompletionVerdict, Continue, Done
from claudeloop.domain.limits import (
    LimitPolicies,
    SwitchProfile,
    Wait,
    WindDown,
    limit_kind,
)
from claudeloop.domain.pause import is_pause
from claudeloop.domain.waiting import WaitPolicyConfig, next_probe_instant, wait_exceeded

# Turns in a row that may end in an error no capacity state explains (a malformed answer,
# a prompt too long for a hosted model) before the run gives up: a retry fixes a blip,
# and a run must not resend into the same error until its budget is gone.
MAX_ERRORED_TURNS = 3
NO_POLICIES = LimitPolicies()


class Phase(enum.Enum):
    PREFLIGHT = "preflight"
    RUNNING = "running"
    WAITING = "waiting"
    PROBING = "probing"
    COMPLETE = "complete"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (Phase.COMPLETE, Phase.FAILED)


class Outcome(enum.Enum):
    """How a run ended, with the exit code the command line documents."""

    DONE = "done"
    BLOCKED = "blocked"
    BUDGET_EXHAUSTED = "budget_exhausted"
    MAX_WAIT_EXCEEDED = "max_wait_exceeded"
    WOUND_DOWN = "wound_down"
    AUTH_FAILED = "auth_failed"
    BACKEND_MISCONFIGURED = "backend_misconfigured"
    STOPPED = "stopped"
    FAILED = "failed"

    @property
    def exit_code(self) -> int:
        return _EXIT_CODES[self]


_EXIT_CODES = {
    Outcome.DONE: 0,
    Outcome.BLOCKED: 1,
    Outcome.FAILED: 1,
    Outcome.BUDGET_EXHAUSTED: 3,
    Outcome.MAX_WAIT_EXCEEDED: 4,
    Outcome.WOUND_DOWN: 75,
    Outcome.AUTH_FAILED: 77,
    Outcome.BACKEND_MISCONFIGURED: 78,
    Outcome.STOPPED: 130,
}


class ControlCommand(enum.Enum):
    """What a person can ask of a live run from outside."""

    STOP = "stop"
    WIND_DOWN = "wind-down"


@dataclass(frozen=True, slots=True)
class Detour:
    """Turns go to another profile while the run's own backend waits out a limit.

    `awaiting` is the limit of the run's own backend; at `check_at` a probe asks it
    whether the limit has lifted (the next check backs off like any wait).
    """

    profile: str
    awaiting: WaitableState
    since: datetime
    check_at: datetime
    checks: int = 0


@dataclass(frozen=True, slots=True)
class RunState:
    """Everything the loop knows between two decisions; persisted for resume."""

    phase: Phase = Phase.PREFLIGHT
    ledger: BudgetLedger = field(default_factory=BudgetLedger)
    capacity: CapacityState = field(default_factory=Available)
    probes: int = 0
    wait_probes: int = 0
    errored_turns: int = 0
    waiting_since: datetime | None = None
    next_probe_at: datetime | None = None
    remaining_work: tuple[str, ...] = ()
    summary: str = ""
    outcome: Outcome | None = None
    reason: str = ""
    # What the model named as the blocker that ended the run (its own words, not the
    # reason's), for the --json result and a resume that asks whether it is gone.
    blocked_on: str | None = None
    detour: Detour | None = None


@dataclass(frozen=True, slots=True)
class SendTurn:
    """Send the next turn on the run's session."""


@dataclass(frozen=True, slots=True)
class RunProbe:
    """Send a throwaway probe to learn whether capacity is back."""


@dataclass(frozen=True, slots=True)
class ScheduleProbe:
    """Wait until `at`, then probe."""

    at: datetime
    awaiting: WaitableState


@dataclass(frozen=True, slots=True)
class Finish:
    outcome: Outcome
    reason: str

    @property
    def exit_code(self) -> int:
        return self.outcome.exit_code


Decision = SendTurn | RunProbe | ScheduleProbe | Finish


@dataclass(frozen=True, slots=True)
class Transition:
    state: RunState
    decision: Decision


def decide_preflight(
    state: RunState,
    capacity: CapacityState,
    *,
    now: datetime,
    config: WaitPolicyConfig,
    policies: LimitPolicies = NO_POLICIES,
) -> Transition:
    """Before the first real turn: what is known of capacity decides whether to send it."""
    if state.ledger.any_exhausted:
        return _finish(state, Outcome.BUDGET_EXHAUSTED, _budget_reason(state.ledger))
    return _by_capacity(state, capacity, now=now, config=config, policies=policies)


def decide_after_turn(
    state: RunState,
    *,
    capacity: CapacityState,
    verdict: CompletionVerdict,
    now: datetime,
    config: WaitPolicyConfig,
    cost_usd: float = 0.0,
    error: str | None = None,
    policies: LimitPolicies = NO_POLICIES,
    sent: bool = True,
) -> Transition:
    """After a turn. Capacity is read before the verdict, always: a Done claimed by a turn
    that hit a limit is discarded, since the limit may have cut the work short.

    `error` is the text of an error the turn ended in; when capacity explains nothing, the
    verdict is not trusted either (an error can quote a marker), and the turn is retried
    until MAX_ERRORED_TURNS in a row have failed. A turn not `sent` (held back because
    another loop found the capacity closed) spends nothing.
    """
    # A pause before the wall comes after a turn that was answered in full.
    answered = isinstance(capacity, Available) or is_pause(capacity)
    spend = state.ledger.spend_turn if answered else state.ledger.spend_attempt
    ledger = spend(cost_usd) if sent else state.ledger
    state = replace(state, ledger=ledger)
    if not answered:
        if ledger.any_exhausted:
            return _finish(
                replace(state, capacity=capacity),
                Outcome.BUDGET_EXHAUSTED,
                _budget_reason(ledger),
            )
        if state.detour is not None and is_waitable(capacity):
            # The other profile met a limit too: wait for the run's own backend.
            awaiting = state.detour.awaiting
            return _wait(replace(state, detour=None), awaiting, now=now, config=config)
        return _by_capacity(state, capacity, now=now, config=config, policies=policies)
    if error is not None:
        state = replace(state, capacity=capacity, errored_turns=state.errored_turns + 1)
        if state.errored_turns >= MAX_ERRORED_TURNS:
            return _finish(
                state,
                Outcome.FAILED,
                f"{state.errored_turns} turns in a row ended in an error: {error}",
            )
        if ledger.any_exhausted:
            return _finish(state, Outcome.BUDGET_EXHAUSTED, _budget_reason(ledger))
        return _send_turn(state)
    state = replace(state, capacity=capacity, summary=verdict_summary(verdict), errored_turns=0)
    match verdict:
        case Done(summary=summary):
            return _finish(
                replace(state, remaining_work=()),
                Outcome.DONE,
                summary or "the task is complete",
                phase=Phase.COMPLETE,
            )
        case Blocked(reason=reason):
            return _finish(
                replace(state, blocked_on=reason), Outcome.BLOCKED, f"blocked on: {reason}"
            )
        case Continue(remaining_work=remaining):
            state = replace(state, remaining_work=remaining)
            if ledger.any_exhausted:
                return _finish(state, Outcome.BUDGET_EXHAUSTED, _budget_reason(ledger))
            if isinstance(capacity, WindowExhausted):  # paused before the wall
                return _wait(state, capacity, now=now, config=config)
            if state.detour is not None and now >= state.detour.check_at:
                # Time to ask the run's own backend whether its limit has lifted.
                return Transition(replace(state, phase=Phase.PROBING), RunProbe())
            return _send_turn(state)
        case _:
            assert_never(verdict)


def begin_probe(state: RunState) -> Transition:
    """The scheduled probe instant has come."""
    return Transition(replace(state, phase=Phase.PROBING), RunProbe())


def decide_after_probe(
    state: RunState,
    capacity: CapacityState,
    *,
    now: datetime,
    config: WaitPolicyConfig,
    cost_usd: float = 0.0,
    policies: LimitPolicies = NO_POLICIES,
) -> Transition:
    """After a probe: resume, keep waiting (backing off), or give up.

    On a detour the probe asked the run's own backend: its limit lifted ends the detour;
    still there, the turns go on on the other profile until the next check.
    """
    state = replace(
        state,
        ledger=state.ledger.spend_probe(cost_usd),
        probes=state.probes + 1,
        wait_probes=state.wait_probes + 1,
    )
    if state.ledger.dollars_exhausted:
        return _finish(
            replace(state, capacity=capacity),
            Outcome.BUDGET_EXHAUSTED,
            _budget_reason(state.ledger),
        )
    detour = state.detour
    if detour is not None and isinstance(capacity, WindowExhausted | CreditsExhausted):
        action = policies.action_for(capacity)
        if isinstance(action, SwitchProfile):
            checks = detour.checks + 1
            check_at = next_probe_instant(
                capacity, now=now, started_waiting_at=detour.since, probe_count=checks,
                config=config,
            )  # fmt: skip
            later = replace(
                detour, profile=action.profile, awaiting=capacity, checks=checks,
                check_at=check_at,
            )  # fmt: skip
            return _send_turn(replace(state, detour=later))
        # The run's own backend meets a limit whose policy is not a switch: that policy
        # decides (wait for it, or wind down), the detour ends.
        state = replace(state, detour=None)
    return _by_capacity(state, capacity, now=now, config=config, policies=policies)


def decide_on_control(state: RunState, command: ControlCommand) -> Transition:
    """A person asked the run to stop or wind down; the runner calls this at a safe point."""
    match command:
        case ControlCommand.STOP:
            return _finish(state, Outcome.STOPPED, "stopped by the user")
        case ControlCommand.WIND_DOWN:
            return _finish(state, Outcome.WOUND_DOWN, "wound down by the user; handoff written")
        case _:
            assert_never(command)


def decide_on_failure(state: RunState, reason: str) -> Transition:
    """Something outside the rules broke (the CLI crashed, a disk filled)."""
    return _finish(state, Outcome.FAILED, reason)


def decide_on_second_interrupt(state: RunState) -> Transition:
    """A second Ctrl-C (or SIGTERM) ends the run at once, wherever it was: a turn is cut
    off, a wait left. The state saved before it stays the truth a resume continues from;
    this is what the run tells of its end (the summary, the exit code)."""
    return _finish(state, Outcome.STOPPED, "stopped at once by a second interrupt")


def resume_decision(state: RunState) -> Decision:
    """What a resumed run does first, from its persisted state alone.

    A run killed while waiting keeps its probe instant: no burst of probes on restart, and
    no fresh full wait either.
    """
    match state.phase:
        case Phase.PREFLIGHT | Phase.RUNNING:
            return SendTurn()
        case Phase.WAITING:
            if state.next_probe_at is not None and isinstance(
                state.capacity, WindowExhausted | CreditsExhausted
            ):
                return ScheduleProbe(at=state.next_probe_at, awaiting=state.capacity)
            return RunProbe()
        case Phase.PROBING:
            return RunProbe()
        case Phase.COMPLETE | Phase.FAILED:
            outcome = state.outcome or Outcome.FAILED
            return Finish(outcome=outcome, reason=state.reason or "the run had already ended")
        case _:
            assert_never(state.phase)


def verdict_summary(verdict: CompletionVerdict) -> str:
    return verdict.summary


def _by_capacity(
    state: RunState,
    capacity: CapacityState,
    *,
    now: datetime,
    config: WaitPolicyConfig,
    policies: LimitPolicies = NO_POLICIES,
) -> Transition:
    match capacity:
        case Available():
            return _send_turn(replace(state, capacity=capacity, detour=None))
        case WindowExhausted() | CreditsExhausted():
            return _on_limit(state, capacity, now=now, config=config, policies=policies)
        case AuthenticationFailed():
            return _finish(
                replace(state, capacity=capacity),
                Outcome.AUTH_FAILED,
                "authentication failed: the credentials were refused",
            )
        case BackendMisconfigured(reason=reason):
            return _finish(replace(state, capacity=capacity), Outcome.BACKEND_MISCONFIGURED, reason)
        case _:
            assert_never(capacity)


def _on_limit(
    state: RunState,
    capacity: WaitableState,
    *,
    now: datetime,
    config: WaitPolicyConfig,
    policies: LimitPolicies,
) -> Transition:
    """A limit met: the user's policy for it says wait, wind down or switch profile."""
    action = policies.action_for(capacity)
    match action:
        case Wait():
            return _wait(state, capacity, now=now, config=config)
        case WindDown():
            return _finish(
                replace(state, capacity=capacity),
                Outcome.WOUND_DOWN,
                f"{limit_kind(capacity)} limit met ({describe(capacity)}); wound down by policy",
            )
        case SwitchProfile(profile=profile):
            check_at = next_probe_instant(
                capacity, now=now, started_waiting_at=now, probe_count=0, config=config
            )
            detour = Detour(profile=profile, awaiting=capacity, since=now, check_at=check_at)
            # Turns now go to the other profile, whose capacity is not known to be out.
            return _send_turn(replace(state, capacity=Available(), detour=detour))
        case _:
            assert_never(action)


def _wait(
    state: RunState, capacity: WaitableState, *, now: datetime, config: WaitPolicyConfig
) -> Transition:
    fresh = state.phase not in (Phase.WAITING, Phase.PROBING) or state.waiting_since is None
    since = now if fresh else state.waiting_since
    assert since is not None
    # A different limit is a different wait: its backoff starts over.
    same_limit = not fresh and type(capacity) is type(state.capacity)
    wait_probes = state.wait_probes if same_limit else 0
    if not fresh and wait_exceeded(started_waiting_at=since, now=now, config=config):
        return _finish(
            replace(state, capacity=capacity),
            Outcome.MAX_WAIT_EXCEEDED,
            f"waited longer than max-wait for capacity ({describe(capacity)})",
        )
    at = next_probe_instant(
        capacity, now=now, started_waiting_at=since, probe_count=wait_probes, config=config
    )
    waiting = replace(
        state,
        phase=Phase.WAITING,
        capacity=capacity,
        waiting_since=since,
        wait_probes=wait_probes,
        next_probe_at=at,
    )
    return Transition(waiting, ScheduleProbe(at=at, awaiting=capacity))


def _send_turn(state: RunState) -> Transition:
    running = replace(
        state, phase=Phase.RUNNING, waiting_since=None, next_probe_at=None, wait_probes=0
    )
    return Transition(running, SendTurn())


def _finish(
    state: RunState, outcome: Outcome, reason: str, *, phase: Phase = Phase.FAILED
) -> Transition:
    ended = replace(state, phase=phase, outcome=outcome, reason=reason, next_probe_at=None)
    return Transition(ended, Finish(outcome=outcome, reason=reason))


def _budget_reason(ledger: BudgetLedger) -> str:
    caps = ", ".join(ledger.exhausted_caps())
    return f"budget cap reached ({caps})"


def reopen(state: RunState) -> RunState:
    """A run that ended short of done, made ready to go on (after a person fixed the cause:
    raised a cap, renewed credentials). Its ledger is kept: no budget reset."""
    if state.outcome is Outcome.DONE:
        raise ValueError("a run that is done cannot be reopened")
    return replace(
        state, phase=Phase.PREFLIGHT, outcome=None, reason="", blocked_on=None, next_probe_at=None
    )
