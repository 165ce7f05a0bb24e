"""Budget caps and the immutable ledger of what a run spent."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claudeloop.domain.budget import (
    Budget,
    BudgetLedger,
    ReachedCap,
    in_flight_estimate,
    money,
)
from tests.examples import examples


def test_none_means_no_cap() -> None:
    ledger = BudgetLedger(Budget(), turns=10**6, attempts=10**6, dollars=1e9)
    assert not ledger.turns_exhausted
    assert not ledger.dollars_exhausted
    assert not ledger.attempts_exhausted
    assert not ledger.any_exhausted
    assert ledger.exhausted_caps() == ()


@pytest.mark.parametrize("field", ["max_turns", "max_dollars", "max_attempts"])
@pytest.mark.parametrize("cap", [0, -1, -0.5, math.nan, math.inf, -math.inf])
def test_zero_negative_and_non_finite_caps_are_refused(field: str, cap: float) -> None:
    with pytest.raises(ValueError, match=field):
        Budget(**{field: cap})  # type: ignore[arg-type]


def test_positive_caps_are_kept() -> None:
    budget = Budget(max_turns=5, max_dollars=2.5, max_attempts=9)
    assert (budget.max_turns, budget.max_dollars, budget.max_attempts) == (5, 2.5, 9)


@pytest.mark.parametrize(
    ("field", "value"), [("turns", -1), ("attempts", -1), ("dollars", -0.01), ("dollars", math.nan)]
)
def test_a_ledger_never_holds_negative_or_unknown_spend(field: str, value: float) -> None:
    with pytest.raises(ValueError, match="negative"):
        BudgetLedger(**{field: value})  # type: ignore[arg-type]


def test_spend_turn_returns_a_new_ledger_and_leaves_the_old_unchanged() -> None:
    before = BudgetLedger(Budget(max_turns=3))
    after = before.spend_turn(0.25)
    assert after is not before
    assert (before.turns, before.attempts, before.dollars) == (0, 0, 0.0)
    assert (after.turns, after.attempts, after.dollars) == (1, 1, 0.25)
    assert after.budget == before.budget


def test_spend_attempt_counts_an_attempt_but_not_a_turn() -> None:
    before = BudgetLedger()
    after = before.spend_attempt(0.1)
    assert (before.turns, before.attempts, before.dollars) == (0, 0, 0.0)
    assert (after.turns, after.attempts, after.dollars) == (0, 1, 0.1)


def test_spend_probe_counts_only_its_cost() -> None:
    before = BudgetLedger(turns=2, attempts=3, dollars=1.0)
    after = before.spend_probe(0.5)
    assert (before.turns, before.attempts, before.dollars) == (2, 3, 1.0)
    assert (after.turns, after.attempts, after.dollars) == (2, 3, 1.5)
    assert (after.probe_dollars, after.turn_dollars) == (0.5, 1.0)


def test_turns_and_probes_spend_add_up_to_the_total() -> None:
    ledger = BudgetLedger().spend_turn(0.0016).spend_attempt(0.0016).spend_probe(0.0008)
    ledger = ledger.spend_turn(0.0016)
    assert ledger.probe_dollars == 0.0008
    assert ledger.turn_dollars == pytest.approx(0.0048)
    assert ledger.turn_dollars + ledger.probe_dollars == pytest.approx(ledger.dollars)


@pytest.mark.parametrize("probes", [-0.01, 0.5])
def test_the_spend_on_probes_is_a_part_of_the_spend(probes: float) -> None:
    with pytest.raises(ValueError, match="probes is a part"):
        BudgetLedger(dollars=0.25, probe_dollars=probes)


def test_ledgers_are_frozen() -> None:
    ledger = BudgetLedger()
    with pytest.raises(dataclasses.FrozenInstanceError):
        ledger.turns = 5  # type: ignore[misc]


@pytest.mark.parametrize("cost", [-1.0, -math.inf, math.nan])
def test_negative_and_unknown_costs_count_as_nothing(cost: float) -> None:
    ledger = BudgetLedger(Budget(max_dollars=1.0)).spend_turn(cost).spend_attempt(cost)
    assert ledger.dollars == 0.0
    assert ledger.spend_probe(cost).dollars == 0.0


def test_an_unknown_cost_does_not_stop_the_dollar_cap_from_tripping() -> None:
    ledger = BudgetLedger(Budget(max_dollars=1.0)).spend_turn(math.nan).spend_turn(1.5)
    assert ledger.dollars_exhausted


@pytest.mark.parametrize(
    ("ledger", "caps"),
    [
        (BudgetLedger(Budget(max_turns=2), turns=2, attempts=2), ("max-turns",)),
        (BudgetLedger(Budget(max_turns=2), turns=1, attempts=1), ()),
        (BudgetLedger(Budget(max_dollars=1.0), dollars=1.0), ("max-dollars",)),
        (BudgetLedger(Budget(max_dollars=1.0), dollars=0.99), ()),
        (BudgetLedger(Budget(max_attempts=4), attempts=4), ("max-attempts",)),
        (BudgetLedger(Budget(max_attempts=4), attempts=3), ()),
        (
            BudgetLedger(Budget(3, 1.0, 3), turns=3, attempts=3, dollars=2.0),
            ("max-turns", "max-dollars", "max-attempts"),
        ),
    ],
)
def test_any_exhausted_and_exhausted_caps(ledger: BudgetLedger, caps: tuple[str, ...]) -> None:
    assert ledger.exhausted_caps() == caps
    assert ledger.any_exhausted is bool(caps)


def test_each_cap_reached_is_told_with_its_value_what_was_spent_and_as_much_once_more() -> None:
    ledger = BudgetLedger(Budget(2, 0.5, 9), turns=2, attempts=3, dollars=0.6)
    assert ledger.reached_caps() == (
        ReachedCap("max-turns", 2, 2),
        ReachedCap("max-dollars", 0.5, 0.6),
    )
    assert [reached.once_more for reached in ledger.reached_caps()] == [4, pytest.approx(1.1)]


caps = st.none() | st.integers(min_value=1, max_value=20)
dollar_caps = st.none() | st.floats(min_value=0.01, max_value=20.0)
spends = st.lists(
    st.tuples(
        st.sampled_from(["turn", "attempt", "probe"]),
        st.floats(min_value=-5.0, max_value=5.0, allow_nan=False),
    ),
    max_size=30,
)


@settings(max_examples=examples(200))
@given(max_turns=caps, max_dollars=dollar_caps, max_attempts=caps, history=spends)
def test_the_ledger_adds_up_and_any_exhausted_is_any_cap_reached(
    max_turns: int | None,
    max_dollars: float | None,
    max_attempts: int | None,
    history: list[tuple[str, float]],
) -> None:
    ledger = BudgetLedger(Budget(max_turns, max_dollars, max_attempts))
    previous = ledger
    for kind, cost in history:
        if kind == "turn":
            ledger = ledger.spend_turn(cost)
        elif kind == "attempt":
            ledger = ledger.spend_attempt(cost)
        else:
            ledger = ledger.spend_probe(cost)
        assert ledger.dollars >= previous.dollars
        previous = ledger
    turns = sum(kind == "turn" for kind, _ in history)
    attempts = sum(kind != "probe" for kind, _ in history)
    assert ledger.turns == turns
    assert ledger.attempts == attempts
    assert ledger.dollars == pytest.approx(sum(max(cost, 0.0) for _, cost in history))
    probed = sum(max(cost, 0.0) for kind, cost in history if kind == "probe")
    assert ledger.probe_dollars == pytest.approx(probed)
    assert 0 <= ledger.probe_dollars <= ledger.dollars
    expected = (
        (max_turns is not None and turns >= max_turns)
        or (max_dollars is not None and ledger.dollars >= max_dollars)
        or (max_attempts is not None and attempts >= max_attempts)
    )
    assert ledger.any_exhausted is expected
    assert bool(ledger.exhausted_caps()) is expected


def test_an_estimated_cost_counts_against_the_cap_and_is_kept_apart() -> None:
    ledger = BudgetLedger(Budget(max_dollars=0.005)).spend_turn(0.004)
    ledger = ledger.spend_turn(0.0012, estimated_usd=0.0004)
    assert ledger.dollars == pytest.approx(0.0052)
    assert ledger.estimated_dollars == pytest.approx(0.0004)
    assert ledger.dollars_exhausted  # 0.0048 exact would not have reached it
    refused = ledger.spend_attempt(0.0, estimated_usd=0.0008)
    assert refused.estimated_dollars == ledger.estimated_dollars  # no more than it cost


def test_an_estimate_is_never_more_than_the_spend_it_is_part_of() -> None:
    with pytest.raises(ValueError, match="part of its spend"):
        BudgetLedger(dollars=0.001, estimated_dollars=0.002)
    with pytest.raises(ValueError, match="part of its spend"):
        BudgetLedger(dollars=0.001, estimated_dollars=-0.001)


def test_a_request_in_flight_is_priced_like_the_last_one_answered_before_it() -> None:
    assert in_flight_estimate(1, before=0.0008, after=0.0012) == 0.0008
    assert in_flight_estimate(2, before=0.0008, after=None) == 0.0016


def test_a_request_in_flight_first_in_its_session_is_priced_like_the_one_after_it() -> None:
    assert in_flight_estimate(1, before=None, after=0.0012) == 0.0012


def test_no_request_in_flight_or_none_to_go_by_is_estimated_at_nothing() -> None:
    assert in_flight_estimate(0, before=0.0008, after=0.0012) == 0.0
    assert in_flight_estimate(1, before=None, after=None) == 0.0
    assert in_flight_estimate(1, before=math.nan, after=None) == 0.0


@given(
    history=st.lists(
        st.tuples(
            st.sampled_from(["turn", "attempt", "probe"]),
            st.floats(min_value=-1.0, max_value=5.0, allow_nan=False),
            st.floats(min_value=-1.0, max_value=5.0, allow_nan=False),
        ),
        max_size=30,
    )
)
def test_the_estimated_spend_is_always_a_part_of_the_spend(
    history: list[tuple[str, float, float]],
) -> None:
    ledger = BudgetLedger()
    for kind, cost, estimated in history:
        if kind == "turn":
            ledger = ledger.spend_turn(cost, estimated_usd=estimated)
        elif kind == "attempt":
            ledger = ledger.spend_attempt(cost, estimated_usd=estimated)
        else:
            ledger = ledger.spend_probe(cost, estimated_usd=estimated)
        assert 0 <= ledger.estimated_dollars <= ledger.dollars


def test_a_ledger_with_no_count_lower_and_one_higher_is_ahead() -> None:
    start = BudgetLedger(turns=1, attempts=2, dollars=0.5)
    assert BudgetLedger(turns=2, attempts=3, dollars=0.75).is_ahead_of(start)
    assert BudgetLedger(turns=1, attempts=2, dollars=0.6).is_ahead_of(start)  # a probe
    assert not start.is_ahead_of(start)
    assert not BudgetLedger(turns=2, attempts=3, dollars=0.25).is_ahead_of(start)  # mixed
    assert not start.is_ahead_of(BudgetLedger(turns=2, attempts=3, dollars=0.75))
    capped = BudgetLedger(Budget(max_turns=9), turns=1, attempts=2, dollars=0.5)
    assert not capped.is_ahead_of(start)  # the caps are no count


@settings(max_examples=examples(200))
@given(history=spends)
def test_no_spend_ever_lowers_a_count_so_a_later_ledger_is_never_behind(
    history: list[tuple[str, float]],
) -> None:
    """What makes the ledger tell which of two records of one run is the newer: each
    ledger of a run's life is the one before it or ahead of it, never behind any
    earlier one."""
    ledgers = [BudgetLedger()]
    for kind, cost in history:
        last = ledgers[-1]
        if kind == "turn":
            spent = last.spend_turn(cost)
        elif kind == "attempt":
            spent = last.spend_attempt(cost)
        else:
            spent = last.spend_probe(cost)
        assert spent == last or spent.is_ahead_of(last)
        ledgers.append(spent)
    for index, earlier in enumerate(ledgers):
        assert not any(earlier.is_ahead_of(later) for later in ledgers[index:])


@pytest.mark.parametrize(
    ("dollars", "said"),
    [
        (0.0, "$0.00"),
        (0.0048, "$0.0048"),
        (0.0056, "$0.0056"),
        # Never three decimals: $0.0040 beside $0.0056, not $0.004.
        (0.004, "$0.0040"),
        (0.42, "$0.42"),
        (0.00004, "$0.00"),
        (1.0, "$1.00"),
        (1234.5, "$1,234.50"),
    ],
)
def test_spend_reads_the_same_everywhere(dollars: float, said: str) -> None:
    # Below a dollar, cents would say $0.00 for a night of cheap turns.
    assert money(dollars) == said
