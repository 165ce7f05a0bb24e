"""Which turn a run commits, told from its record and its branch, across crashes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.checkpoints import (
    Reconciled,
    commit_message,
    reconcile,
    trailers,
    turn_of,
)


def test_a_turn_answered_after_the_last_checkpoint_is_committed() -> None:
    assert reconcile(recorded=2, on_branch=2, answered=3) == Reconciled(settled=2, commit=3)


def test_a_commit_the_record_missed_is_adopted_not_made_again() -> None:
    # Killed after git commit, before the record said so.
    assert reconcile(recorded=2, on_branch=3, answered=3) == Reconciled(settled=3, commit=None)


def test_a_branch_behind_the_record_takes_nothing_back() -> None:
    # Turn 3 changed nothing: no commit names it, and it is not committed later.
    assert reconcile(recorded=3, on_branch=2, answered=3) == Reconciled(settled=3, commit=None)


def test_nothing_answered_commits_nothing() -> None:
    assert reconcile(recorded=0, on_branch=0, answered=0) == Reconciled(settled=0, commit=None)


def test_a_negative_turn_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        reconcile(recorded=-1, on_branch=0, answered=0)
    with pytest.raises(ValueError, match="negative"):
        Reconciled(settled=-1, commit=None)
    with pytest.raises(ValueError, match="never committed again"):
        Reconciled(settled=3, commit=3)


turns = st.integers(min_value=0, max_value=50)


@given(recorded=turns, on_branch=turns, answered=turns)
def test_no_turn_is_committed_twice_and_none_answered_is_left_out(
    recorded: int, on_branch: int, answered: int
) -> None:
    done = reconcile(recorded=recorded, on_branch=on_branch, answered=answered)
    # Never a turn the record or the branch already holds.
    assert done.settled == max(recorded, on_branch)
    if done.commit is not None:
        assert done.commit == answered > max(recorded, on_branch)
    # An answered turn beyond both is committed now.
    assert (done.commit is None) == (answered <= max(recorded, on_branch))
    # Reconciling again once the commit is recorded does nothing more.
    after = done.commit if done.commit is not None else done.settled
    again = reconcile(recorded=after, on_branch=after, answered=answered)
    assert again.commit is None


def test_trailers_name_the_run_the_turn_the_cost_and_each_check() -> None:
    said = trailers("r1", 3, 0.01234, (("make test", True), ("ruff check .", False)))
    assert said == (
        ("Claudeloop-Run", "r1"),
        ("Claudeloop-Turn", "3"),
        ("Claudeloop-Cost", "$0.0123"),
        ("Claudeloop-Check", "passed make test"),
        ("Claudeloop-Check", "failed ruff check ."),
    )


def test_a_trailer_that_is_no_number_names_no_turn() -> None:
    assert turn_of(" 12 ") == 12
    assert turn_of("twelve") == 0


def test_the_message_is_the_summary_then_the_trailers() -> None:
    said = trailers("r1", 1, 0.0)
    assert commit_message("Added step1.txt", 1, said) == (
        "Added step1.txt\n\nClaudeloop-Run: r1\nClaudeloop-Turn: 1\nClaudeloop-Cost: $0.0000\n"
    )
    long = commit_message("Did two things.\nFirst this,\nthen that.", 2, said)
    assert long.startswith("Did two things.\n\nDid two things.\nFirst this,\nthen that.\n\n")
    assert commit_message("  ", 4, (("Claudeloop-Check", "passed a\nb"),)) == (
        "claudeloop turn 4\n\nClaudeloop-Check: passed a b\n"
    )
