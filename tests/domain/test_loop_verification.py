"""Done means verified, and a loop that makes no progress stops: the loop's rules for
checks, the review and the stagnation brake."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    CapacityState,
    CreditsExhausted,
    WindowExhausted,
)
from claudeloop.domain.completion import Blocked, CompletionVerdict, Continue, Done
from claudeloop.domain.loop import (
    MAX_ERRORED_TURNS,
    Decision,
    Finish,
    Outcome,
    Phase,
    RunProbe,
    RunState,
    ScheduleProbe,
    SendTurn,
    Transition,
    Verifying,
    VerifyRules,
    begin_probe,
    decide_after_check,
    decide_after_probe,
    decide_after_review,
    decide_after_turn,
    decide_preflight,
    describe_failure,
    reopen,
    resume_decision,
)
from claudeloop.domain.stagnation import Answered, Stagnation, StagnationSettings
from claudeloop.domain.verification import (
    AskReview,
    CheckCommand,
    CheckFailed,
    CheckResult,
    FailureSignature,
    ReviewDisagreed,
    RunCheck,
)
from claudeloop.domain.waiting import WaitPolicyConfig
from tests.examples import examples

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
CONFIG = WaitPolicyConfig()
RUNNING = RunState(phase=Phase.RUNNING)
TEST = CheckCommand.parse("make test")
LINT = CheckCommand.parse("ruff check .")
CHECKS = VerifyRules(checks=(TEST, LINT))
REVIEWED = VerifyRules(checks=(TEST,), review=True)
BRAKE = VerifyRules(stagnation=StagnationSettings(stall_turns=3, same_failure=3))
LIMIT = WindowExhausted("five_hour", NOW + timedelta(minutes=5))


def passed(check: CheckCommand = TEST) -> CheckResult:
    return CheckResult(command=check, exit_code=0, seconds=1.0)


def failed(check: CheckCommand = TEST, output: str = "1 failed") -> CheckResult:
    return CheckResult(command=check, exit_code=1, seconds=1.0, output_tail=output)


def turn(
    state: RunState,
    verdict: CompletionVerdict,
    *,
    rules: VerifyRules = CHECKS,
    capacity: CapacityState | None = None,
    seen: Answered | None = None,
    error: str | None = None,
) -> Transition:
    return decide_after_turn(
        state,
        capacity=capacity or Available(),
        verdict=verdict,
        now=NOW,
        config=CONFIG,
        rules=rules,
        seen=seen,
        error=error,
    )


def review(
    state: RunState,
    verdict: CompletionVerdict,
    *,
    capacity: CapacityState | None = None,
    error: str | None = None,
    cost_usd: float = 0.0,
) -> Transition:
    return decide_after_review(
        state,
        capacity=capacity or Available(),
        verdict=verdict,
        now=NOW,
        config=CONFIG,
        error=error,
        cost_usd=cost_usd,
    )


def awaiting_review(state: RunState = RUNNING) -> RunState:
    after = decide_after_check(turn(state, Done("shipped"), rules=REVIEWED).state, passed())
    assert after.decision == AskReview()
    return after.state


# Checks ---------------------------------------------------------------------------------


def test_a_done_with_checks_runs_the_first_check_instead_of_ending() -> None:
    after = turn(RUNNING, Done("shipped"))
    assert after.decision == RunCheck(TEST)
    assert after.state.phase is Phase.VERIFYING
    assert after.state.verifying is not None
    assert after.state.verifying.summary == "shipped"


def test_checks_run_in_order_and_all_passing_ends_the_run_done() -> None:
    first = turn(RUNNING, Done("shipped"))
    second = decide_after_check(first.state, passed(TEST))
    assert second.decision == RunCheck(LINT)
    done = decide_after_check(second.state, passed(LINT))
    assert done.decision == Finish(Outcome.DONE, "shipped")
    assert done.state.phase is Phase.COMPLETE
    assert done.state.verifying is None
    assert done.state.last_checks == (passed(TEST), passed(LINT))


def test_a_done_without_a_summary_accepted_after_checks_still_says_why() -> None:
    after = decide_after_check(
        turn(RUNNING, Done(""), rules=VerifyRules(checks=(TEST,))).state, passed()
    )
    assert after.decision == Finish(Outcome.DONE, "the task is complete")


def test_a_failed_check_rejects_the_done_and_the_same_session_goes_on() -> None:
    result = failed()
    after = decide_after_check(turn(RUNNING, Done("shipped")).state, result)
    assert after.decision == SendTurn()
    assert after.state.phase is Phase.RUNNING
    assert after.state.rejection == CheckFailed(result)
    assert after.state.verifying is None
    assert after.state.last_checks == (result,)


def test_the_rejection_is_kept_until_a_turn_answers() -> None:
    rejected = decide_after_check(turn(RUNNING, Done("shipped")).state, failed()).state
    refused = turn(rejected, Continue(), capacity=LIMIT).state
    assert refused.rejection is not None
    errored = turn(rejected, Continue(), error="bad answer").state
    assert errored.rejection is not None
    assert turn(rejected, Continue(("more",))).state.rejection is None


def test_a_limit_outranks_a_done_with_checks() -> None:
    after = turn(RUNNING, Done("shipped"), capacity=LIMIT)
    assert isinstance(after.decision, ScheduleProbe)
    assert after.state.verifying is None


def test_without_checks_or_review_a_done_ends_the_run_as_before() -> None:
    after = turn(RUNNING, Done("shipped"), rules=VerifyRules())
    assert after.decision == Finish(Outcome.DONE, "shipped")


def test_a_rejected_done_at_a_cap_ends_on_the_budget() -> None:
    state = replace(RUNNING, ledger=BudgetLedger(Budget(max_turns=1)))
    after = decide_after_check(turn(state, Done("shipped")).state, failed())
    assert after.decision.outcome is Outcome.BUDGET_EXHAUSTED  # type: ignore[union-attr]


def test_a_check_result_or_a_review_needs_a_done_in_verification() -> None:
    with pytest.raises(ValueError, match="verification"):
        decide_after_check(RUNNING, passed())
    with pytest.raises(ValueError, match="verification"):
        review(RUNNING, Done("ok"))


# The review -----------------------------------------------------------------------------


def test_the_review_comes_after_the_checks_and_its_done_ends_the_run() -> None:
    state = awaiting_review()
    assert state.phase is Phase.VERIFYING
    after = review(state, Done("looks complete"), cost_usd=0.5)
    assert after.decision == Finish(Outcome.DONE, "shipped")
    assert after.state.ledger.turns == 2  # the Done's turn and the review's
    assert after.state.ledger.dollars == 0.5


def test_a_reviewer_who_disagrees_sends_its_remaining_work_to_the_working_session() -> None:
    after = review(awaiting_review(), Continue(("write the tests",), summary="no tests"))
    assert after.decision == SendTurn()
    assert after.state.rejection == ReviewDisagreed(
        remaining_work=("write the tests",), summary="no tests"
    )
    assert after.state.remaining_work == ("write the tests",)


def test_a_reviewer_who_finds_it_blocked_disagrees() -> None:
    after = review(awaiting_review(), Blocked("cannot see the server"))
    assert after.state.rejection == ReviewDisagreed(blocked_on="cannot see the server")
    assert after.decision == SendTurn()


def test_a_limit_met_during_the_review_is_waited_out_then_the_review_runs_again() -> None:
    waiting = review(awaiting_review(), Done("ok"), capacity=LIMIT)
    assert isinstance(waiting.decision, ScheduleProbe)
    assert (waiting.state.ledger.turns, waiting.state.ledger.attempts) == (1, 2)
    probing = begin_probe(waiting.state)
    assert probing.decision == RunProbe()
    back = decide_after_probe(probing.state, Available(), now=NOW, config=CONFIG)
    assert back.decision == AskReview()
    assert back.state.phase is Phase.VERIFYING


def test_a_limit_during_the_review_is_waited_out_even_under_a_switch_profile_policy() -> None:
    from claudeloop.domain.limits import LimitPolicies, SwitchProfile

    policies = LimitPolicies((("five_hour", SwitchProfile("local")),))
    after = decide_after_review(
        awaiting_review(), capacity=LIMIT, verdict=Done("ok"), now=NOW, config=CONFIG,
        policies=policies,
    )  # fmt: skip
    assert isinstance(after.decision, ScheduleProbe)
    assert after.state.detour is None


def test_a_review_refused_at_the_attempt_cap_ends_on_the_budget() -> None:
    state = replace(awaiting_review(), ledger=BudgetLedger(Budget(max_attempts=2)).spend_turn(0.0))
    after = review(state, Done("ok"), capacity=LIMIT)
    assert after.decision.outcome is Outcome.BUDGET_EXHAUSTED  # type: ignore[union-attr]


def test_a_review_that_ends_in_an_error_is_sent_again_then_gives_up() -> None:
    state = awaiting_review()
    for _ in range(MAX_ERRORED_TURNS - 1):
        after = review(state, Done("ok"), error="malformed")
        assert after.decision == AskReview()
        state = after.state
    last = review(state, Done("ok"), error="malformed")
    assert last.decision == Finish(
        Outcome.FAILED, f"{MAX_ERRORED_TURNS} review turns in a row ended in an error: malformed"
    )


def test_no_review_is_sent_when_no_turn_is_left_for_it() -> None:
    state = replace(RUNNING, ledger=BudgetLedger(Budget(max_turns=1)).spend_turn(0.0))
    after = decide_after_check(turn(state, Done("shipped"), rules=REVIEWED).state, passed())
    assert after.decision.outcome is Outcome.BUDGET_EXHAUSTED  # type: ignore[union-attr]


def test_a_terminal_capacity_during_the_review_ends_the_run() -> None:
    after = review(awaiting_review(), Done("ok"), capacity=AuthenticationFailed())
    assert after.decision.outcome is Outcome.AUTH_FAILED  # type: ignore[union-attr]


# Crash and resume -----------------------------------------------------------------------


def test_a_round_cut_off_by_a_crash_runs_again_from_its_first_check() -> None:
    mid_round = decide_after_check(turn(RUNNING, Done("shipped")).state, passed(TEST)).state
    assert mid_round.verifying is not None
    assert mid_round.verifying.results
    assert resume_decision(mid_round) == RunCheck(TEST)
    resumed = decide_preflight(mid_round, Available(), now=NOW, config=CONFIG)
    assert resumed.decision == RunCheck(TEST)
    assert resumed.state.verifying is not None
    assert resumed.state.verifying.results == ()
    assert resumed.state.ledger == mid_round.ledger


def test_a_round_cut_off_runs_again_under_the_checks_a_resume_gives() -> None:
    mid_round = turn(RUNNING, Done("shipped")).state
    now = VerifyRules(checks=(LINT,))
    resumed = decide_preflight(mid_round, Available(), now=NOW, config=CONFIG, rules=now)
    assert resumed.decision == RunCheck(LINT)
    off = decide_preflight(mid_round, Available(), now=NOW, config=CONFIG, rules=VerifyRules())
    assert off.decision == Finish(Outcome.DONE, "shipped")


def test_a_done_on_the_last_allowed_turn_cut_off_mid_round_is_still_verified() -> None:
    state = replace(RUNNING, ledger=BudgetLedger(Budget(max_turns=1)))
    mid_round = turn(state, Done("shipped"), rules=VerifyRules(checks=(TEST,))).state
    assert mid_round.ledger.any_exhausted
    resumed = decide_preflight(mid_round, Available(), now=NOW, config=CONFIG)
    assert resumed.decision == RunCheck(TEST)
    assert decide_after_check(resumed.state, passed()).decision == Finish(Outcome.DONE, "shipped")


def test_a_run_resumed_while_awaiting_its_review_sends_the_review() -> None:
    assert resume_decision(awaiting_review()) == RunCheck(TEST)
    only_review = turn(RUNNING, Done("x"), rules=VerifyRules(review=True)).state
    assert resume_decision(only_review) == AskReview()


def test_a_verifying_phase_without_a_round_sends_a_turn() -> None:
    assert resume_decision(RunState(phase=Phase.VERIFYING)) == SendTurn()


# The stagnation brake -------------------------------------------------------------------


def test_three_turns_without_evidence_end_the_run_failed() -> None:
    state = RUNNING
    for _ in range(2):
        after = turn(state, Continue(("the same",)), rules=BRAKE)
        assert after.decision == SendTurn()
        state = after.state
    # The first turn changed the remaining work (from none): evidence.
    after = turn(state, Continue(("the same",)), rules=BRAKE)
    assert after.decision == SendTurn()
    stalled = turn(after.state, Continue(("the same",)), rules=BRAKE)
    assert stalled.decision == Finish(Outcome.FAILED, "no progress in 3 turns")
    assert stalled.decision.exit_code == 1


def test_a_changed_tree_resets_the_count() -> None:
    state = replace(RUNNING, remaining_work=("x",))
    kept = Stagnation.start(remaining_work=("x",)).remaining_work
    state = replace(state, stagnation=replace(state.stagnation, remaining_work=kept))
    for tree in ("a", "a", "b", "b", "b"):
        after = turn(state, Continue(("x",)), rules=BRAKE, seen=Answered(tree=tree))
        state = after.state
    assert after.decision == SendTurn()
    assert state.stagnation.turns_without_progress == 2


def test_a_refused_turn_is_no_turn_for_the_brake() -> None:
    state = RUNNING
    for _ in range(5):
        state = turn(state, Continue(), capacity=LIMIT, rules=BRAKE).state
        state = decide_after_probe(
            begin_probe(state).state, Available(), now=NOW, config=CONFIG
        ).state
    assert state.stagnation.turns_without_progress == 0


def test_a_limit_outranks_the_brake() -> None:
    stalled = replace(RUNNING, stagnation=replace(RUNNING.stagnation, turns_without_progress=9))
    after = turn(stalled, Continue(), capacity=LIMIT, rules=BRAKE)
    assert isinstance(after.decision, ScheduleProbe)


def test_stall_turns_zero_turns_the_brake_off() -> None:
    state = RUNNING
    for _ in range(6):
        after = turn(state, Continue(("same",)), rules=VerifyRules())
        state = after.state
    off = VerifyRules(stagnation=StagnationSettings(stall_turns=0))
    assert turn(state, Continue(("same",)), rules=off).decision == SendTurn()


def test_the_same_failure_three_rounds_in_a_row_ends_the_run_naming_it() -> None:
    rules = VerifyRules(checks=(TEST,), stagnation=StagnationSettings(stall_turns=0))
    state = RUNNING
    for _ in range(2):
        state = decide_after_check(turn(state, Done("x"), rules=rules).state, failed()).state
    last = decide_after_check(turn(state, Done("x"), rules=rules).state, failed())
    assert last.decision == Finish(
        Outcome.FAILED,
        "the same verification failure 3 times in a row: `make test` exited with code 1",
    )


def test_a_different_failure_is_progress() -> None:
    rules = VerifyRules(checks=(TEST,), stagnation=StagnationSettings(stall_turns=2))
    state = RUNNING
    for output in ("1 failed", "2 failed", "3 failed", "4 failed"):
        after = decide_after_check(turn(state, Done("x"), rules=rules).state, failed(output=output))
        assert after.decision == SendTurn()
        state = after.state


def test_a_failure_is_described_by_how_it_ended() -> None:
    def signature(**ending: object) -> FailureSignature:
        fields = {"command": "make test", "exit_code": None, "timed_out": False, "output": ""}
        return FailureSignature(**(fields | ending))  # type: ignore[arg-type]

    assert describe_failure(signature(exit_code=2)) == "`make test` exited with code 2"
    assert describe_failure(signature(timed_out=True)) == "`make test` timed out"
    assert describe_failure(signature()) == "`make test` could not start"


def test_a_reopened_run_starts_its_count_over() -> None:
    state = replace(RUNNING, stagnation=replace(RUNNING.stagnation, turns_without_progress=3))
    stopped = turn(state, Continue(), rules=BRAKE).state
    assert stopped.phase is Phase.FAILED
    assert reopen(stopped).stagnation.turns_without_progress == 0


# Properties -----------------------------------------------------------------------------

_RESULTS = st.builds(
    CheckResult,
    command=st.just(TEST),
    exit_code=st.sampled_from([0, 0, 1, 2]),
    seconds=st.just(1.0),
)
_VERDICTS: st.SearchStrategy[CompletionVerdict] = st.one_of(
    st.builds(Done, st.just("ok")),
    st.builds(Continue, st.tuples(st.sampled_from(["a", "b"]))),
    st.builds(Blocked, st.just("why")),
)


@given(
    exit_codes=st.lists(st.sampled_from([0, 0, 0, 1]), min_size=1, max_size=4),
    review_asked=st.booleans(),
    verdict=_VERDICTS,
)
def test_a_done_is_accepted_only_when_every_check_passed_and_the_review_agreed(
    exit_codes: list[int], review_asked: bool, verdict: CompletionVerdict
) -> None:
    checks = tuple(CheckCommand.parse(f"check {n}") for n in range(len(exit_codes)))
    rules = VerifyRules(checks=checks, review=review_asked)
    after = turn(RUNNING, Done("claimed"), rules=rules)
    for check, code in zip(checks, exit_codes, strict=True):
        if not isinstance(after.decision, RunCheck):
            break
        assert after.decision.check == check
        result = CheckResult(command=check, exit_code=code, seconds=0.1)
        after = decide_after_check(after.state, result)
    if isinstance(after.decision, AskReview):
        after = review(after.state, verdict)
    accepted = all(code == 0 for code in exit_codes) and (
        not review_asked or isinstance(verdict, Done)
    )
    assert (after.decision == Finish(Outcome.DONE, "claimed")) is accepted
    assert after.state.rejection is None if accepted else after.decision == SendTurn()


@given(
    capacity=st.sampled_from(
        [LIMIT, CreditsExhausted(), WindowExhausted("unknown"), AuthenticationFailed()]
    ),
    rules=st.sampled_from([CHECKS, REVIEWED, BRAKE, VerifyRules()]),
    stalled=st.integers(0, 10),
)
def test_a_limit_outranks_every_claim_and_the_brake(
    capacity: CapacityState, rules: VerifyRules, stalled: int
) -> None:
    state = replace(RUNNING, stagnation=replace(RUNNING.stagnation, turns_without_progress=stalled))
    for verdict in (Done("done"), Continue()):
        after = turn(state, verdict, capacity=capacity, rules=rules)
        assert not isinstance(after.decision, RunCheck | AskReview)
        assert after.state.outcome is not Outcome.DONE
        assert after.state.stagnation == state.stagnation
        assert not (isinstance(after.decision, Finish) and "no progress" in after.decision.reason)


@given(
    trees=st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=12),
    stall=st.integers(1, 4),
)
def test_any_evidence_resets_the_count_and_only_n_bare_turns_stop(
    trees: list[str], stall: int
) -> None:
    rules = VerifyRules(stagnation=StagnationSettings(stall_turns=stall, same_failure=0))
    state = replace(RUNNING, stagnation=replace(RUNNING.stagnation, tree="a"))
    bare = 0
    previous = "a"
    for tree in trees:
        after = turn(state, Continue(), rules=rules, seen=Answered(tree=tree))
        bare = 0 if tree != previous else bare + 1
        previous = tree
        assert after.state.stagnation.turns_without_progress == bare
        assert isinstance(after.decision, Finish) is (bare >= stall)
        if isinstance(after.decision, Finish):
            break
        state = after.state


def test_a_round_keeps_the_rules_it_began_under() -> None:
    state = turn(RUNNING, Done("x"), rules=REVIEWED).state
    assert isinstance(state.verifying, Verifying)
    assert state.verifying.rules == REVIEWED


# The loop with verification, driven at random ----------------------------------------


class VerifyingLoopMachine(RuleBasedStateMachine):
    """The runner's moves with checks, a review and the brake: turns, check results,
    reviews, limits and probes, and crashes; the promises are checked after each step."""

    def __init__(self) -> None:
        super().__init__()
        self.now = NOW
        self.held_to = VerifyRules()
        self.state = RunState()
        self.decision: Decision = SendTurn()
        self.step = "start"
        self.round_results: list[CheckResult] = []
        self.review_verdict: CompletionVerdict | None = None

    def take(self, step: str, transition: Transition) -> None:
        self.step = step
        self.state = transition.state
        self.decision = transition.decision

    @initialize(
        checks=st.integers(0, 2),
        review_asked=st.booleans(),
        stall=st.integers(0, 3),
        same=st.integers(0, 3),
        turns=st.none() | st.integers(1, 12),
    )
    def start(
        self, *, checks: int, review_asked: bool, stall: int, same: int, turns: int | None
    ) -> None:
        self.held_to = VerifyRules(
            checks=(TEST, LINT)[:checks],
            review=review_asked,
            stagnation=StagnationSettings(stall_turns=stall, same_failure=same),
        )
        begun = RunState(ledger=BudgetLedger(Budget(max_turns=turns)))
        self.take("start", decide_preflight(begun, Available(), now=self.now, config=CONFIG))

    @precondition(lambda self: isinstance(self.decision, SendTurn))
    @rule(verdict=_VERDICTS, limited=st.integers(0, 5), tree=st.sampled_from(["a", "b"]))
    def turn(self, *, verdict: CompletionVerdict, limited: int, tree: str) -> None:
        capacity = LIMIT if limited == 0 else Available()
        self.round_results = []
        self.review_verdict = None
        transition = decide_after_turn(
            self.state,
            capacity=capacity,
            verdict=verdict,
            now=self.now,
            config=CONFIG,
            rules=self.held_to,
            seen=Answered(tree=tree),
        )
        self.take("turn", transition)

    @precondition(lambda self: isinstance(self.decision, RunCheck))
    @rule(code=st.sampled_from([0, 0, 1]), output=st.sampled_from(["1 failed", "2 failed"]))
    def check(self, *, code: int, output: str) -> None:
        assert isinstance(self.decision, RunCheck)
        assert self.state.phase is Phase.VERIFYING
        done_so_far = self.state.verifying.results if self.state.verifying else ()
        assert self.decision.check == self.held_to.checks[len(done_so_far)]  # in order
        tail = "" if code == 0 else output
        result = CheckResult(
            command=self.decision.check, exit_code=code, seconds=1.0, output_tail=tail
        )
        self.round_results.append(result)
        before = self.state.ledger
        self.take("check", decide_after_check(self.state, result))
        assert self.state.ledger == before  # a check spends nothing

    @precondition(lambda self: isinstance(self.decision, AskReview))
    @rule(verdict=_VERDICTS, limited=st.integers(0, 4))
    def ask_review(self, *, verdict: CompletionVerdict, limited: int) -> None:
        assert all(result.passed for result in self.round_results)
        capacity = LIMIT if limited == 0 else Available()
        self.review_verdict = verdict if limited else None
        before = self.state.ledger.attempts
        self.take("review", review(self.state, verdict, capacity=capacity))
        assert self.state.ledger.attempts == before + 1  # a turn like any other

    @precondition(lambda self: isinstance(self.decision, ScheduleProbe))
    @rule()
    def probe(self) -> None:
        assert isinstance(self.decision, ScheduleProbe)
        self.now = max(self.now, self.decision.at)
        probing = begin_probe(self.state)
        self.take(
            "probe", decide_after_probe(probing.state, Available(), now=self.now, config=CONFIG)
        )

    @precondition(lambda self: not self.state.phase.terminal)
    @rule()
    def crash_and_resume(self) -> None:
        if self.state.phase in (Phase.WAITING, Phase.PROBING):
            return
        # The runner's resume of a run between turns or mid-round, as in Runner.drive.
        expected = resume_decision(self.state)
        self.round_results = []
        self.take("resume", decide_preflight(self.state, Available(), now=self.now, config=CONFIG))
        assert self.decision == expected

    @precondition(lambda self: self.state.phase.terminal)
    @rule()
    def ended(self) -> None:
        assert resume_decision(self.state) == self.decision  # an ended run stays ended

    @invariant()
    def a_done_ends_the_run_only_once_verified(self) -> None:
        if not (isinstance(self.decision, Finish) and self.decision.outcome is Outcome.DONE):
            return
        if self.held_to.checks:
            assert self.step in ("check", "review")
            assert len(self.round_results) == len(self.held_to.checks)
            assert all(result.passed for result in self.round_results)
        if self.held_to.review:
            assert self.step == "review"
            assert isinstance(self.review_verdict, Done)

    @invariant()
    def a_round_is_in_flight_exactly_while_verifying(self) -> None:
        verifying = self.state.phase is Phase.VERIFYING
        assert isinstance(self.decision, RunCheck | AskReview) is verifying
        if verifying:
            assert self.state.verifying is not None

    @invariant()
    def the_brake_stops_only_after_its_count(self) -> None:
        counts = self.state.stagnation
        stall = self.held_to.stagnation.stall_turns
        if isinstance(self.decision, Finish) and "no progress" in self.decision.reason:
            assert stall
            assert counts.turns_without_progress >= stall
        elif not self.state.phase.terminal and stall:
            assert counts.turns_without_progress < stall


VerifyingLoopMachine.TestCase.settings = settings(
    max_examples=examples(150), stateful_step_count=40, deadline=None
)
TestVerifyingLoop = VerifyingLoopMachine.TestCase
