"""The stagnation brake: turns without evidence of progress, or one failure repeated, stop
the run; a turn a limit refused is no turn for the count."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.stagnation import (
    Answered,
    NoBrake,
    Refused,
    SameFailure,
    Stagnation,
    StagnationSettings,
    Stalled,
    TurnSeen,
)
from claudeloop.domain.verification import ChecksPassed, FailureSignature, Verification

DEFAULTS = StagnationSettings()
TESTS_FAIL = FailureSignature(
    command="make test", exit_code=1, timed_out=False, output="FAILED test_eof"
)
LINT_FAILS = FailureSignature(command="ruff check .", exit_code=1, timed_out=False, output="E501")


def idle(
    start: Stagnation, turns: int, remaining_work: tuple[str, ...] = ("the body",)
) -> Stagnation:
    """`turns` turns that leave everything as it was (the remaining work `start` began
    with: it keeps only fingerprints of it)."""
    state = start
    for _ in range(turns):
        state = state.observe(
            Answered(
                checked_items=state.checked_items,
                tree=state.tree,
                remaining_work=remaining_work,
            )
        )
    return state


# Settings ------------------------------------------------------------------------------


def test_the_defaults_are_three_and_three() -> None:
    assert (DEFAULTS.stall_turns, DEFAULTS.same_failure) == (3, 3)


@pytest.mark.parametrize(
    ("fields", "name"),
    [
        ({"stall_turns": -1}, "stall_turns"),
        ({"same_failure": -2}, "same_failure"),
        ({"stall_turns": 1.5}, "stall_turns"),
        ({"same_failure": True}, "same_failure"),
    ],
)
def test_bad_settings_are_refused_in_one_line_naming_the_setting(
    fields: dict[str, object], name: str
) -> None:
    with pytest.raises(ValueError, match=name) as error:
        StagnationSettings(**fields)  # type: ignore[arg-type]
    assert "\n" not in str(error.value)


def test_a_count_is_never_negative_and_a_repeat_names_its_failure() -> None:
    with pytest.raises(ValueError, match="negative"):
        Stagnation(turns_without_progress=-1)
    with pytest.raises(ValueError, match="negative"):
        Stagnation(same_failure_rounds=-1)
    with pytest.raises(ValueError, match="failure it repeats"):
        Stagnation(same_failure_rounds=2, verification=ChecksPassed())


# Evidence ------------------------------------------------------------------------------

START = Stagnation.start(
    checked_items=frozenset({"parse the header"}), tree="tree-1", remaining_work=("the body",)
)
SAME = Answered(
    checked_items=frozenset({"parse the header"}), tree="tree-1", remaining_work=("the body",)
)


def test_three_turns_that_change_nothing_stop_the_run() -> None:
    assert idle(START, 2).brake(DEFAULTS) == NoBrake()
    assert idle(START, 3).brake(DEFAULTS) == Stalled(3)


@pytest.mark.parametrize(
    "turn",
    [
        Answered(
            checked_items=frozenset({"parse the header", "the body"}),
            tree="tree-1",
            remaining_work=("the body",),
        ),
        Answered(checked_items=SAME.checked_items, tree="tree-2", remaining_work=("the body",)),
        Answered(checked_items=SAME.checked_items, tree="tree-1", remaining_work=("the footer",)),
        Answered(checked_items=SAME.checked_items, tree="tree-1", remaining_work=()),
    ],
    ids=["a plan item checked", "the working tree changed", "other remaining work", "none left"],
)
def test_each_kind_of_evidence_resets_the_count(turn: Answered) -> None:
    stalled = idle(START, 2)
    assert stalled.turns_without_progress == 2
    assert stalled.evidence(turn)
    assert stalled.observe(turn).turns_without_progress == 0


def test_the_brake_keeps_no_word_of_the_remaining_work() -> None:
    # state.json keeps it: a secret the model copied into its remaining work stays out.
    state = Stagnation.start(remaining_work=("Rotate the token s3cret-value",))
    (kept,) = state.remaining_work
    assert "s3cret" not in kept
    assert not state.evidence(Answered(remaining_work=("rotate the token s3cret-value.",)))
    assert state.evidence(Answered(remaining_work=("rotate the token other-value",)))


def test_rewording_or_reordering_the_remaining_work_is_no_progress() -> None:
    state = Stagnation.start(remaining_work=("Write the tests.", "the docs"))
    assert not state.evidence(Answered(remaining_work=("The docs", "**write the tests**")))


def test_an_unchecked_item_or_an_unknown_tree_is_no_progress() -> None:
    assert not START.evidence(
        Answered(checked_items=frozenset(), tree=None, remaining_work=("the body",))
    )
    # The tree becomes known: nothing to compare with yet, and later turns compare with it.
    unknown = Stagnation.start()
    assert not unknown.evidence(Answered(tree="tree-1"))
    assert unknown.observe(Answered(tree="tree-1")).tree == "tree-1"
    assert START.observe(Answered(tree=None, remaining_work=("the body",))).tree == "tree-1"


def test_a_different_verification_result_is_progress() -> None:
    failing = START.observe(replace(SAME, verification=TESTS_FAIL))
    assert failing.turns_without_progress == 1  # the first round has nothing to compare with
    assert failing.evidence(replace(SAME, verification=LINT_FAILS))
    assert failing.evidence(replace(SAME, verification=ChecksPassed()))
    assert not failing.evidence(replace(SAME, verification=TESTS_FAIL))
    # A turn without checks is compared with the last round that ran.
    later = failing.observe(SAME)
    assert later.verification == TESTS_FAIL
    assert later.evidence(replace(SAME, verification=ChecksPassed()))


def test_a_refused_turn_is_no_turn() -> None:
    stalled = idle(START, 2)
    assert stalled.observe(Refused()) == stalled
    assert stalled.observe(Refused()).observe(Refused()).brake(DEFAULTS) == NoBrake()


def test_zero_turns_the_stall_brake_off() -> None:
    assert idle(START, 50).brake(StagnationSettings(stall_turns=0)) == NoBrake()


# The same failure ----------------------------------------------------------------------


def rounds(state: Stagnation, *verifications: Verification | None) -> Stagnation:
    for verification in verifications:
        state = state.observe(Answered(tree="changes every turn", verification=verification))
        state = state.observe(Answered(tree="and again", verification=None))
    return state


def test_the_same_failure_three_rounds_in_a_row_stops_naming_it() -> None:
    # The tree changes every turn: the work goes on, the failure does not move.
    state = rounds(Stagnation(), TESTS_FAIL, TESTS_FAIL)
    assert state.brake(DEFAULTS) == NoBrake()
    state = rounds(state, TESTS_FAIL)
    assert state.turns_without_progress == 0
    assert state.brake(DEFAULTS) == SameFailure(TESTS_FAIL, 3)


def test_another_failure_or_a_pass_breaks_the_row() -> None:
    assert rounds(Stagnation(), TESTS_FAIL, TESTS_FAIL, LINT_FAILS).same_failure_rounds == 1
    assert rounds(Stagnation(), TESTS_FAIL, TESTS_FAIL, ChecksPassed()).same_failure_rounds == 0
    assert rounds(Stagnation(), TESTS_FAIL, ChecksPassed(), TESTS_FAIL).same_failure_rounds == 1


def test_a_repeated_failure_is_named_before_a_plain_stall() -> None:
    state = Stagnation.start(tree="t")
    for _ in range(3):
        state = state.observe(Answered(tree="t", verification=TESTS_FAIL))
    assert state.brake(DEFAULTS) == SameFailure(TESTS_FAIL, 3)
    assert state.brake(StagnationSettings(same_failure=0)) == Stalled(3)


# Properties ----------------------------------------------------------------------------

_ITEMS = st.frozensets(st.sampled_from(["a", "b", "c", "d"]))
_VERIFICATIONS = st.one_of(
    st.none(), st.just(ChecksPassed()), st.sampled_from([TESTS_FAIL, LINT_FAILS])
)
_ANSWERED = st.builds(
    Answered,
    checked_items=_ITEMS,
    tree=st.one_of(st.none(), st.sampled_from(["t1", "t2"])),
    remaining_work=st.lists(st.sampled_from(["x", "y", "Y."]), max_size=2).map(tuple),
    verification=_VERIFICATIONS,
)
_TURNS: st.SearchStrategy[TurnSeen] = st.one_of(_ANSWERED, st.just(Refused()))
_SETTINGS = st.builds(
    StagnationSettings, stall_turns=st.integers(0, 5), same_failure=st.integers(0, 5)
)


@given(turns=st.lists(_TURNS, max_size=30))
def test_any_evidence_resets_the_count(turns: list[TurnSeen]) -> None:
    state = Stagnation()
    for turn in turns:
        after = state.observe(turn)
        if isinstance(turn, Answered) and state.evidence(turn):
            assert after.turns_without_progress == 0
        elif isinstance(turn, Answered):
            assert after.turns_without_progress == state.turns_without_progress + 1
        state = after


@given(turns=st.lists(_TURNS, max_size=30), settings=_SETTINGS)
def test_the_stall_brake_never_fires_before_n_evidence_free_counted_turns(
    turns: list[TurnSeen], settings: StagnationSettings
) -> None:
    state = Stagnation()
    evidence_free_in_a_row = 0
    for turn in turns:
        if isinstance(turn, Answered):
            evidence_free_in_a_row = 0 if state.evidence(turn) else evidence_free_in_a_row + 1
        state = state.observe(turn)
        if isinstance(state.brake(settings), Stalled):
            assert settings.stall_turns > 0
            assert evidence_free_in_a_row >= settings.stall_turns


@given(turns=st.lists(_TURNS, max_size=30), settings=_SETTINGS)
def test_a_repeated_failure_brake_names_a_failure_seen_that_many_rounds(
    turns: list[TurnSeen], settings: StagnationSettings
) -> None:
    state = Stagnation()
    seen: list[Verification] = []
    for turn in turns:
        if isinstance(turn, Answered) and turn.verification is not None:
            seen.append(turn.verification)
        state = state.observe(turn)
        brake = state.brake(settings)
        if isinstance(brake, SameFailure):
            assert settings.same_failure > 0
            assert brake.rounds >= settings.same_failure
            assert seen[-brake.rounds :] == [brake.failure] * brake.rounds


@given(before=st.lists(_TURNS, max_size=15), refused=st.integers(1, 5), after=_ANSWERED)
def test_refused_turns_never_change_the_count(
    before: list[TurnSeen], refused: int, after: Answered
) -> None:
    state = Stagnation()
    for turn in before:
        state = state.observe(turn)
    with_refusals = state
    for _ in range(refused):
        with_refusals = with_refusals.observe(Refused())
    assert with_refusals == state
    assert with_refusals.observe(after) == state.observe(after)


def test_a_commit_rebases_the_tree_the_next_turn_is_compared_with() -> None:
    start = Stagnation.start(tree="before")
    after_turn = start.observe(Answered(tree="edited"))
    assert after_turn.turns_without_progress == 0  # the edit was the turn's evidence
    committed = after_turn.rebased("committed")
    # The next turn that changes nothing finds the committed tree: no progress.
    assert committed.observe(Answered(tree="committed")).turns_without_progress == 1
    assert committed.rebased(None).tree == "committed"
