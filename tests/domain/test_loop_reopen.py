"""Reopening an ended run keeps its ledger; a done run stays done."""

import pytest

from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.loop import Outcome, Phase, RunState, reopen


def test_reopen_keeps_the_ledger_and_clears_the_outcome() -> None:
    ledger = BudgetLedger(budget=Budget(max_turns=2), turns=2, attempts=3, dollars=1.5)
    ended = RunState(
        phase=Phase.FAILED, ledger=ledger, outcome=Outcome.BUDGET_EXHAUSTED, reason="cap"
    )
    reopened = reopen(ended)
    assert reopened.phase is Phase.PREFLIGHT
    assert reopened.outcome is None
    assert reopened.ledger == ledger


def test_a_done_run_cannot_be_reopened() -> None:
    with pytest.raises(ValueError, match="done"):
        reopen(RunState(phase=Phase.COMPLETE, outcome=Outcome.DONE))
