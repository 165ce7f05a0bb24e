"""`run --prompt-file PATH` and `run --prompt -`: a task longer than the command line
allows is read whole, and every way it can be missing ends in one line, exit 2."""

from __future__ import annotations

import io
import os
import resource
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from claudeloop.adapters.plan_file import PlanFileOnDisk
from claudeloop.cli.prompt_source import task_prompt
from tests.cli.conftest import Invocation
from tests.cli.test_user_errors import assert_one_line_error

Invoke = Callable[..., Invocation]
# Past the kernel's 128 KiB cap on one argument: only a file or stdin can carry it.
# The documented limit on a task (docs/guides/troubleshooting.md): 1 MiB.
TASK_LIMIT_BYTES = 1024 * 1024
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


def _claudeloop_process(tmp_path: Path, *args: str | Path, stdin: int | None = None) -> Invocation:
    """claudeloop in a process of its own with its memory capped at 2 GiB: what hangs or
    reads without end fails this test in seconds instead of taking the machine with it."""

    def cap_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    env = {
        **os.environ,
        "CLAUDELOOP_CONFIG_DIR": str(tmp_path / "user-config"),
        "CLAUDELOOP_STATE_DIR": str(tmp_path / "state"),
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
    }
    done = subprocess.run(
        [sys.executable, "-m", "claudeloop", *(str(arg) for arg in args), "--cwd", str(tmp_path)],
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        preexec_fn=cap_memory,
        check=False,
    )
    return Invocation(done.returncode, done.stdout, done.stderr)


@pytest.mark.slow
@pytest.mark.parametrize("option", [(), ("--prompt-file",)], ids=["plan", "prompt-file"])
def test_a_named_pipe_as_the_task_is_refused_without_waiting_for_a_writer(
    tmp_path: Path, option: tuple[str, ...]
) -> None:
    fifo = tmp_path / "PLAN.md"
    os.mkfifo(fifo)
    result = _claudeloop_process(tmp_path, "run", *option, fifo)
    assert_one_line_error(result, str(fifo), "is not a regular file but a named pipe")
    assert not (tmp_path / ".claudeloop").exists()


@pytest.mark.slow
@pytest.mark.parametrize("option", [(), ("--prompt-file",)], ids=["plan", "prompt-file"])
def test_a_device_as_the_task_is_refused_rather_than_read_without_end(
    tmp_path: Path, option: tuple[str, ...]
) -> None:
    result = _claudeloop_process(tmp_path, "run", *option, "/dev/zero")
    assert_one_line_error(result, "/dev/zero", "is not a regular file but a device")


@pytest.mark.slow
def test_endless_standard_input_is_cut_at_the_task_limit(tmp_path: Path) -> None:
    with open("/dev/zero", "rb") as endless:
        result = _claudeloop_process(tmp_path, "run", "--prompt", "-", stdin=endless.fileno())
    assert_one_line_error(result, "--prompt -", "over 1,048,576 bytes", "at most 1 MiB")


@pytest.mark.parametrize("option", [(), ("--prompt-file",)], ids=["plan", "prompt-file"])
def test_a_task_file_over_the_limit_says_the_limit(
    claudeloop: Invoke, tmp_path: Path, option: tuple[str, ...]
) -> None:
    plan = tmp_path / "PLAN.md"
    plan.write_text("- [ ] one\n" + "x" * TASK_LIMIT_BYTES)
    result = claudeloop("run", *option, plan, "--cwd", tmp_path)
    assert_one_line_error(
        result, str(plan), f"is {TASK_LIMIT_BYTES + 10:,} bytes", "at most 1 MiB (1,048,576 bytes)"
    )
    assert not (tmp_path / ".claudeloop").exists()


def test_a_task_file_at_the_limit_is_read(tmp_path: Path) -> None:
    text = "Do it.\n" + "x" * (TASK_LIMIT_BYTES - 7)
    (tmp_path / "TASK.md").write_text(text)
    assert task_prompt(None, Path("TASK.md"), cwd=tmp_path) == text


def test_a_plan_replaced_by_a_named_pipe_mid_run_keeps_the_plan_the_run_knows(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "PLAN.md")
    read: list[object] = []
    # In a thread: a read that waits for a writer would otherwise hold the test forever.
    reader = threading.Thread(
        target=lambda: read.append(PlanFileOnDisk().read(tmp_path / "PLAN.md")), daemon=True
    )
    reader.start()
    reader.join(timeout=30)
    assert read == [None]
