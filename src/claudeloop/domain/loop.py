"""The run-loop state machine: pure decisions from what happened to what to do next.

The runner executes each `Decision` and feeds back what came of it; every rule about
what comes next lives here.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
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
    auth_failure_reason,
    describe,
    is_waitable,
)
from claudeloop.domain.completion import Blocked, CompletionVerdict, Continue, Done
from claudeloop.domain.limits import (
    GoOn,
    LimitPolicies,
    SwitchModel,
    SwitchProfile,
    Wait,
    WindDown,
    limit_kind,
)
from claudeloop.domain.overage import is_paid_overage
from claudeloop.domain.pause import was_answered
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.stagnation import (
    Answered,
    NoBrake,
    SameFailure,
    Stagnation,
    StagnationSettings,
    Stalled,
)
from claudeloop.domain.text import count
from claudeloop.domain.verification import (
    Accepted,
    AskReview,
    CheckCommand,
    CheckFailed,
    CheckResult,
    DoneJudgement,
    FailureSignature,
    Rejected,
    ReviewDisagreed,
    RunCheck,
    judge_done,
    verification_of,
)
from claudeloop.domain.waiting import (
    AnnouncedReset,
    WaitPolicyConfig,
    announced_in,
    next_probe_instant,
    probe_within_max_wait,
    remember_resets,
    wait_exceeded,
)

# Turns in a row that may end in an error no capacity state explains (a malformed answer,
# a stream cut off) before the run gives up: a retry fixes a blip,
# and a run must not resend into the same error until its budget is gone.
MAX_ERRORED_TURNS = 3
# Turns in a row the watchdog ended (domain.watchdog) that are sent again at once: a
# stalled connection or a hung process is a blip. The next is taken for an outage.
SILENT_TURNS_SENT_AGAIN = 2
# What a stream that keeps going silent is waited out as: the service failing.
SILENT_SERVICE = WindowExhausted(rate_limit_type="overloaded")
NO_POLICIES = LimitPolicies()


class Phase(enum.Enum):
    PREFLIGHT = "preflight"
    RUNNING = "running"
    VERIFYING = "verifying"  # a Done is being checked, or reviewed
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


class Interrupt(enum.Enum):
    """A signal the driver received: a person's Ctrl-C, a terminal closed, a kill
    (SIGTERM, a supervisor's or a fleet worker's). Each stops the run, a turn in flight
    cut off at once (sent again by a resume); SIGTERM's exit code is 143, 128 + 15, as a
    shell reports a program SIGTERM ended, so a supervisor tells it from a Ctrl-C."""

    CTRL_C = "SIGINT"
    HANGUP = "SIGHUP"
    TERMINATE = "SIGTERM"

    @property
    def exit_code(self) -> int:
        return 143 if self is Interrupt.TERMINATE else Outcome.STOPPED.exit_code

    @property
    def words(self) -> str:
        match self:
            case Interrupt.CTRL_C:
                return "Ctrl-C (SIGINT)"
            case Interrupt.HANGUP:
                return "the terminal closing (SIGHUP)"
            case Interrupt.TERMINATE:
                return "SIGTERM"
            case _:
                assert_never(self)


@dataclass(frozen=True, slots=True)
class Detour:
    """Turns go to another profile, or to another model of the run's own, while the
    run's own backend waits out a limit.

    `profile` is the other profile, None for the run's own; `model` is the model the
    turns go to on the run's own profile (a switch-model policy), else None.
    `awaiting` is the limit of the run's own backend; at `check_at` a probe asks it
    whether the limit has lifted (the next check backs off like any wait).
    """

    profile: str | None
    awaiting: WaitableState
    since: datetime
    check_at: datetime
    checks: int = 0
    model: str | None = None

    @property
    def to(self) -> str:
        """Where the turns go, in a person's words."""
        return f"model {self.model}" if self.model is not None else f"profile {self.profile}"


@dataclass(frozen=True, slots=True)
class VerifyRules:
    """What a Done must pass (the checks, in order, then the review when asked for) and
    when a run that shows no progress stops."""

    checks: tuple[CheckCommand, ...] = ()
    review: bool = False
    stagnation: StagnationSettings = field(default_factory=StagnationSettings)

    @property
    def verifies(self) -> bool:
        return bool(self.checks) or self.review


# The domain's own default: no checks, no review, no brake (the run's spec sets its own).
NO_RULES = VerifyRules(stagnation=StagnationSettings(stall_turns=0, same_failure=0))


@dataclass(frozen=True, slots=True)
class Verifying:
    """A Done being verified: what the turn claimed and left behind, the rules it is held
    to (kept with it, so a resumed run judges it the same), and the results so far."""

    summary: str
    seen: Answered
    rules: VerifyRules
    results: tuple[CheckResult, ...] = ()


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
    # The Done in verification, if one is (saved, so a crash mid-round runs it again).
    verifying: Verifying | None = None
    # Why the last Done was not accepted; said in the next prompt, until a turn answers.
    rejection: Rejected | None = None
    # The results of the last verification round that ran, for status and the summary.
    last_checks: tuple[CheckResult, ...] = ()
    stagnation: Stagnation = field(default_factory=Stagnation)
    # Turns answered on paid overage (extra usage billed to the account), for status and
    # the summary: a subscriber must never learn of it from the bill.
    overage_turns: int = 0
    # The reset last announced per window, on any answer or refusal (domain.waiting):
    # a refusal that names its window but omits the reset waits for this one.
    announced_resets: tuple[AnnouncedReset, ...] = ()
    # Notes a person left for the next turn (domain.steering): said with every prompt
    # until a turn is answered, then let go of.
    notes: tuple[str, ...] = ()
    # Turns in a row the watchdog ended, Claude Code silent too long (domain.watchdog).
    silent_turns: int = 0
    # The signal that stopped the run, which its exit code tells (None: none did).
    interrupt: Interrupt | None = None

    @property
    def exit_code(self) -> int:
        """The exit code the run ends with: its outcome's, a stop by a signal's own."""
        outcome = self.outcome or Outcome.FAILED
        if outcome is Outcome.STOPPED and self.interrupt is not None:
            return self.interrupt.exit_code
        return outcome.exit_code


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
    # The signal that stopped the run (None: none did).
    interrupt: Interrupt | None = None

    @property
    def exit_code(self) -> int:
        if self.outcome is Outcome.STOPPED and self.interrupt is not None:
            return self.interrupt.exit_code
        return self.outcome.exit_code


# RunCheck (run this verification command) and AskReview (send the review turn, on a
# fresh read-only session) come from the judgement of a Done (domain.verification).
Decision = SendTurn | RunProbe | ScheduleProbe | RunCheck | AskReview | Finish


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
    rules: VerifyRules | None = None,
) -> Transition:
    """Before the first real turn: what is known of capacity decides whether to send it.

    A verification round a crash cut off runs again from its first check: a result the
    record holds may describe a tree the model has not finished with. It runs under
    `rules` when given (a resume may have changed the checks), else its own. A check
    spends nothing, so a Done on the last allowed turn is still verified."""
    if state.verifying is not None:
        restarted = _round_restarted(state, state.verifying, rules)
        return _verify_next(replace(restarted, phase=Phase.RUNNING))
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
    rules: VerifyRules = NO_RULES,
    seen: Answered | None = None,
    estimated_usd: float = 0.0,
) -> Transition:
    """After a turn. Capacity is read before the verdict, always: a Done claimed by a turn
    that hit a limit is discarded, since the limit may have cut the work short.

    `error` is the text of an error the turn ended in; when capacity explains nothing, the
    verdict is not trusted either (an error can quote a marker), and the turn is retried
    until MAX_ERRORED_TURNS in a row have failed, unless Claude Code itself said why it
    ended (`Blocked.by_claude_code`: a hook, a refusal of the model's): then it stands.
    A turn not `sent` (held back because another loop found the capacity closed) spends
    nothing. `estimated_usd` is the part of
    `cost_usd` that is an estimate (see `in_flight_estimate`).

    A Done is verified under `rules` before it ends the run. `seen` is what the answered
    turn left behind (plan items checked, the working tree) for the stagnation brake; a
    refused turn is no turn for it.
    """
    # A pause before the wall comes after a turn that was answered in full.
    answered = was_answered(capacity)
    spend = state.ledger.spend_turn if answered else state.ledger.spend_attempt
    ledger = spend(cost_usd, estimated_usd) if sent else state.ledger
    # A turn came back: the silent ones before it are no longer in a row.
    state = replace(state, ledger=ledger, silent_turns=0)
    if answered and sent and state.notes:  # the model heard the notes
        state = replace(state, notes=())
    if sent and is_paid_overage(capacity):
        state = replace(state, overage_turns=state.overage_turns + 1)
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
    if error is not None and not (isinstance(verdict, Blocked) and verdict.by_claude_code):
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
    state = replace(
        state,
        capacity=capacity,
        summary=verdict_summary(verdict),
        errored_turns=0,
        rejection=None,
    )
    seen = seen or Answered(checked_items=state.stagnation.checked_items)
    match verdict:
        case Done(summary=summary) if rules.verifies:
            verifying = Verifying(summary=summary, seen=seen, rules=rules)
            return _verify_next(replace(state, remaining_work=(), verifying=verifying))
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
            stagnation = state.stagnation.observe(replace(seen, remaining_work=remaining))
            state = replace(state, remaining_work=remaining, stagnation=stagnation)
            if ledger.any_exhausted:
                return _finish(state, Outcome.BUDGET_EXHAUSTED, _budget_reason(ledger))
            stalled = _braked(state, rules)
            if stalled is not None:
                return stalled
            if is_paid_overage(capacity):  # its policy: wait (the default), or go on...
                return _on_limit(state, capacity, now=now, config=config, policies=policies)
            if isinstance(capacity, WindowExhausted):  # paused before the wall
                return _wait(state, capacity, now=now, config=config)
            if state.detour is not None and now >= state.detour.check_at:
                # Time to ask the run's own backend whether its limit has lifted.
                return Transition(replace(state, phase=Phase.PROBING), RunProbe())
            return _send_turn(state)
        case _:
            assert_never(verdict)


def decide_after_check(state: RunState, result: CheckResult) -> Transition:
    """A verification command of the round in progress has ended."""
    verifying = state.verifying
    if verifying is None:
        raise ValueError("a check result needs a Done in verification")
    verifying = replace(verifying, results=(*verifying.results, result))
    return _verify_next(replace(state, verifying=verifying))


def decide_after_review(
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
    """After the review turn: a turn like any other for the caps and the limits (a limit
    met during it is waited out, then the review runs again), and only its Done agrees."""
    verifying = state.verifying
    if verifying is None:
        raise ValueError("a review needs a Done in verification")
    answered = was_answered(capacity)
    spend = state.ledger.spend_turn if answered else state.ledger.spend_attempt
    state = replace(state, ledger=spend(cost_usd) if sent else state.ledger)
    if not answered:
        if state.ledger.any_exhausted:
            return _finish(
                replace(state, capacity=capacity),
                Outcome.BUDGET_EXHAUSTED,
                _budget_reason(state.ledger),
            )
        if isinstance(capacity, WindowExhausted | CreditsExhausted) and isinstance(
            policies.action_for(capacity), SwitchProfile | SwitchModel
        ):
            # The reviewer has no other profile to go on with: the limit is waited out.
            return _wait(state, capacity, now=now, config=config)
        return _by_capacity(state, capacity, now=now, config=config, policies=policies)
    state = replace(state, capacity=capacity)
    if error is not None:
        state = replace(state, errored_turns=state.errored_turns + 1)
        if state.errored_turns >= MAX_ERRORED_TURNS:
            return _finish(
                state,
                Outcome.FAILED,
                f"{state.errored_turns} review turns in a row ended in an error: {error}",
            )
        return _verify_next(state)
    state = replace(state, errored_turns=0)
    judgement = judge_done(
        verifying.rules.checks, verifying.results, review_asked=True, review=verdict
    )
    return _judged(state, verifying, judgement)


def hear_resets(
    state: RunState, signals: TurnSignals, others: Sequence[AnnouncedReset] = ()
) -> RunState:
    """The state once a turn's or a probe's signals are heard: the resets they announce
    are remembered (the runner hears them before it asks what comes next). `others`:
    what other runs of the account heard announced before, heard first, so that the
    turn's own word is the last."""
    announced = remember_resets(state.announced_resets, (*others, *announced_in(signals)))
    if announced == state.announced_resets:
        return state
    return replace(state, announced_resets=announced)


def begin_probe(state: RunState) -> Transition:
    """The scheduled probe instant has come."""
    return Transition(replace(state, phase=Phase.PROBING), RunProbe())


def decide_on_waking(
    state: RunState,
    scheduled: ScheduleProbe,
    *,
    due: bool,
    now: datetime,
    config: WaitPolicyConfig,
) -> Transition:
    """A wait woke, with a person's requests applied (domain.steering): its probe is
    `due` (its instant came, or a probe now ended the wait), or a request woke it.

    A cap reached ends the run at once, probe or none: waiting on would only end it at
    the probe (`claudeloop raise` to what was spent, during a window of hours). A probe
    due goes out; else a max-wait lowered to what was waited ends the wait, and one
    lowered below the probe's instant brings the probe forward (`probe_within_max_wait`);
    otherwise the same wait goes on to its probe.
    """
    if state.ledger.any_exhausted:
        return _finish(state, Outcome.BUDGET_EXHAUSTED, _budget_reason(state.ledger))
    if due:
        return begin_probe(state)
    since = state.waiting_since
    if since is None:  # no start recorded to measure max-wait from
        return Transition(state, scheduled)
    if wait_exceeded(started_waiting_at=since, now=now, config=config):
        return _finish(
            state,
            Outcome.MAX_WAIT_EXCEEDED,
            f"waited longer than max-wait for capacity ({describe(scheduled.awaiting)})",
        )
    at = probe_within_max_wait(scheduled.at, started_waiting_at=since, config=config)
    return Transition(replace(state, next_probe_at=at), replace(scheduled, at=at))


def decide_after_probe(
    state: RunState,
    capacity: CapacityState,
    *,
    now: datetime,
    config: WaitPolicyConfig,
    cost_usd: float = 0.0,
    policies: LimitPolicies = NO_POLICIES,
    estimated_usd: float = 0.0,
) -> Transition:
    """After a probe: resume, keep waiting (backing off), or give up. `estimated_usd` is
    the part of `cost_usd` that is an estimate (a probe a crash cut off in flight).

    On a detour the probe asked the run's own backend: its limit lifted ends the detour;
    still there, the turns go on on the other profile until the next check.
    """
    state = replace(
        state,
        ledger=state.ledger.spend_probe(cost_usd, estimated_usd),
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
        if isinstance(action, SwitchProfile | SwitchModel):
            checks = detour.checks + 1
            check_at = next_probe_instant(
                capacity, now=now, started_waiting_at=detour.since, probe_count=checks,
                config=config, announced=state.announced_resets,
            )  # fmt: skip
            profile, model = _detour_to(action)
            later = replace(
                detour, profile=profile, model=model, awaiting=capacity, checks=checks,
                check_at=check_at,
            )  # fmt: skip
            return _send_turn(replace(state, detour=later))
        # The run's own backend meets a limit whose policy is not a switch: that policy
        # decides (wait for it, or wind down), the detour ends.
        state = replace(state, detour=None)
    return _by_capacity(state, capacity, now=now, config=config, policies=policies)


def decide_after_silent_turn(
    state: RunState,
    *,
    now: datetime,
    config: WaitPolicyConfig,
    policies: LimitPolicies = NO_POLICIES,
) -> Transition:
    """A turn the watchdog ended, Claude Code silent too long (domain.watchdog).

    Nothing came back: it is no attempt, no error of the run and no turn of the
    stagnation brake (what the service served it is billed with the turn sent again).
    The first SILENT_TURNS_SENT_AGAIN in a row are sent again at once, on the same
    session; the next is an outage, waited out and probed as a failing service is
    (`SILENT_SERVICE`, under the run's policy for it), the turn sent once a probe is
    answered. A turn that comes back ends the row (`decide_after_turn`). What was
    silent does not change the rule: the event says it."""
    state = replace(state, silent_turns=state.silent_turns + 1)
    if state.silent_turns <= SILENT_TURNS_SENT_AGAIN:
        return _send_turn(state)
    if state.detour is not None:
        # The other profile is the silent one: wait for the run's own backend, as when
        # the other profile meets a limit (decide_after_turn).
        return _wait(replace(state, detour=None), state.detour.awaiting, now=now, config=config)
    return _on_limit(state, SILENT_SERVICE, now=now, config=config, policies=policies)


def decide_on_control(
    state: RunState, command: ControlCommand, *, interrupt: Interrupt | None = None
) -> Transition:
    """A person asked the run to stop or wind down; the runner calls this at a safe point.
    `interrupt`: the signal the stop came by, which the run's exit code says."""
    match command:
        case ControlCommand.STOP if interrupt is not None:
            return decide_on_interrupt(state, interrupt)
        case ControlCommand.STOP:
            return _finish(state, Outcome.STOPPED, "stopped by the user")
        case ControlCommand.WIND_DOWN:
            return _finish(state, Outcome.WOUND_DOWN, "wound down by the user; handoff written")
        case _:
            assert_never(command)


def decide_on_interrupt(
    state: RunState, interrupt: Interrupt, *, cut_turn: int | None = None
) -> Transition:
    """A signal stopped the run; `cut_turn`: the turn it cut off, which a resume sends
    again on the same session. The exit code is the signal's (`Interrupt.exit_code`)."""
    cut = f" in turn {cut_turn}, which a resume sends again" if cut_turn is not None else ""
    return _finish(
        replace(state, interrupt=interrupt),
        Outcome.STOPPED,
        f"stopped by {interrupt.words}{cut}",
        interrupt=interrupt,
    )


def budget_reached(state: RunState) -> Transition | None:
    """Before a turn: a cap changed since the turn was decided (`claudeloop raise` to
    what was spent) may be reached already; then no turn goes out (None: go ahead)."""
    if state.ledger.any_exhausted:
        return _finish(state, Outcome.BUDGET_EXHAUSTED, _budget_reason(state.ledger))
    return None


def decide_on_failure(state: RunState, reason: str) -> Transition:
    """Something outside the rules broke (the CLI crashed, a disk filled)."""
    return _finish(state, Outcome.FAILED, reason)


def decide_on_second_interrupt(state: RunState, interrupt: Interrupt | None = None) -> Transition:
    """A second Ctrl-C (or SIGTERM) ends the run at once, wherever it was: a turn is cut
    off, a wait left. The state saved before it stays the truth a resume continues from;
    this is what the run tells of its end (the summary, the exit code: `interrupt`'s,
    the first signal's). A run whose end was saved already (the second came as it
    closed) ended as it was saved: done is not undone by a signal after it."""
    if state.outcome is not None:
        saved = Finish(outcome=state.outcome, reason=state.reason, interrupt=state.interrupt)
        return Transition(state, saved)
    return _finish(
        replace(state, interrupt=interrupt),
        Outcome.STOPPED,
        "stopped at once by a second interrupt",
        interrupt=interrupt,
    )


def resume_decision(state: RunState) -> Decision:
    """What a resumed run does first, from its persisted state alone.

    A run killed while waiting keeps its probe instant: no burst of probes on restart, and
    no fresh full wait either.
    """
    match state.phase:
        case Phase.PREFLIGHT | Phase.RUNNING | Phase.VERIFYING:
            if state.verifying is not None:
                # The round a crash cut off runs again from its first check.
                return _verify_next(_round_restarted(state, state.verifying)).decision
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
            reason = state.reason or "the run had already ended"
            return Finish(outcome=outcome, reason=reason, interrupt=state.interrupt)
        case _:
            assert_never(state.phase)


def wait_began(state: RunState) -> datetime | None:
    """When the wait going on began (its first refusal); None when the run is not waiting."""
    return state.waiting_since if state.phase in (Phase.WAITING, Phase.PROBING) else None


def time_waited(state: RunState, *, earlier: float, now: datetime) -> float:
    """Seconds the run has waited for capacity: `earlier` (its waits that ended) and the
    wait going on, the wall time since its first refusal with its probes and any restart
    in it. That is the time --max-wait measures (`wait_exceeded`), so what the summary says
    was waited and why the run gave up never disagree. A clock stepped back adds nothing."""
    began = wait_began(state)
    if began is None:
        return earlier
    return earlier + max((now - began).total_seconds(), 0.0)


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
        case AuthenticationFailed(kind=kind):
            return _finish(
                replace(state, capacity=capacity), Outcome.AUTH_FAILED, auth_failure_reason(kind)
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
        case SwitchProfile() | SwitchModel():
            check_at = next_probe_instant(
                capacity, now=now, started_waiting_at=now, probe_count=0, config=config,
                announced=state.announced_resets,
            )  # fmt: skip
            profile, model = _detour_to(action)
            detour = Detour(
                profile=profile, awaiting=capacity, since=now, check_at=check_at, model=model
            )
            # Turns now go to the other profile, whose capacity is not known to be out.
            return _send_turn(replace(state, capacity=Available(), detour=detour))
        case GoOn():
            # Only paid overage takes go-on (LimitPolicies refuses it elsewhere): the
            # answers still come, billed, and the run goes on knowing it.
            return _send_turn(replace(state, capacity=capacity))
        case _:
            assert_never(action)


def _detour_to(action: SwitchProfile | SwitchModel) -> tuple[str | None, str | None]:
    """The profile and the model a switching policy sends the turns to."""
    match action:
        case SwitchProfile(profile=profile):
            return profile, None
        case SwitchModel(model=model):
            return None, model
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
        capacity, now=now, started_waiting_at=since, probe_count=wait_probes, config=config,
        announced=state.announced_resets,
    )  # fmt: skip
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
    """Capacity is there: the next turn, or the next step of the Done in verification."""
    running = replace(
        state, phase=Phase.RUNNING, waiting_since=None, next_probe_at=None, wait_probes=0
    )
    if running.verifying is not None:
        return _verify_next(running)
    return Transition(running, SendTurn())


def _round_restarted(
    state: RunState, verifying: Verifying, rules: VerifyRules | None = None
) -> RunState:
    restarted = replace(verifying, results=(), rules=rules or verifying.rules)
    return replace(state, verifying=restarted)


def _verify_next(state: RunState) -> Transition:
    verifying = state.verifying
    assert verifying is not None
    rules = verifying.rules
    return _judged(
        state, verifying, judge_done(rules.checks, verifying.results, review_asked=rules.review)
    )


def _judged(state: RunState, verifying: Verifying, judgement: DoneJudgement) -> Transition:
    """The run after a step of a Done's verification."""
    match judgement:
        case RunCheck():
            return Transition(replace(state, phase=Phase.VERIFYING), judgement)
        case AskReview():
            if state.ledger.any_exhausted:  # the review is a turn: none is left for it
                return _finish(state, Outcome.BUDGET_EXHAUSTED, _budget_reason(state.ledger))
            return Transition(replace(state, phase=Phase.VERIFYING), judgement)
        case Accepted():
            state = replace(state, verifying=None, last_checks=verifying.results)
            return _finish(
                state, Outcome.DONE, verifying.summary or "the task is complete",
                phase=Phase.COMPLETE,
            )  # fmt: skip
        case CheckFailed() | ReviewDisagreed():
            return _rejected(state, verifying, judgement)
        case _:
            assert_never(judgement)


def _rejected(state: RunState, verifying: Verifying, rejected: Rejected) -> Transition:
    """A Done not accepted: the same session goes on, told why; the round counts for the
    brake as the verification result of the turn that claimed it."""
    remaining = rejected.remaining_work if isinstance(rejected, ReviewDisagreed) else ()
    verification = verification_of(verifying.results) if verifying.rules.checks else None
    seen = replace(verifying.seen, remaining_work=remaining, verification=verification)
    state = replace(
        state,
        verifying=None,
        rejection=rejected,
        remaining_work=remaining,
        last_checks=verifying.results,
        stagnation=state.stagnation.observe(seen),
    )
    if state.ledger.any_exhausted:
        return _finish(state, Outcome.BUDGET_EXHAUSTED, _budget_reason(state.ledger))
    stalled = _braked(state, verifying.rules)
    if stalled is not None:
        return stalled
    return _send_turn(state)


def _braked(state: RunState, rules: VerifyRules) -> Transition | None:
    """The run's end when the stagnation brake holds, else None."""
    brake = state.stagnation.brake(rules.stagnation)
    match brake:
        case NoBrake():
            return None
        case Stalled(turns=turns):
            return _finish(state, Outcome.FAILED, f"no progress in {count(turns, 'turn')}")
        case SameFailure(failure=failure, rounds=rounds):
            return _finish(
                state,
                Outcome.FAILED,
                f"the same verification failure {count(rounds, 'time')} in a row: "
                f"{describe_failure(failure)}",
            )
        case _:
            assert_never(brake)


def describe_failure(failure: FailureSignature) -> str:
    """A failure in a few words: the command and how it ended."""
    if failure.timed_out:
        ending = "timed out"
    elif failure.exit_code is None:
        ending = "could not start"
    else:
        ending = f"exited with code {failure.exit_code}"
    return f"`{failure.command}` {ending}"


def _finish(
    state: RunState,
    outcome: Outcome,
    reason: str,
    *,
    phase: Phase = Phase.FAILED,
    interrupt: Interrupt | None = None,
) -> Transition:
    ended = replace(state, phase=phase, outcome=outcome, reason=reason, next_probe_at=None)
    return Transition(ended, Finish(outcome=outcome, reason=reason, interrupt=interrupt))


def _budget_reason(ledger: BudgetLedger) -> str:
    caps = ", ".join(ledger.exhausted_caps())
    return f"budget cap reached ({caps})"


def reopen(state: RunState) -> RunState:
    """A run that ended short of done, made ready to go on (after a person fixed the cause:
    raised a cap, renewed credentials). Its ledger is kept: no budget reset."""
    if state.outcome is Outcome.DONE:
        raise ValueError("a run that is done cannot be reopened")
    # A run the brake stopped starts its count over: the person has changed something.
    return replace(
        state,
        phase=Phase.PREFLIGHT,
        outcome=None,
        reason="",
        blocked_on=None,
        interrupt=None,
        next_probe_at=None,
        stagnation=replace(state.stagnation, turns_without_progress=0, same_failure_rounds=0),
    )
