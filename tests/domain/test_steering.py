"""Steering a live run: a probe now ends only a wait, a cap at or below what was spent is
reached (a person asking below it is refused first), a note waits for the next answered
turn, and a wait woken by a request decides again at once."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.capacity import Available, WindowExhausted, describe
from claudeloop.domain.completion import Continue
from claudeloop.domain.loop import (
    Finish,
    Outcome,
    Phase,
    RunProbe,
    RunState,
    ScheduleProbe,
    Transition,
    budget_reached,
    decide_after_turn,
    decide_on_waking,
)
from claudeloop.domain.steering import (
    MAX_NOTE_CHARS,
    MAX_NOTES,
    AddNote,
    Cap,
    ProbeNow,
    RaiseCap,
    current_cap,
    describe_cap,
    malformed,
    refusal,
    spent_on,
    steer,
    waited_now,
)
from claudeloop.domain.waiting import WaitPolicyConfig
from tests.examples import examples

NOW = datetime(2026, 12, 2, 3, 0, tzinfo=UTC)
POLICY = WaitPolicyConfig(max_wait=timedelta(hours=6))


def spent(turns: int = 4, dollars: float = 1.5, budget: Budget | None = None) -> RunState:
    ledger = BudgetLedger(budget or Budget(max_turns=5, max_dollars=2.0), turns, turns, dollars)
    return RunState(phase=Phase.RUNNING, ledger=ledger)


def waiting(since: timedelta = timedelta(hours=2)) -> RunState:
    return replace(
        spent(),
        phase=Phase.WAITING,
        capacity=WindowExhausted(rate_limit_type="five_hour", resets_at=NOW + timedelta(hours=1)),
        waiting_since=NOW - since,
        next_probe_at=NOW + timedelta(hours=1),
    )


def test_a_probe_now_ends_a_wait_and_the_run_probes() -> None:
    steered = steer(waiting(), POLICY, ProbeNow(), now=NOW)
    assert steered.applied
    assert steered.probe
    assert steered.state.phase is Phase.PROBING
    assert steered.reason == "the wait ends early; probing now"


@pytest.mark.parametrize("phase", [Phase.RUNNING, Phase.VERIFYING, Phase.PROBING])
def test_a_probe_now_outside_a_wait_does_nothing_and_says_so(phase: Phase) -> None:
    state = replace(spent(), phase=phase)
    steered = steer(state, POLICY, ProbeNow(), now=NOW)
    assert not steered.applied
    assert not steered.probe
    assert steered.state == state
    assert f"the run was {phase.value}, not waiting" in steered.reason


def test_raising_the_turn_cap_keeps_the_rest_of_the_budget() -> None:
    steered = steer(spent(), POLICY, RaiseCap(Cap.TURNS, 20), now=NOW)
    assert steered.applied
    assert steered.state.ledger.budget == Budget(max_turns=20, max_dollars=2.0)
    assert steered.state.ledger.turns == 4  # what was spent stays spent
    assert steered.before == 5
    assert steered.reason == "max-turns 5 turns -> 20 turns"


def test_raising_the_dollar_cap_of_a_run_without_one() -> None:
    state = spent(budget=Budget())
    steered = steer(state, POLICY, RaiseCap(Cap.DOLLARS, 10), now=NOW)
    assert steered.state.ledger.budget.max_dollars == 10
    assert steered.before is None
    assert steered.reason == "max-dollars none -> $10.00"


def test_raising_max_wait_changes_the_wait_policy_only() -> None:
    steered = steer(waiting(), POLICY, RaiseCap(Cap.WAIT, 12 * 3600), now=NOW)
    assert steered.applied
    assert steered.wait_policy.max_wait == timedelta(hours=12)
    assert steered.state == waiting()
    assert steered.reason == "max-wait 21600 s -> 43200 s"


def test_max_wait_without_one_before() -> None:
    steered = steer(spent(), WaitPolicyConfig(), RaiseCap(Cap.WAIT, 60), now=NOW)
    assert steered.before is None
    assert steered.wait_policy.max_wait == timedelta(minutes=1)


@pytest.mark.parametrize(
    ("asked", "said"),
    [
        (RaiseCap(Cap.TURNS, 4.5), "--max-turns must be a whole number of turns, not 4.5"),
        (RaiseCap(Cap.TURNS, 0), "--max-turns must be a positive number, not 0"),
        (RaiseCap(Cap.DOLLARS, math.nan), "--max-dollars must be a positive number, not nan"),
        (RaiseCap(Cap.WAIT, -60), "--max-wait must be a positive number, not -60"),
    ],
)
def test_a_value_that_is_no_cap_is_refused_and_nothing_changes(asked: RaiseCap, said: str) -> None:
    state = waiting()
    steered = steer(state, POLICY, asked, now=NOW)
    assert not steered.applied
    assert steered.state == state
    assert steered.wait_policy == POLICY
    assert steered.reason == said
    assert refusal(asked.cap, asked.to, state.ledger, waited_seconds=0) == said


@pytest.mark.parametrize(
    ("asked", "said"),
    [
        (RaiseCap(Cap.TURNS, 3), "--max-turns 3 turns is lower than what the run has spent (4"),
        (RaiseCap(Cap.DOLLARS, 1.0), "--max-dollars $1.00 is lower than what the run has spent"),
        (RaiseCap(Cap.WAIT, 3600), "--max-wait 3600 s is lower than what the run has spent (7200"),
    ],
)
def test_a_cap_below_what_was_spent_is_refused_to_a_person_and_reached_in_the_run(
    asked: RaiseCap, said: str
) -> None:
    # Asked for below what was spent: a slip, said to the person before it is sent.
    state = waiting()
    refused = refusal(asked.cap, asked.to, state.ledger, waited_seconds=waited_now(state, NOW))
    assert refused is not None
    assert said in refused
    # Below it by the time the run applies it (spending went on meanwhile): reached.
    steered = steer(state, POLICY, asked, now=NOW)
    assert steered.applied
    assert "; reached: the run has spent " in steered.reason
    assert current_cap(asked.cap, steered.state.ledger, steered.wait_policy) == asked.to


def test_a_cap_equal_to_what_was_spent_is_taken_and_reached() -> None:
    assert refusal(Cap.TURNS, 4, spent().ledger, waited_seconds=0) is None
    steered = steer(waiting(), POLICY, RaiseCap(Cap.TURNS, 4), now=NOW)
    assert steered.reason == "max-turns 5 turns -> 4 turns; reached: the run has spent 4 turns"
    assert steered.state.ledger.turns_exhausted
    wait = steer(waiting(), POLICY, RaiseCap(Cap.WAIT, 7200), now=NOW)
    assert wait.reason == "max-wait 21600 s -> 7200 s; reached: the run has spent 7200 s"


def test_a_note_waits_for_the_next_turn_trimmed_and_cut() -> None:
    steered = steer(spent(), POLICY, AddNote("  the flaky test is known  "), now=NOW)
    assert steered.applied
    assert steered.state.notes == ("the flaky test is known",)
    long = steer(spent(), POLICY, AddNote("x" * (MAX_NOTE_CHARS + 50)), now=NOW)
    assert long.state.notes == ("x" * MAX_NOTE_CHARS,)


def test_only_the_newest_notes_are_kept() -> None:
    state = spent()
    for number in range(MAX_NOTES + 3):
        state = steer(state, POLICY, AddNote(f"note {number}"), now=NOW).state
    assert len(state.notes) == MAX_NOTES
    assert state.notes[-1] == f"note {MAX_NOTES + 2}"
    assert state.notes[0] == "note 3"


def test_an_empty_note_is_not_applied() -> None:
    steered = steer(spent(), POLICY, AddNote("   "), now=NOW)
    assert not steered.applied
    assert steered.state.notes == ()


def test_the_notes_are_let_go_of_once_a_turn_is_answered_not_when_refused() -> None:
    state = replace(spent(turns=1, budget=Budget()), notes=("look at the logs",))
    refused = decide_after_turn(
        state,
        capacity=WindowExhausted(rate_limit_type="five_hour", resets_at=NOW + timedelta(hours=1)),
        verdict=Continue(),
        now=NOW,
        config=POLICY,
    )
    assert refused.state.notes == ("look at the logs",)
    answered = decide_after_turn(
        state, capacity=Available(), verdict=Continue(), now=NOW, config=POLICY
    )
    assert answered.state.notes == ()
    held_back = decide_after_turn(
        state, capacity=Available(), verdict=Continue(), now=NOW, config=POLICY, sent=False
    )
    assert held_back.state.notes == ("look at the logs",)


def test_what_was_spent_and_the_caps_in_words() -> None:
    ledger = spent().ledger
    assert spent_on(Cap.TURNS, ledger, waited_seconds=9) == 4
    assert spent_on(Cap.DOLLARS, ledger, waited_seconds=9) == 1.5
    assert spent_on(Cap.WAIT, ledger, waited_seconds=9) == 9
    assert current_cap(Cap.TURNS, spent(budget=Budget()).ledger, POLICY) is None
    assert current_cap(Cap.DOLLARS, ledger, POLICY) == 2.0
    assert describe_cap(Cap.TURNS, None) == "none"


def test_the_wait_going_on_in_seconds() -> None:
    assert waited_now(waiting(timedelta(minutes=3)), NOW) == 180
    assert waited_now(spent(), NOW) == 0
    assert waited_now(replace(waiting(), waiting_since=None), NOW) == 0
    assert waited_now(waiting(-timedelta(minutes=1)), NOW) == 0  # a clock stepped back


caps = st.sampled_from(list(Cap))
values = st.floats(min_value=-10, max_value=1e6) | st.sampled_from([math.nan, math.inf])
ledgers = st.builds(
    BudgetLedger,
    budget=st.builds(
        Budget,
        max_turns=st.none() | st.integers(1, 1000),
        max_dollars=st.none() | st.floats(0.01, 1000),
    ),
    turns=st.integers(0, 1000),
    dollars=st.floats(0, 1000),
)


@settings(max_examples=examples(300))
@given(ledger=ledgers, cap=caps, to=values, waited=st.floats(0, 1e6))
def test_a_cap_is_taken_as_asked_and_reached_at_or_below_what_was_spent(
    ledger: BudgetLedger, cap: Cap, to: float, waited: float
) -> None:
    state = RunState(
        phase=Phase.WAITING, ledger=ledger, waiting_since=NOW - timedelta(seconds=waited)
    )
    steered = steer(state, POLICY, RaiseCap(cap, to), now=NOW)
    used = spent_on(cap, ledger, waited_seconds=waited_now(state, NOW))
    after = current_cap(cap, steered.state.ledger, steered.wait_policy)
    assert steered.applied == (malformed(cap, to) is None)
    if steered.applied:
        assert after is not None
        assert after == pytest.approx(to, abs=1e-6)
        assert ("reached" in steered.reason) == (to <= used)
        # Reached in words is reached in the ledger, which ends the run.
        reached = {
            Cap.TURNS: steered.state.ledger.turns_exhausted,
            Cap.DOLLARS: steered.state.ledger.dollars_exhausted,
        }
        assert reached.get(cap, to <= used) == (to <= used)
    else:
        assert steered.state == state
        assert steered.wait_policy == POLICY
    # The ledger's counts never move, and no other cap does.
    assert steered.state.ledger.turns == ledger.turns
    assert steered.state.ledger.dollars == ledger.dollars
    for other in set(Cap) - {cap}:
        before = current_cap(other, ledger, POLICY)
        assert current_cap(other, steered.state.ledger, steered.wait_policy) == before


@settings(max_examples=examples(200))
@given(ledger=ledgers, cap=caps, more=st.floats(0, 1e5))
def test_raising_a_cap_at_or_above_it_never_lowers_the_budget(
    ledger: BudgetLedger, cap: Cap, more: float
) -> None:
    state = RunState(phase=Phase.RUNNING, ledger=ledger)
    was = current_cap(cap, ledger, POLICY)
    floor = max(was or 0.0, spent_on(cap, ledger, waited_seconds=0), 1.0)
    to = math.ceil(floor + more)
    steered = steer(state, POLICY, RaiseCap(cap, to), now=NOW)
    assert steered.applied
    after = current_cap(cap, steered.state.ledger, steered.wait_policy)
    assert after is not None
    assert was is None or after >= was


def test_a_cap_set_to_what_was_spent_ends_the_run_before_the_next_turn() -> None:
    state = steer(spent(), POLICY, RaiseCap(Cap.TURNS, 4), now=NOW).state
    reached = budget_reached(state)
    assert reached is not None
    assert reached.state.outcome is Outcome.BUDGET_EXHAUSTED
    assert reached.decision == Finish(Outcome.BUDGET_EXHAUSTED, "budget cap reached (max-turns)")
    assert budget_reached(spent()) is None


# A wait woken: the requests applied, what comes next ------------------------------------

CLOSED = WindowExhausted(rate_limit_type="five_hour", resets_at=NOW + timedelta(hours=5))


def scheduled(at: datetime = NOW + timedelta(hours=1)) -> ScheduleProbe:
    return ScheduleProbe(at=at, awaiting=CLOSED)


@pytest.mark.parametrize("due", [False, True])
def test_a_cap_reached_in_a_wait_ends_the_run_at_once_without_a_probe(due: bool) -> None:
    state = steer(waiting(), POLICY, RaiseCap(Cap.TURNS, 4), now=NOW).state
    woke = decide_on_waking(state, scheduled(), due=due, now=NOW, config=POLICY)
    assert woke.decision == Finish(Outcome.BUDGET_EXHAUSTED, "budget cap reached (max-turns)")
    assert woke.state.outcome is Outcome.BUDGET_EXHAUSTED
    assert woke.state.next_probe_at is None
    assert Outcome.BUDGET_EXHAUSTED.exit_code == 3  # as a cap reached after a turn


def test_a_probe_due_goes_out() -> None:
    woke = decide_on_waking(waiting(), scheduled(), due=True, now=NOW, config=POLICY)
    assert woke.decision == RunProbe()
    assert woke.state.phase is Phase.PROBING


def test_a_note_woke_it_the_same_wait_goes_on_to_its_probe() -> None:
    state = steer(waiting(), POLICY, AddNote("known flake"), now=NOW).state
    woke = decide_on_waking(state, scheduled(), due=False, now=NOW, config=POLICY)
    assert woke == Transition(state, scheduled())


def test_a_max_wait_lowered_below_the_probe_brings_the_probe_forward() -> None:
    # Waiting two hours, the probe an hour away: a max-wait of 2h30m ends the wait first.
    steered = steer(waiting(), POLICY, RaiseCap(Cap.WAIT, 9000), now=NOW)
    woke = decide_on_waking(
        steered.state, scheduled(), due=False, now=NOW, config=steered.wait_policy
    )
    at = NOW + timedelta(minutes=30)
    assert woke.decision == scheduled(at)
    assert woke.state.next_probe_at == at
    assert woke.state.phase is Phase.WAITING


def test_a_max_wait_raised_keeps_the_probe_where_it_was() -> None:
    steered = steer(waiting(), POLICY, RaiseCap(Cap.WAIT, 10 * 3600), now=NOW)
    woke = decide_on_waking(
        steered.state, scheduled(), due=False, now=NOW, config=steered.wait_policy
    )
    assert woke.decision == scheduled()
    assert woke.state == waiting()


def test_a_max_wait_lowered_to_what_was_waited_ends_the_wait_without_a_probe() -> None:
    steered = steer(waiting(), POLICY, RaiseCap(Cap.WAIT, 7200), now=NOW)
    woke = decide_on_waking(
        steered.state, scheduled(), due=False, now=NOW, config=steered.wait_policy
    )
    assert woke.decision == Finish(
        Outcome.MAX_WAIT_EXCEEDED, f"waited longer than max-wait for capacity ({describe(CLOSED)})"
    )
    assert woke.state.phase is Phase.FAILED


def test_a_wait_with_no_start_recorded_goes_on_as_it_was() -> None:
    state = replace(waiting(), waiting_since=None)
    tight = WaitPolicyConfig(max_wait=timedelta(seconds=1))
    woke = decide_on_waking(state, scheduled(), due=False, now=NOW, config=tight)
    assert woke == Transition(state, scheduled())


@settings(max_examples=examples(300))
@given(
    ledger=ledgers,
    due=st.booleans(),
    waited=st.integers(0, 10**6),
    probe_in=st.integers(-100, 10**6),
    max_wait=st.none() | st.integers(1, 10**6),
)
def test_a_woken_wait_never_probes_past_a_cap_nor_waits_past_max_wait(
    ledger: BudgetLedger, due: bool, waited: int, probe_in: int, max_wait: int | None
) -> None:
    since = NOW - timedelta(seconds=waited)
    state = replace(waiting(), ledger=ledger, waiting_since=since)
    policy = WaitPolicyConfig(max_wait=None if max_wait is None else timedelta(seconds=max_wait))
    planned = scheduled(NOW + timedelta(seconds=probe_in))
    woke = decide_on_waking(state, planned, due=due, now=NOW, config=policy)
    match woke.decision:
        case Finish(outcome=Outcome.BUDGET_EXHAUSTED):
            assert ledger.any_exhausted
        case Finish(outcome=outcome):
            assert outcome is Outcome.MAX_WAIT_EXCEEDED
            assert not due
            assert max_wait is not None
            assert waited >= max_wait
        case RunProbe():
            assert due
            assert not ledger.any_exhausted
        case ScheduleProbe(at=at):
            assert not due
            assert not ledger.any_exhausted
            assert at <= planned.at
            assert max_wait is None or since + timedelta(seconds=max_wait) > NOW
            assert max_wait is None or at <= since + timedelta(seconds=max_wait)
            assert woke.state.next_probe_at == at
        case other:
            pytest.fail(f"a woken wait decided {other}")
