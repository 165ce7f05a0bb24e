"""summary.md's "To continue" command is one a person can paste: after a budget cap it
raises the caps reached, or `resume` would stop again before its first turn."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

from claudeloop.application.summary import continue_command, summary_markdown
from claudeloop.domain.budget import Budget
from claudeloop.domain.loop import Outcome
from tests.application.fakes import verdict_turn
from tests.application.test_runner import drive, harness, record


def capped(budget: Budget, *, cost: float = 0.01, cwd: Path = Path("/work/my app")) -> str:
    h = harness([verdict_turn(remaining=("more",), cost=cost) for _ in range(5)])
    rec = record(budget=budget)
    final = drive(h, replace(rec, spec=replace(rec.spec, cwd=cwd)))
    assert final.state.outcome is Outcome.BUDGET_EXHAUSTED
    return continue_command(final)


def test_after_the_turn_cap_the_command_allows_as_many_turns_again() -> None:
    words = shlex.split(capped(Budget(max_turns=2)))
    assert words[:2] == ["claudeloop", "resume"]
    # The run named as `resume --help` names it, not by the older --run-id.
    assert words[2] == "run-1"
    assert "--run-id" not in words
    assert words[words.index("--max-turns") + 1] == "4"
    assert "--max-dollars" not in words


def test_after_the_dollar_cap_the_command_raises_it_above_what_was_spent() -> None:
    words = shlex.split(capped(Budget(max_dollars=0.5, max_turns=50), cost=0.3))
    # Two turns spent $0.60 against a $0.50 cap: the new cap leaves $0.50 more.
    assert words[words.index("--max-dollars") + 1] == "1.10"
    assert "--max-turns" not in words


def test_a_working_directory_with_a_space_survives_the_shell() -> None:
    words = shlex.split(capped(Budget(max_attempts=1)))
    assert words[words.index("--cwd") + 1] == "/work/my app"
    assert words[words.index("--max-attempts") + 1] == "2"


def test_summary_md_carries_the_command() -> None:
    h = harness([verdict_turn(remaining=("more",)) for _ in range(3)])
    final = drive(h, record(budget=Budget(max_turns=1)))
    summary = summary_markdown(final)
    assert "## To continue" in summary
    assert "--max-turns 2" in summary


def test_summary_json_and_status_show_each_verification_and_where_its_output_is() -> None:
    from datetime import UTC, datetime

    from claudeloop.application.summary import result_object
    from tests.application.test_runner_verification import LOGS, STEP_3, verified
    from tests.json_view import plain, status_object

    h = harness([verdict_turn(complete=True), verdict_turn(complete=True)])
    rec, _, _ = verified(h, endings={STEP_3: [1, 0]})
    final = drive(h, rec)
    summary = summary_markdown(final)
    assert "## Verification" in summary
    assert f"- `{STEP_3}` passed (0s); output in {LOGS / 'turn-2-check-1.log'}" in summary
    (shown,) = plain(result_object(final))["verification"]
    assert shown == {
        "command": STEP_3,
        "passed": True,
        "exit_code": 0,
        "seconds": 0.5,
        "timed_out": False,
        "ended": "passed",
        "output": str(LOGS / "turn-2-check-1.log"),
    }
    status = status_object(final, now=datetime.now(UTC), driver_pid=None)
    assert status["verification"] == [shown]
    assert status["turns_without_progress"] == 0


def test_the_turns_line_counts_as_the_turn_lines_number_and_says_one_probe() -> None:
    h = harness([verdict_turn(remaining=("more",)) for _ in range(3)])
    final = drive(h, record(budget=Budget(max_turns=1)))
    probed = replace(final, state=replace(final.state, probes=1))
    assert "- Turns: 1 sent, 1 answered, 0 refused; 1 probe\n" in summary_markdown(probed)
