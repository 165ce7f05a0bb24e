"""`run --prompt-file PATH` and `run --prompt -`: a task longer than the command line
allows is read whole, and every way it can be missing ends in one line, exit 2."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from claudeloop.cli.prompt_source import task_prompt
from tests.cli.conftest import Invocation
from tests.cli.test_user_errors import assert_one_line_error

Invoke = Callable[..., Invocation]
# Past the kernel's 128 KiB cap on one argument: only a file or stdin can carry it.
LONG_TASK = "Port every module to the new API.\n" + "x" * 250_000 + "\nTHE END OF THE TASK\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_prompt_file_is_read_whole(tmp_path: Path) -> None:
    (tmp_path / "TASK.md").write_text(LONG_TASK)
    assert task_prompt(None, Path("TASK.md"), cwd=tmp_path) == LONG_TASK


def test_prompt_dash_reads_standard_input_whole(tmp_path: Path) -> None:
    assert task_prompt("-", None, cwd=tmp_path, stdin=io.StringIO(LONG_TASK)) == LONG_TASK


def test_an_inline_prompt_is_kept_as_given(tmp_path: Path) -> None:
    assert task_prompt("Fix the tests", None, cwd=tmp_path) == "Fix the tests"


def test_a_missing_prompt_file(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("run", "--prompt-file", tmp_path / "NOPE.md", "--cwd", tmp_path)
    assert_one_line_error(result, "--prompt-file", "NOPE.md", "not found")
    assert not (tmp_path / ".claudeloop").exists()


def test_an_empty_prompt_file(claudeloop: Invoke, tmp_path: Path) -> None:
    (tmp_path / "TASK.md").write_text(" \n\n")
    result = claudeloop("run", "--prompt-file", tmp_path / "TASK.md", "--cwd", tmp_path)
    assert_one_line_error(result, "--prompt-file", "TASK.md", "is empty")


def test_a_prompt_file_that_is_a_directory(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("run", "--prompt-file", tmp_path, "--cwd", tmp_path)
    assert_one_line_error(result, "--prompt-file", "is a directory")


def test_a_prompt_file_that_is_not_text(claudeloop: Invoke, tmp_path: Path) -> None:
    (tmp_path / "task.bin").write_bytes(b"\xff\xfe\x00binary")
    result = claudeloop("run", "--prompt-file", tmp_path / "task.bin", "--cwd", tmp_path)
    assert_one_line_error(result, "--prompt-file", "task.bin", "not UTF-8")


def test_prompt_and_prompt_file_together(claudeloop: Invoke, tmp_path: Path) -> None:
    (tmp_path / "TASK.md").write_text("do it")
    result = claudeloop(
        "run", "--prompt", "x", "--prompt-file", tmp_path / "TASK.md", "--cwd", tmp_path
    )
    assert_one_line_error(result, "--prompt", "--prompt-file", "not both")


def test_a_plan_and_a_prompt_file_together(claudeloop: Invoke, tmp_path: Path) -> None:
    (tmp_path / "TASK.md").write_text("do it")
    (tmp_path / "PLAN.md").write_text("- [ ] a\n")
    result = claudeloop(
        "run", tmp_path / "PLAN.md", "--prompt-file", tmp_path / "TASK.md", "--cwd", tmp_path
    )
    assert_one_line_error(result, "PLAN", "--prompt-file")


def test_prompt_dash_on_a_terminal_says_to_pipe_it(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", Terminal())
    result = claudeloop("run", "--prompt", "-", "--cwd", tmp_path)
    assert_one_line_error(result, "--prompt -", "standard input", "--prompt-file")


def test_prompt_dash_with_empty_input(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n"))
    result = claudeloop("run", "--prompt", "-", "--cwd", tmp_path)
    assert_one_line_error(result, "--prompt -", "empty")
