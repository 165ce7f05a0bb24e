"""Input that once ended in a traceback (issue 12, item 10) ends in one line and an exit
code: durations too long to hold, a run directory that cannot be made, state.json and
events.jsonl that are not what claudeloop wrote."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Invocation
from tests.cli.test_user_errors import assert_one_line_error

Invoke = Callable[..., Invocation]

TOO_LONG = "99999999999d"


def test_a_duration_flag_too_long_to_hold(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path, "--max-wait", TOO_LONG)
    assert_one_line_error(result, "--max-wait", TOO_LONG, "90s")


def test_a_duration_variable_too_long_to_hold(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDELOOP_RESET_GRACE", TOO_LONG)
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    assert_one_line_error(result, "CLAUDELOOP_RESET_GRACE", TOO_LONG, "365 days")


@pytest.mark.parametrize("value", [f'"{TOO_LONG}"', "9" * 30])
def test_a_duration_in_the_file_too_long_to_hold(
    claudeloop: Invoke, tmp_path: Path, value: str
) -> None:
    (tmp_path / "claudeloop.toml").write_text(f"max_wait = {value}\n")
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    assert_one_line_error(result, "claudeloop.toml", "max_wait", "365 days")
