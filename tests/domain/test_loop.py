"""The run-loop state machine, rule by rule. Capacity is read before the verdict, always."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    WindowExhausted,
)
from claudeloop.domain.classify import classify
from claudeloop.domain.completion import Blocked, CompletionVerdict, Continue, Done
from claudeloop.domain.limits import LimitPolicies, WindDown
from claudeloop.domain.loop import (
    MAX_ERRORED_TURNS,
    SILENT_SERVICE,
    SILENT_TURNS_SENT_AGAIN,
    ControlCommand,
    Decision,
    Detour,
    Finish,
    Interrupt,
    Outcome,
    Phase,
    RunProbe,
    RunState,
    ScheduleProbe,
    SendTurn,
    Transition,
    VerifyRules,
    begin_probe,
    decide_after_probe,
    decide_after_silent_turn,
    decide_after_turn,
    decide_on_control,
    decide_on_failure,
    decide_on_interrupt,
    decide_on_second_interrupt,
    decide_preflight,
    reopen,
    resume_decision,
    time_waited,
    verdict_summary,
    wait_began,
)
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.verification import AskReview, CheckCommand, RunCheck
from claudeloop.domain.waiting import WaitPolicyConfig

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
# Explicit values, so these tests are about the loop and not about the tuned defaults.
CONFIG = WaitPolicyConfig(
    window_probe_interval=timedelta(minutes=10),
    reset_grace=timedelta(seconds=60),
    credits_probe_interval=timedelta(minutes=2),
    credits_probe_factor=1.5,
    credits_probe_ceiling=timedelta(minutes=10),
)
RESET = NOW + timedelta(minutes=5)
FIVE_HOUR = WindowExhausted("five_hour", RESET)
RUNNING = RunState(phase=Phase.RUNNING)
NOT_AVAILABLE: list[CapacityState] = [
    FIVE_HOUR,
    WindowExhausted("unknown"),
    CreditsExhausted(),
    AuthenticationFailed(),
    BackendMisconfigured("model missing"),
]
KEEP_GOING = Continue()
VERDICTS: list[CompletionVerdict] = [
    Done("all done"),
    Blocked("a person"),
    Continue(("more",)),
]


def after_turn(
    state: RunState,
    capacity: CapacityState,
    verdict: CompletionVerdict = KEEP_GOING,
    *,
    now: datetime = NOW,
    config: WaitPolicyConfig = CONFIG,
    cost_usd: float = 0.0,
) -> Transition:
    return decide_after_turn(
        state, capacity=capacity, verdict=verdict, now=now, config=config, cost_usd=cost_usd
    )


def waiting_on(capacity: CreditsExhausted | WindowExhausted, *, since: datetime) -> RunState:
    """A run that has been waiting on `capacity` since `since` and is probing now."""
    waiting = after_turn(RUNNING, capacity, now=since).state
    return begin_probe(waiting).state


# Outcomes and phases -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        (Outcome.DONE, 0),
        (Outcome.BLOCKED, 1),
        (Outcome.FAILED, 1),
        (Outcome.BUDGET_EXHAUSTED, 3),
        (Outcome.MAX_WAIT_EXCEEDED, 4),
        (Outcome.WOUND_DOWN, 75),
        (Outcome.AUTH_FAILED, 77),
        (Outcome.BACKEND_MISCONFIGURED, 78),
        (Outcome.STOPPED, 130),
    ],
)
def test_outcome_exit_codes_are_the_documented_ones(outcome: Outcome, code: int) -> None:
    assert outcome.exit_code == code
    assert Finish(outcome, "why").exit_code == code


def test_every_outcome_has_an_exit_code() -> None:
    assert {outcome.exit_code for outcome in Outcome} == {0, 1, 3, 4, 75, 77, 78, 130}


def test_only_complete_and_failed_are_terminal() -> None:
    assert {phase for phase in Phase if phase.terminal} == {Phase.COMPLETE, Phase.FAILED}


def test_every_phase_is_reachable_and_every_decision_is_produced() -> None:
    phases: set[Phase] = {RunState().phase}
    decisions: set[type[Decision]] = set()

    def record(transition: Transition) -> RunState:
        phases.add(transition.state.phase)
        decisions.add(type(transition.decision))
        return transition.state

    state = record(decide_preflight(RunState(), Available(), now=NOW, config=CONFIG))
    state = record(after_turn(state, FIVE_HOUR))
    state = record(begin_probe(state))
    state = record(decide_after_probe(state, Available(), now=RESET, config=CONFIG))
    record(after_turn(state, Available(), Done("shipped"), now=RESET))
    record(after_turn(state, Available(), Blocked("a password"), now=RESET))
    checked = VerifyRules(checks=(CheckCommand.parse("make test"),), review=True)
    record(
        decide_after_turn(
            state, capacity=Available(), verdict=Done("x"), now=RESET, config=CONFIG, rules=checked
        )
    )
    record(
        decide_after_turn(
            state,
            capacity=Available(),
            verdict=Done("x"),
            now=RESET,
            config=CONFIG,
            rules=VerifyRules(review=True),
        )
    )

    assert phases == set(Phase)
    assert decisions == {SendTurn, RunProbe, ScheduleProbe, RunCheck, AskReview, Finish}


# decide_preflight ----------------------------------------------------------------------


def test_preflight_with_capacity_sends_the_first_turn() -> None:
    transition = decide_preflight(RunState(), Available(), now=NOW, config=CONFIG)
    assert transition.decision == SendTurn()
    assert transition.state.phase is Phase.RUNNING


def test_preflight_on_a_closed_window_waits_instead_of_spending_a_turn() -> None:
    seven_day = WindowExhausted("seven_day", NOW + timedelta(days=3))
    transition = decide_preflight(RunState(), seven_day, now=NOW, config=CONFIG)
    assert transition.decision == ScheduleProbe(at=NOW + timedelta(minutes=10), awaiting=seven_day)
    assert transition.state.phase is Phase.WAITING
    assert transition.state.waiting_since == NOW
    assert transition.state.next_probe_at == NOW + timedelta(minutes=10)


def test_preflight_on_empty_credits_probes_with_backoff() -> None:
    transition = decide_preflight(RunState(), CreditsExhausted(), now=NOW, config=CONFIG)
    assert transition.decision == ScheduleProbe(
        at=NOW + timedelta(minutes=2), awaiting=CreditsExhausted()
    )


@pytest.mark.parametrize(
    ("capacity", "outcome", "reason"),
    [
        (
            AuthenticationFailed("bad key"),
            Outcome.AUTH_FAILED,
            "authentication failed: the credentials were refused",
        ),
        (BackendMisconfigured("the model was not found"), Outcome.BACKEND_MISCONFIGURED, None),
    ],
)
def test_preflight_stops_at_once_on_terminal_capacity(
    capacity: CapacityState, outcome: Outcome, reason: str | None
) -> None:
    transition = decide_preflight(RunState(), capacity, now=NOW, config=CONFIG)
    expected_reason = reason or "the model was not found"
    assert transition.decision == Finish(outcome, expected_reason)
    assert transition.state.phase is Phase.FAILED
    assert transition.state.outcome is outcome
    assert transition.state.capacity == capacity


def test_preflight_with_a_spent_budget_finishes_before_sending_anything() -> None:
    spent = RunState(ledger=BudgetLedger(Budget(max_turns=2), turns=2, attempts=2))
    transition = decide_preflight(spent, Available(), now=NOW, config=CONFIG)
    assert transition.decision == Finish(Outcome.BUDGET_EXHAUSTED, "budget cap reached (max-turns)")
    assert transition.decision.exit_code == 3


# decide_after_turn ---------------------------------------------------------------------


def test_after_turn_limit_outranks_completion_claim() -> None:
    transition = after_turn(RUNNING, FIVE_HOUR, Done("everything is finished"))
    assert transition.decision == ScheduleProbe(at=RESET + CONFIG.reset_grace, awaiting=FIVE_HOUR)
    assert transition.state.phase is Phase.WAITING
    assert transition.state.outcome is None
    assert transition.state.capacity == FIVE_HOUR


@pytest.mark.parametrize("capacity", NOT_AVAILABLE)
@pytest.mark.parametrize("verdict", VERDICTS)
def test_after_turn_capacity_is_read_before_any_verdict(
    capacity: CapacityState, verdict: CompletionVerdict
) -> None:
    transition = after_turn(RUNNING, capacity, verdict)
    assert transition.state.outcome not in (Outcome.DONE, Outcome.BLOCKED)
    assert transition.state.phase is not Phase.COMPLETE
    assert transition.state.remaining_work == ()
    assert transition.state.ledger.turns == 0
    assert transition.state.ledger.attempts == 1


def test_after_turn_done_on_an_available_turn_completes_the_run() -> None:
    state = replace(RUNNING, remaining_work=("old",))
    transition = after_turn(state, Available(), Done("shipped it"), cost_usd=0.4)
    assert transition.decision == Finish(Outcome.DONE, "shipped it")
    assert transition.decision.exit_code == 0
    assert transition.state.phase is Phase.COMPLETE
    assert transition.state.remaining_work == ()
    assert transition.state.summary == "shipped it"
    assert (transition.state.ledger.turns, transition.state.ledger.dollars) == (1, 0.4)


def test_after_turn_done_without_a_summary_still_says_why() -> None:
    transition = after_turn(RUNNING, Available(), Done())
    assert transition.decision == Finish(Outcome.DONE, "the task is complete")


def test_after_turn_done_on_the_last_allowed_turn_is_done_not_budget() -> None:
    state = RunState(phase=Phase.RUNNING, ledger=BudgetLedger(Budget(max_turns=1)))
    transition = after_turn(state, Available(), Done("made it"))
    assert transition.decision == Finish(Outcome.DONE, "made it")


def test_after_turn_blocked_ends_the_run_naming_the_blocker() -> None:
    transition = after_turn(RUNNING, Available(), Blocked("the staging password", "did a"))
    assert transition.decision == Finish(Outcome.BLOCKED, "blocked on: the staging password")
    assert transition.decision.exit_code == 1
    assert transition.state.phase is Phase.FAILED
    assert transition.state.summary == "did a"
    assert transition.state.blocked_on == "the staging password"
    assert reopen(transition.state).blocked_on is None


def test_after_turn_continue_sends_the_next_turn_and_tracks_remaining_work() -> None:
    transition = after_turn(RUNNING, Available(), Continue(("b", "c"), "did a"), cost_usd=0.2)
    assert transition.decision == SendTurn()
    assert transition.state.phase is Phase.RUNNING
    assert transition.state.remaining_work == ("b", "c")
    assert transition.state.summary == "did a"
    assert transition.state.ledger == BudgetLedger(turns=1, attempts=1, dollars=0.2)


@pytest.mark.parametrize(
    ("budget", "caps"),
    [
        (Budget(max_turns=1), "max-turns"),
        (Budget(max_attempts=1), "max-attempts"),
        (Budget(max_dollars=0.5), "max-dollars"),
    ],
)
def test_after_turn_continue_at_a_cap_finishes_instead_of_overrunning(
    budget: Budget, caps: str
) -> None:
    state = RunState(phase=Phase.RUNNING, ledger=BudgetLedger(budget))
    transition = after_turn(state, Available(), Continue(("b",)), cost_usd=0.5)
    assert transition.decision == Finish(Outcome.BUDGET_EXHAUSTED, f"budget cap reached ({caps})")
    assert transition.state.remaining_work == ("b",)


def test_after_turn_a_refused_attempt_at_the_attempt_cap_finishes_on_budget() -> None:
    state = RunState(phase=Phase.RUNNING, ledger=BudgetLedger(Budget(max_attempts=1)))
    transition = after_turn(state, CreditsExhausted(), cost_usd=0.01)
    assert transition.decision == Finish(
        Outcome.BUDGET_EXHAUSTED, "budget cap reached (max-attempts)"
    )
    assert transition.state.capacity == CreditsExhausted()
    assert transition.state.ledger.turns == 0


def test_after_turn_a_limited_turn_waits_from_now() -> None:
    transition = after_turn(RUNNING, CreditsExhausted(), Continue(("b",)))
    assert transition.decision == ScheduleProbe(
        at=NOW + CONFIG.credits_probe_interval, awaiting=CreditsExhausted()
    )
    assert transition.state.waiting_since == NOW
    assert transition.state.wait_probes == 0


@pytest.mark.parametrize(
    ("capacity", "outcome"),
    [
        (AuthenticationFailed(), Outcome.AUTH_FAILED),
        (BackendMisconfigured("unreachable"), Outcome.BACKEND_MISCONFIGURED),
    ],
)
def test_after_turn_terminal_capacity_finishes_whatever_the_verdict(
    capacity: CapacityState, outcome: Outcome
) -> None:
    for verdict in VERDICTS:
        transition = after_turn(RUNNING, capacity, verdict)
        assert isinstance(transition.decision, Finish)
        assert transition.decision.outcome is outcome


def test_after_turn_a_529_from_the_service_waits_and_probes_never_resends_at_once() -> None:
    capacity = classify(TurnSignals(api_error_status=529, result_text="Overloaded"))
    transition = after_turn(RUNNING, capacity, Done("claims done"))
    assert isinstance(transition.decision, ScheduleProbe)
    assert transition.decision.at > NOW
    assert transition.state.phase is Phase.WAITING


# begin_probe and decide_after_probe ----------------------------------------------------


def test_begin_probe_runs_a_probe() -> None:
    waiting = after_turn(RUNNING, FIVE_HOUR).state
    transition = begin_probe(waiting)
    assert transition.decision == RunProbe()
    assert transition.state.phase is Phase.PROBING
    assert transition.state.next_probe_at == waiting.next_probe_at


def test_after_probe_with_capacity_back_resumes_the_run() -> None:
    probing = waiting_on(FIVE_HOUR, since=NOW)
    later = NOW + timedelta(minutes=31)
    transition = decide_after_probe(probing, Available(), now=later, config=CONFIG, cost_usd=0.01)
    assert transition.decision == SendTurn()
    assert transition.state.phase is Phase.RUNNING
    assert transition.state.capacity == Available()
    assert transition.state.waiting_since is None
    assert transition.state.next_probe_at is None
    assert transition.state.wait_probes == 0
    assert transition.state.probes == 1
    assert transition.state.ledger.dollars == 0.01
    assert transition.state.ledger.attempts == 1


def test_after_probe_still_out_of_credits_backs_off_further() -> None:
    state = waiting_on(CreditsExhausted(), since=NOW)
    instants = []
    now = NOW
    for _ in range(4):
        now = now + timedelta(minutes=2)
        transition = decide_after_probe(state, CreditsExhausted(), now=now, config=CONFIG)
        assert isinstance(transition.decision, ScheduleProbe)
        instants.append(transition.decision.at - now)
        state = begin_probe(transition.state).state
    assert instants == [timedelta(seconds=s) for s in (180, 270, 405, 600)]
    assert state.waiting_since == NOW
    assert state.probes == 4


def test_after_probe_a_different_limit_starts_its_backoff_over() -> None:
    probing = waiting_on(FIVE_HOUR, since=NOW)
    probing = replace(probing, wait_probes=5)
    later = NOW + timedelta(minutes=31)
    transition = decide_after_probe(probing, CreditsExhausted(), now=later, config=CONFIG)
    assert transition.decision == ScheduleProbe(
        at=later + CONFIG.credits_probe_interval, awaiting=CreditsExhausted()
    )
    assert transition.state.wait_probes == 0
    assert transition.state.waiting_since == NOW


def test_after_probe_past_max_wait_gives_up() -> None:
    config = WaitPolicyConfig(max_wait=timedelta(hours=1))
    probing = waiting_on(WindowExhausted("unknown"), since=NOW)
    later = NOW + timedelta(hours=1)
    transition = decide_after_probe(probing, WindowExhausted("unknown"), now=later, config=config)
    assert transition.decision == Finish(
        Outcome.MAX_WAIT_EXCEEDED,
        "waited longer than max-wait for capacity (usage window closed, no reset announced)",
    )
    assert transition.decision.exit_code == 4
    assert transition.state.phase is Phase.FAILED
    assert transition.state.next_probe_at is None


def test_the_time_waited_is_what_max_wait_measures_from_the_first_refusal() -> None:
    config = WaitPolicyConfig(max_wait=timedelta(hours=1))
    probing = waiting_on(WindowExhausted("unknown"), since=NOW)
    later = NOW + timedelta(hours=1, seconds=3)  # the last probe took 3 s
    gave_up = decide_after_probe(probing, WindowExhausted("unknown"), now=later, config=config)
    assert gave_up.state.outcome is Outcome.MAX_WAIT_EXCEEDED
    # Earlier waits add to it; the wait going on counts from its first refusal.
    assert time_waited(probing, earlier=120.0, now=later) == 120.0 + 3603.0
    assert wait_began(gave_up.state) is None  # the wait is over: nothing more to count
    assert time_waited(gave_up.state, earlier=120.0, now=later) == 120.0


def test_the_time_waited_counts_no_negative_time_when_the_clock_stepped_back() -> None:
    probing = waiting_on(WindowExhausted("unknown"), since=NOW)
    assert time_waited(probing, earlier=5.0, now=NOW - timedelta(hours=1)) == 5.0
    assert wait_began(RUNNING) is None


def test_after_probe_within_max_wait_keeps_waiting() -> None:
    config = WaitPolicyConfig(max_wait=timedelta(hours=1))
    probing = waiting_on(WindowExhausted("unknown"), since=NOW)
    later = NOW + timedelta(minutes=55)
    transition = decide_after_probe(probing, WindowExhausted("unknown"), now=later, config=config)
    assert transition.decision == ScheduleProbe(
        at=NOW + timedelta(hours=1), awaiting=WindowExhausted("unknown")
    )


def test_after_probe_whose_cost_reaches_the_dollar_cap_finishes_on_budget() -> None:
    probing = replace(
        waiting_on(CreditsExhausted(), since=NOW),
        ledger=BudgetLedger(Budget(max_dollars=1.0), turns=3, attempts=4, dollars=0.95),
    )
    transition = decide_after_probe(
        probing, Available(), now=NOW + timedelta(minutes=2), config=CONFIG, cost_usd=0.05
    )
    assert transition.decision == Finish(
        Outcome.BUDGET_EXHAUSTED, "budget cap reached (max-dollars)"
    )
    assert transition.state.capacity == Available()


@pytest.mark.parametrize(
    ("capacity", "outcome"),
    [
        (AuthenticationFailed(), Outcome.AUTH_FAILED),
        (BackendMisconfigured("gone"), Outcome.BACKEND_MISCONFIGURED),
    ],
)
def test_after_probe_terminal_capacity_finishes(capacity: CapacityState, outcome: Outcome) -> None:
    probing = waiting_on(FIVE_HOUR, since=NOW)
    transition = decide_after_probe(probing, capacity, now=RESET, config=CONFIG)
    assert isinstance(transition.decision, Finish)
    assert transition.decision.outcome is outcome


def test_a_probe_without_a_recorded_wait_start_starts_the_wait_now() -> None:
    odd = RunState(phase=Phase.PROBING, capacity=CreditsExhausted(), wait_probes=3)
    transition = decide_after_probe(odd, CreditsExhausted(), now=NOW, config=CONFIG)
    assert transition.state.waiting_since == NOW
    assert transition.state.wait_probes == 0


# decide_on_control and decide_on_failure -----------------------------------------------


@pytest.mark.parametrize(
    ("command", "outcome", "code"),
    [
        (ControlCommand.STOP, Outcome.STOPPED, 130),
        (ControlCommand.WIND_DOWN, Outcome.WOUND_DOWN, 75),
    ],
)
def test_control_commands_end_the_run(command: ControlCommand, outcome: Outcome, code: int) -> None:
    waiting = after_turn(RUNNING, FIVE_HOUR).state
    transition = decide_on_control(waiting, command)
    assert isinstance(transition.decision, Finish)
    assert transition.decision.outcome is outcome
    assert transition.decision.exit_code == code
    assert transition.state.phase is Phase.FAILED
    assert transition.state.next_probe_at is None


def test_a_failure_outside_the_rules_fails_the_run_with_its_reason() -> None:
    transition = decide_on_failure(RUNNING, "the CLI exited with 137")
    assert transition.decision == Finish(Outcome.FAILED, "the CLI exited with 137")
    assert transition.decision.exit_code == 1
    assert transition.state.reason == "the CLI exited with 137"


def test_a_second_interrupt_stops_the_run_at_once_even_mid_wait() -> None:
    waiting = after_turn(RUNNING, FIVE_HOUR).state
    transition = decide_on_second_interrupt(waiting)
    assert transition.decision == Finish(Outcome.STOPPED, "stopped at once by a second interrupt")
    assert transition.decision.exit_code == 130
    assert transition.state.outcome is Outcome.STOPPED


@pytest.mark.parametrize(
    ("interrupt", "code", "words"),
    [
        (Interrupt.CTRL_C, 130, "Ctrl-C (SIGINT)"),
        (Interrupt.HANGUP, 130, "the terminal closing (SIGHUP)"),
        (Interrupt.TERMINATE, 143, "SIGTERM"),
    ],
)
def test_a_signal_stops_the_run_with_its_own_exit_code(
    interrupt: Interrupt, code: int, words: str
) -> None:
    transition = decide_on_control(RUNNING, ControlCommand.STOP, interrupt=interrupt)
    assert transition.decision == Finish(Outcome.STOPPED, f"stopped by {words}", interrupt)
    assert transition.decision.exit_code == code
    assert transition.state.exit_code == code
    assert transition.state.outcome is Outcome.STOPPED
    assert transition.state.interrupt is interrupt


def test_a_signal_that_cut_a_turn_off_says_a_resume_sends_it_again() -> None:
    transition = decide_on_interrupt(RUNNING, Interrupt.TERMINATE, cut_turn=3)
    assert transition.state.reason == "stopped by SIGTERM in turn 3, which a resume sends again"
    assert transition.state.exit_code == 143


def test_a_wind_down_is_no_signals_stop() -> None:
    transition = decide_on_control(RUNNING, ControlCommand.WIND_DOWN, interrupt=Interrupt.TERMINATE)
    assert transition.state.exit_code == 75
    assert transition.state.interrupt is None


def test_a_second_interrupt_keeps_the_first_signals_exit_code() -> None:
    transition = decide_on_second_interrupt(RUNNING, Interrupt.TERMINATE)
    assert isinstance(transition.decision, Finish)
    assert transition.decision.exit_code == 143
    assert transition.state.exit_code == 143


@pytest.mark.parametrize(
    ("interrupt", "code"), [(None, 0), (Interrupt.TERMINATE, 143)], ids=["done", "stopped"]
)
def test_a_second_interrupt_after_the_runs_end_was_saved_leaves_that_end(
    interrupt: Interrupt | None, code: int
) -> None:
    # The second signal came as the run closed: its end saved, it stays the run's end.
    ended = (
        after_turn(RUNNING, Available(), Done("shipped it")).state
        if interrupt is None
        else decide_on_interrupt(RUNNING, interrupt).state
    )
    transition = decide_on_second_interrupt(ended, Interrupt.CTRL_C)
    assert transition.state == ended
    assert ended.outcome is not None
    assert transition.decision == Finish(ended.outcome, ended.reason, interrupt)
    assert transition.state.exit_code == code


def test_a_run_that_has_not_ended_would_exit_as_failed() -> None:
    assert RUNNING.exit_code == 1


def test_a_reopened_run_forgets_the_signal_that_stopped_it() -> None:
    stopped = decide_on_interrupt(RUNNING, Interrupt.TERMINATE).state
    assert reopen(stopped).interrupt is None


# decide_after_silent_turn --------------------------------------------------------------


def test_a_silent_turn_is_sent_again_at_once_and_spends_nothing() -> None:
    state = replace(RUNNING, ledger=BudgetLedger(Budget(max_attempts=1)))
    transition = decide_after_silent_turn(state, now=NOW, config=CONFIG)
    assert transition.decision == SendTurn()
    assert transition.state.silent_turns == 1
    assert transition.state.ledger == state.ledger  # no attempt: nothing came back
    assert transition.state.errored_turns == 0


def test_silent_turns_in_a_row_past_the_limit_are_waited_out_as_an_outage() -> None:
    state = RUNNING
    for _ in range(SILENT_TURNS_SENT_AGAIN):
        transition = decide_after_silent_turn(state, now=NOW, config=CONFIG)
        assert transition.decision == SendTurn()
        state = transition.state
    transition = decide_after_silent_turn(state, now=NOW, config=CONFIG)
    assert isinstance(transition.decision, ScheduleProbe)
    assert transition.decision.awaiting == SILENT_SERVICE
    assert transition.state.phase is Phase.WAITING
    assert transition.state.capacity == SILENT_SERVICE


def test_an_outage_of_silence_follows_the_runs_policy_for_a_failing_service() -> None:
    policies = LimitPolicies(actions=(("overloaded", WindDown()),))
    state = replace(RUNNING, silent_turns=SILENT_TURNS_SENT_AGAIN)
    transition = decide_after_silent_turn(state, now=NOW, config=CONFIG, policies=policies)
    assert isinstance(transition.decision, Finish)
    assert transition.decision.outcome is Outcome.WOUND_DOWN


def test_a_detour_gone_silent_ends_and_the_run_waits_for_its_own_backend() -> None:
    # Found by the state machine's test: silence on the other profile left the run
    # waiting with the detour still set (a wait is for the run's own backend).
    detour = Detour(profile="local", awaiting=FIVE_HOUR, since=NOW, check_at=NOW)
    state = replace(RUNNING, detour=detour, silent_turns=SILENT_TURNS_SENT_AGAIN)
    transition = decide_after_silent_turn(state, now=NOW, config=CONFIG)
    assert isinstance(transition.decision, ScheduleProbe)
    assert transition.decision.awaiting == FIVE_HOUR
    assert transition.state.detour is None
    assert transition.state.phase is Phase.WAITING


def test_a_turn_that_comes_back_ends_the_row_of_silent_ones() -> None:
    state = replace(RUNNING, silent_turns=SILENT_TURNS_SENT_AGAIN + 1)
    assert after_turn(state, Available(), KEEP_GOING).state.silent_turns == 0
    assert after_turn(state, FIVE_HOUR).state.silent_turns == 0


# resume_decision -----------------------------------------------------------------------


@pytest.mark.parametrize("phase", [Phase.PREFLIGHT, Phase.RUNNING])
def test_resume_before_or_between_turns_sends_a_turn(phase: Phase) -> None:
    assert resume_decision(RunState(phase=phase)) == SendTurn()


def test_a_run_resumed_while_waiting_keeps_its_persisted_probe_instant() -> None:
    waiting = after_turn(RUNNING, CreditsExhausted()).state
    assert waiting.next_probe_at is not None
    assert resume_decision(waiting) == ScheduleProbe(
        at=waiting.next_probe_at, awaiting=CreditsExhausted()
    )


def test_a_run_resumed_while_waiting_without_an_instant_probes() -> None:
    waiting = replace(after_turn(RUNNING, FIVE_HOUR).state, next_probe_at=None)
    assert resume_decision(waiting) == RunProbe()


def test_a_run_resumed_while_waiting_on_no_waitable_capacity_probes() -> None:
    odd = RunState(phase=Phase.WAITING, capacity=Available(), next_probe_at=NOW)
    assert resume_decision(odd) == RunProbe()


def test_a_run_resumed_mid_probe_probes_again() -> None:
    assert resume_decision(begin_probe(after_turn(RUNNING, FIVE_HOUR).state).state) == RunProbe()


def test_a_finished_run_resumes_to_its_finish() -> None:
    done = after_turn(RUNNING, Available(), Done("shipped")).state
    assert resume_decision(done) == Finish(Outcome.DONE, "shipped")


def test_a_terminal_run_without_a_recorded_outcome_resumes_as_failed() -> None:
    assert resume_decision(RunState(phase=Phase.FAILED)) == Finish(
        Outcome.FAILED, "the run had already ended"
    )


def test_verdict_summary_is_each_verdicts_summary() -> None:
    assert verdict_summary(Done("a")) == "a"
    assert verdict_summary(Continue((), "b")) == "b"
    assert verdict_summary(Blocked("x", "c")) == "c"


# Errors no capacity state explains -----------------------------------------------------


def test_an_errored_available_turn_is_retried_and_its_verdict_ignored() -> None:
    transition = decide_after_turn(
        RUNNING,
        capacity=Available(),
        verdict=Done("CLAUDELOOP_TASK_FULLY_COMPLETE quoted in an error"),
        now=NOW,
        config=CONFIG,
        error="API returned an empty or malformed response",
    )
    assert transition.decision == SendTurn()
    assert transition.state.outcome is None
    assert transition.state.errored_turns == 1


def test_an_errored_turn_claude_code_blocked_itself_ends_blocked_at_once() -> None:
    # The CLI ends a turn the model refused with an error result ("API Error: ...
    # safeguards flagged this message"): the refusal explains the error, and the same
    # prompt would be refused again, so the run is blocked now, not retried three times.
    refused = Blocked("the model refused to answer: cyber", by_claude_code=True)
    transition = decide_after_turn(
        RUNNING,
        capacity=Available(),
        verdict=refused,
        now=NOW,
        config=CONFIG,
        error="API Error: the safeguards flagged this message",
    )
    assert transition.decision == Finish(
        Outcome.BLOCKED, "blocked on: the model refused to answer: cyber"
    )
    # The model's own blocked_on in a turn that ended in an error is not trusted.
    modelled = decide_after_turn(
        RUNNING,
        capacity=Available(),
        verdict=Blocked("needs a key"),
        now=NOW,
        config=CONFIG,
        error="API Error: malformed",
    )
    assert modelled.decision == SendTurn()


def test_errored_turns_in_a_row_end_the_run_with_the_error() -> None:
    state = RUNNING
    for _ in range(MAX_ERRORED_TURNS):
        transition = decide_after_turn(
            state,
            capacity=Available(),
            verdict=Continue(),
            now=NOW,
            config=CONFIG,
            error="Prompt is too long",
        )
        state = transition.state
    assert transition.decision == Finish(
        outcome=Outcome.FAILED,
        reason=f"{MAX_ERRORED_TURNS} turns in a row ended in an error: Prompt is too long",
    )
    assert state.ledger.turns == MAX_ERRORED_TURNS


def test_a_clean_turn_resets_the_count_of_errored_turns() -> None:
    errored = replace(RUNNING, errored_turns=MAX_ERRORED_TURNS - 1)
    transition = decide_after_turn(
        errored, capacity=Available(), verdict=Continue(), now=NOW, config=CONFIG
    )
    assert transition.state.errored_turns == 0
    assert transition.decision == SendTurn()


def test_an_errored_turn_is_not_retried_past_a_budget_cap() -> None:
    capped = replace(RUNNING, ledger=BudgetLedger(budget=Budget(max_turns=1)))
    transition = decide_after_turn(
        capped, capacity=Available(), verdict=Continue(), now=NOW, config=CONFIG, error="boom"
    )
    assert isinstance(transition.decision, Finish)
    assert transition.decision.outcome is Outcome.BUDGET_EXHAUSTED


def test_a_turn_held_back_by_another_loop_spends_nothing_and_waits() -> None:
    transition = decide_after_turn(
        RUNNING, capacity=FIVE_HOUR, verdict=Continue(), now=NOW, config=CONFIG, sent=False
    )
    assert transition.state.ledger == RUNNING.ledger
    assert isinstance(transition.decision, ScheduleProbe)
