"""What `resume` says of a run at its caps: each cap reached with its value and what was
spent, and the one command that lifts them all (tests/e2e/test_resume_at_a_cap.py drives
it end to end)."""

from __future__ import annotations

import shlex
from pathlib import Path

from claudeloop.cli.commands import at_its_caps
from claudeloop.domain.budget import Budget, BudgetLedger

RUN = "20261207-003052-d68394"


def test_every_cap_reached_is_named_and_the_command_raises_each_above_what_was_spent() -> None:
    ledger = BudgetLedger(Budget(2, 0.5, 3), turns=2, attempts=3, dollars=0.6)
    told = at_its_caps(RUN, ledger.reached_caps(), cwd=Path("/work/my app"))
    assert told.startswith(
        f"run {RUN} is at its caps (--max-turns 2, 2 turns answered; --max-dollars 0.5, "
        "$0.60 spent; --max-attempts 3, 3 prompts sent): no turn was sent. To go on, raise "
        "each above what was spent: "
    ), told
    words = shlex.split(told.split(": ", 2)[2])
    assert words == [
        "claudeloop", "resume", RUN, "--cwd", "/work/my app",
        "--max-turns", "4", "--max-dollars", "1.10", "--max-attempts", "6",
    ]  # fmt: skip


def test_one_turn_is_said_as_one() -> None:
    ledger = BudgetLedger(Budget(max_turns=1), turns=1, attempts=1)
    told = at_its_caps(RUN, ledger.reached_caps(), cwd=None)
    assert "(--max-turns 1, 1 turn answered)" in told
    assert told.endswith(f": claudeloop resume {RUN} --max-turns 2")
