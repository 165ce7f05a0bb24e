"""Errors a user can cause end in one line that names the culprit, with exit 2."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Invocation

Invoke = Callable[..., Invocation]


def assert_one_line_error(result: Invocation, *needles: str) -> None:
    assert result.exit_code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("claudeloop: error:")
    for needle in needles:
        assert needle in lines[0]
    assert "Traceback" not in result.err


def test_missing_plan_file(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("run", tmp_path / "NOPE.md", "--cwd", tmp_path)
    assert_one_line_error(result, "NOPE.md", "not found")


def test_empty_plan_file(claudeloop: Invoke, tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    plan.write_text("  \n")
    result = claudeloop("run", plan, "--cwd", tmp_path)
    assert_one_line_error(result, "PLAN.md", "empty")


def test_both_plan_and_prompt(claudeloop: Invoke, tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    plan.write_text("- [ ] a\n")
    result = claudeloop("run", plan, "--prompt", "x", "--cwd", tmp_path)
    assert_one_line_error(result, "PLAN", "--prompt")


def test_neither_plan_nor_prompt(claudeloop: Invoke, tmp_path: Path) -> None:
    assert_one_line_error(claudeloop("run", "--cwd", tmp_path), "PLAN", "--prompt")


@pytest.mark.parametrize("value", ["5x", "h", "-3m", "1.5h", ""])
def test_malformed_duration(claudeloop: Invoke, tmp_path: Path, value: str) -> None:
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path, "--max-wait", value)
    assert_one_line_error(result, "--max-wait", "90s")


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--max-turns", "-1"),
        ("--max-turns", "0"),
        ("--max-dollars", "-0.5"),
        ("--max-attempts", "x"),
    ],
)
def test_negative_or_zero_cap(claudeloop: Invoke, tmp_path: Path, flag: str, value: str) -> None:
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path, flag, value)
    assert_one_line_error(result, flag, "positive")


def test_cwd_that_does_not_exist(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path / "gone")
    assert_one_line_error(result, "gone", "no such directory")


def test_unknown_session_id(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("resume", "--session-id", "0000-nope", "--cwd", tmp_path)
    assert_one_line_error(result, "0000-nope")


def test_resume_with_no_run(claudeloop: Invoke, tmp_path: Path) -> None:
    assert_one_line_error(claudeloop("resume", "--cwd", tmp_path), "no claudeloop run")


def test_unknown_option(claudeloop: Invoke) -> None:
    assert_one_line_error(claudeloop("run", "--max-turn", "3"), "--max-turn")


def test_status_without_runs(claudeloop: Invoke, tmp_path: Path) -> None:
    assert_one_line_error(claudeloop("status", "--cwd", tmp_path), "no claudeloop run")
