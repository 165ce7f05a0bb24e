"""Verification commands as real processes: exit codes, timeouts that end the whole
group, commands that cannot start, the output on disk and its end in memory."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

from claudeloop.adapters.check_groups import gated, note_group
from claudeloop.adapters.redaction import MASK, Redactor
from claudeloop.adapters.verification_commands import VerificationCommands
from claudeloop.application.ports import Checks
from claudeloop.domain.verification import CheckCommand, CheckResult

T = TypeVar("T")


def run(coroutine: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        with anyio.fail_after(30):  # a hung process fails the test instead of the suite
            return await coroutine()

    return anyio.run(bounded)


def check(tmp_path: Path, text: str, **options: object) -> CheckResult:
    commands = VerificationCommands(tmp_path, **options)  # type: ignore[arg-type]
    output = tmp_path / "verify" / "check-1.log"
    return run(lambda: commands.run(CheckCommand.parse(text), output=output))


def python(code: str) -> str:
    return f"{sys.executable} -c '{code}'"


def running(pid: int) -> bool:
    """Whether the process still runs (a zombie waiting to be reaped does not)."""
    if Path("/proc/self").exists():
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        return state != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def alive(pid: int) -> bool:
    """Whether the process survived; a signal already sent takes the kernel a moment."""
    for _ in range(200):
        if not running(pid):
            return False
        time.sleep(0.01)
    return True


def live_in_group(group: int) -> list[int]:
    """The processes of `group` that still run (in a container nothing may reap an
    orphan, and a zombie runs nothing)."""
    alive = []
    for path in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = path.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended while being read
        if int(fields[2]) == group and fields[0] != "Z":
            alive.append(int(path.parent.name))
    return alive


def once_running(group: int, count: int) -> list[int]:
    """The live processes of `group` once `count` run, or after a while (on a loaded
    machine a shell takes a moment to start its children)."""
    for _ in range(300):
        live = live_in_group(group)
        if len(live) >= count:
            return live
        time.sleep(0.1)
    return live_in_group(group)


def until_gone(group: int) -> list[int]:
    """What is left of `group` once it is gone, or after a while (a kill takes the
    kernel a moment, a watchdog a moment more to start on a loaded machine)."""
    for _ in range(300):
        left = live_in_group(group)
        if not left:
            return left
        time.sleep(0.1)
    return live_in_group(group)


def test_the_adapter_is_the_checks_port(tmp_path: Path) -> None:
    commands: Checks = VerificationCommands(tmp_path)
    assert commands is not None


def test_a_passing_command(tmp_path: Path) -> None:
    result = check(tmp_path, "true")
    assert result.passed
    assert result.exit_code == 0
    assert result.output_path == tmp_path / "verify" / "check-1.log"
    assert result.seconds >= 0


def test_a_failing_command_gives_its_exit_code_and_both_streams(tmp_path: Path) -> None:
    result = check(tmp_path, "sh -c 'echo collected 3; echo 1 failed >&2; exit 3'")
    assert not result.passed
    assert result.exit_code == 3
    assert result.output_tail == "collected 3\n1 failed\n"
    assert (tmp_path / "verify" / "check-1.log").read_text() == "collected 3\n1 failed\n"


def test_the_command_runs_in_the_cwd_without_a_shell(tmp_path: Path) -> None:
    result = check(tmp_path, "echo $HOME `pwd` && exit 1")
    assert result.passed
    assert result.output_tail == "$HOME `pwd` && exit 1\n"
    assert check(tmp_path, "pwd").output_tail == f"{tmp_path}\n"


def test_a_command_killed_by_a_signal_fails(tmp_path: Path) -> None:
    result = check(tmp_path, "sh -c 'kill -9 $$'")
    assert not result.passed
    assert result.exit_code == -9


def test_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    script = "sleep 60 & echo $! > child.pid; echo started; sleep 60"
    result = check(tmp_path, f"sh -c '{script}'", timeout_seconds=0.5, kill_grace_seconds=0.5)
    assert result.timed_out
    assert result.exit_code is None
    assert not result.passed
    assert result.output_tail == "started\n"
    assert not alive(int((tmp_path / "child.pid").read_text()))


def test_a_group_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    script = 'trap "" TERM; sleep 60 & echo $! > child.pid; sleep 60; sleep 60'
    result = check(tmp_path, f"sh -c '{script}'", timeout_seconds=0.5, kill_grace_seconds=0.2)
    assert result.timed_out
    assert not alive(int((tmp_path / "child.pid").read_text()))


def test_what_a_finished_command_left_running_is_ended(tmp_path: Path) -> None:
    result = check(tmp_path, "sh -c 'sleep 60 & echo $! > child.pid; echo done'")
    assert result.passed
    assert result.output_tail == "done\n"
    assert not alive(int((tmp_path / "child.pid").read_text()))


def test_cancelling_a_check_kills_its_group(tmp_path: Path) -> None:
    commands = VerificationCommands(tmp_path, kill_grace_seconds=0.5)
    pid_file = tmp_path / "child.pid"
    command = CheckCommand.parse("sh -c 'sleep 60 & echo $! > child.pid; sleep 60'")

    async def stop_midway() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: commands.run(command, output=tmp_path / "out.log"))
            while not pid_file.exists() or not pid_file.read_text().strip():
                await anyio.sleep(0.02)
            group.cancel_scope.cancel()

    run(stop_midway)
    assert not alive(int(pid_file.read_text()))


def test_a_command_that_does_not_exist_is_a_failed_check(tmp_path: Path) -> None:
    result = check(tmp_path, "no-such-verifier --all")
    assert not result.passed
    assert result.exit_code is None
    assert result.start_error is not None
    assert "No such file or directory" in result.start_error
    assert "no-such-verifier" in result.start_error
    assert "no-such-verifier" in (tmp_path / "verify" / "check-1.log").read_text()


def test_a_file_that_is_not_executable_is_a_failed_check(tmp_path: Path) -> None:
    (tmp_path / "check.sh").write_text("#!/bin/sh\nexit 0\n")
    result = check(tmp_path, "./check.sh")
    assert not result.passed
    assert result.start_error is not None
    assert "Permission denied" in result.start_error


def test_a_big_output_keeps_its_last_bytes_and_the_file_keeps_all(tmp_path: Path) -> None:
    code = 'import sys\nfor n in range(200_000): sys.stdout.write(f"line {n}\\n")'
    result = check(tmp_path, python(code), tail_bytes=1000)
    expected = "".join(f"line {n}\n" for n in range(200_000))
    assert result.passed
    assert result.output_tail.endswith("line 199998\nline 199999\n")
    assert len(result.output_tail.encode()) <= 1000
    assert result.tail_is_partial
    assert result.output_bytes == len(expected)
    assert (tmp_path / "verify" / "check-1.log").read_text() == expected


def test_a_tail_cut_inside_a_character_starts_at_the_next_whole_one(tmp_path: Path) -> None:
    result = check(tmp_path, python('print("é" * 5000, end="")'), tail_bytes=1001)
    assert result.output_tail == "é" * 500


def test_a_line_longer_than_the_line_buffer_is_written_whole(tmp_path: Path) -> None:
    result = check(tmp_path, python('print("x" * 300_000, end="")'), tail_bytes=10)
    assert result.output_tail == "x" * 10
    assert (tmp_path / "verify" / "check-1.log").read_text() == "x" * 300_000


def test_secrets_are_redacted_in_the_tail_and_the_file(tmp_path: Path) -> None:
    secret = "correct-horse-battery"
    token = "sk-ant-api03-" + "A" * 40
    redactor = Redactor((secret,))
    result = check(
        tmp_path,
        f"sh -c 'echo password={secret}; echo key {token}; exit 1'",
        redact=redactor.text,
    )
    everything = (tmp_path / "verify" / "check-1.log").read_text()
    for text in (result.output_tail, everything):
        assert secret not in text
        assert token not in text
        assert text.count(MASK) == 2


def test_the_output_file_is_private(tmp_path: Path) -> None:
    output = tmp_path / "verify" / "check-1.log"
    output.parent.mkdir()
    output.write_text("an earlier run's output\n")
    output.chmod(0o644)
    result = check(tmp_path, "echo fresh")
    assert stat.S_IMODE(output.stat().st_mode) == 0o600
    assert output.read_text() == "fresh\n"
    assert result.output_bytes == len("fresh\n")


@pytest.mark.parametrize(
    "options",
    [{"timeout_seconds": 0}, {"tail_bytes": -1}, {"kill_grace_seconds": -1}],
)
def test_settings_that_mean_nothing_are_refused(tmp_path: Path, options: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="positive timeout"):
        VerificationCommands(tmp_path, **options)  # type: ignore[arg-type]


on_linux = pytest.mark.skipif(sys.platform != "linux", reason="reads process groups in /proc")
LEFT_RUNNING = "sh -c 'echo $$ > group; sleep 300 & sleep 300'"
DRIVER = """
import sys, anyio
from pathlib import Path
from claudeloop.adapters.verification_commands import VerificationCommands
from claudeloop.domain.verification import CheckCommand
here = Path.cwd()
commands = VerificationCommands(here, note=here / "checks" / "running.json")
check = CheckCommand.parse(sys.argv[1])
anyio.run(lambda: commands.run(check, output=here / "checks" / "out.log"))
"""


def leftover(tmp_path: Path) -> int:
    """A check's group as a dead driver leaves it: a shell and two children, noted."""
    shell = subprocess.Popen(
        ["sh", "-c", "sleep 300 & sleep 300"], cwd=tmp_path, start_new_session=True
    )
    note_group(tmp_path / "checks" / "running.json", shell.pid)
    return shell.pid


def noted_group(project: Path) -> int:
    """The group the check wrote into `group` as it started, once it has."""
    group_file = project / "group"
    for _ in range(300):
        if group_file.exists() and group_file.read_text().strip():
            break
        time.sleep(0.1)
    return int(group_file.read_text())


@on_linux
def test_a_check_dies_with_its_driver_children_and_all(tmp_path: Path) -> None:
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, LEFT_RUNNING], cwd=tmp_path, start_new_session=True
    )
    group = noted_group(tmp_path)
    try:
        assert len(once_running(group, 3)) == 3  # the shell and its two sleeps
        os.killpg(driver.pid, signal.SIGKILL)  # the driver's group: its watchdog is not in it
        driver.wait(timeout=30)
        assert until_gone(group) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


@on_linux
def test_a_check_that_kills_its_driver_the_moment_it_starts_still_dies_with_it(
    tmp_path: Path,
) -> None:
    # The driver dies before it could start anything after the check: its watchdog must
    # already be there (a crash or an OOM kill can come at any instant). The check notes
    # its group first: a watchdog quicker than the shell's next line would otherwise end
    # it before the test could learn which group to watch.
    kills_its_driver = "sh -c 'echo $$ > group; kill -9 -$PPID; sleep 300 & sleep 300'"
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, kills_its_driver], cwd=tmp_path, start_new_session=True
    )
    driver.wait(timeout=60)
    group = noted_group(tmp_path)
    try:
        assert until_gone(group) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


def test_a_check_whose_driver_died_before_its_gate_opened_never_runs(tmp_path: Path) -> None:
    gate = subprocess.Popen(
        gated(["sh", "-c", "echo ran > ran"]), cwd=tmp_path, stdin=subprocess.PIPE
    )
    assert gate.stdin is not None
    gate.stdin.close()  # as the kernel closes it when the driver dies
    assert gate.wait(timeout=60) != 0
    assert not (tmp_path / "ran").exists()


def test_a_check_reads_an_empty_stdin(tmp_path: Path) -> None:
    result = check(tmp_path, "sh -c 'cat > got; echo read'")
    assert result.passed
    assert (tmp_path / "got").read_text() == ""


@on_linux
def test_the_next_check_ends_the_check_a_dead_driver_left_then_runs(tmp_path: Path) -> None:
    group = leftover(tmp_path)
    try:
        assert len(once_running(group, 3)) == 3
        note = tmp_path / "checks" / "running.json"
        result = check(tmp_path, "true", note=note)
        assert result.passed
        assert until_gone(group) == []
        assert not note.exists()  # nothing is in flight now
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


@on_linux
@pytest.mark.parametrize("tampered", ["started", "boot"])
def test_a_noted_group_that_is_no_longer_the_check_is_left_alone(
    tmp_path: Path, tampered: str
) -> None:
    # Its number given to another process since (another start time), or a reboot.
    group = leftover(tmp_path)
    note = tmp_path / "checks" / "running.json"
    record = json.loads(note.read_text())
    record[tampered] = record[tampered] - 1 if tampered == "started" else "another-boot"
    note.write_text(json.dumps(record))
    try:
        assert check(tmp_path, "true", note=note).passed
        time.sleep(0.2)
        assert len(once_running(group, 3)) == 3
        assert not note.exists()
    finally:
        os.killpg(group, signal.SIGKILL)


def test_a_note_that_cannot_be_read_is_dropped(tmp_path: Path) -> None:
    note = tmp_path / "checks" / "running.json"
    note.parent.mkdir()
    note.write_text("{not json")
    assert check(tmp_path, "true", note=note).passed
    assert not note.exists()
