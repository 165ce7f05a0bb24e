"""Input that once ended in a traceback (issue 12, item 10) ends in one line and an exit
code: durations too long to hold, a run directory that cannot be made, state.json and
events.jsonl that are not what claudeloop wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from claudeloop.adapters.run_directory.lock import acquire
from tests.cli.conftest import Invocation
from tests.cli.test_run_directory_commands import waiting_run
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


def _mangled(change: Callable[[dict[str, Any]], object]) -> Callable[[Path], object]:
    def write(state_path: Path) -> None:
        data = json.loads(state_path.read_text())
        change(data)
        state_path.write_text(json.dumps(data))

    return write


UNREADABLE_STATES: dict[str, Callable[[Path], object]] = {
    "not UTF-8": lambda path: path.write_bytes(b'{"run_id": "\xff\xfe"}'),
    "a JSON list": lambda path: path.write_text("[1, 2]"),
    "spec a list": _mangled(lambda d: d.update(spec=[1])),
    "capacity text": _mangled(lambda d: d["state"].update(capacity="window")),
    "turns text": _mangled(lambda d: d["state"].update(turns="2")),
    "dollars text": _mangled(lambda d: d["state"].update(dollars="0.42")),
    "pause_at a number": _mangled(lambda d: d["spec"].update(pause_at=5)),
    "interval too long": _mangled(lambda d: d["spec"]["wait_policy"].update(reset_grace=1e20)),
    "instant without zone": _mangled(lambda d: d["state"].update(next_probe_at="2026-11-30")),
    "remaining work numbers": _mangled(lambda d: d["state"].update(remaining_work=[1])),
    "run id a number": _mangled(lambda d: d.update(run_id=5)),
    "format text": _mangled(lambda d: d.update(format="1")),
}


@pytest.mark.parametrize("command", ["status", "resume"])
def test_a_record_of_a_newer_claudeloop_is_refused_in_one_line(
    claudeloop: Invoke, tmp_path: Path, command: str
) -> None:
    state = waiting_run(tmp_path).state_path
    _mangled(lambda d: d.update(format=99))(state)
    before = state.read_text()
    result = claudeloop(command, "--cwd", tmp_path)
    assert_one_line_error(
        result, str(state), "written by a newer claudeloop (record format 99;", "reads format 1)"
    )
    assert state.read_text() == before


@pytest.mark.parametrize("damage", UNREADABLE_STATES.values(), ids=UNREADABLE_STATES.keys())
def test_runs_lists_an_unreadable_state_and_goes_on(
    claudeloop: Invoke, tmp_path: Path, damage: Callable[[Path], object]
) -> None:
    waiting_run(tmp_path, "20261130-090000-aaaaaa")
    damage(waiting_run(tmp_path, "20261130-100000-bbbbbb").state_path)
    result = claudeloop("runs", "--cwd", tmp_path)
    assert result.exit_code == 0, result.err
    assert "Traceback" not in result.err
    lines = result.out.strip().splitlines()
    assert lines[0].startswith("20261130-100000-bbbbbb  unreadable")
    assert lines[1].startswith("20261130-090000-aaaaaa  waiting")


@pytest.mark.parametrize("damage", UNREADABLE_STATES.values(), ids=UNREADABLE_STATES.keys())
def test_status_of_an_unreadable_state_is_one_line(
    claudeloop: Invoke, tmp_path: Path, damage: Callable[[Path], object]
) -> None:
    damage(waiting_run(tmp_path).state_path)
    assert_one_line_error(claudeloop("status", "--cwd", tmp_path), "state.json", "unreadable")


def test_a_state_that_cannot_be_opened_is_one_line(claudeloop: Invoke, tmp_path: Path) -> None:
    directory = waiting_run(tmp_path)
    directory.state_path.unlink()
    directory.state_path.mkdir()
    assert_one_line_error(claudeloop("status", "--cwd", tmp_path), "state.json", "cannot be read")


def test_logs_show_or_skip_mistyped_event_lines(claudeloop: Invoke, tmp_path: Path) -> None:
    directory = waiting_run(tmp_path)
    mistyped = [
        {"type": 5},
        [1, 2],
        "just text",
        {"type": "wait.started", "probe_at": "soon", "capacity": "closed"},
        {"type": "profile.switched", "check_at": 17},
        {"type": "turn.finished", "turn": 3, "cost_usd": "a lot"},
        {"type": "tools.denied", "tools": 7},
        {"type": "run.finished", "outcome": "done", "exit_code": 0, "reason": "all done"},
    ]
    with directory.events_path.open("a") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in mistyped)
    result = claudeloop("logs", "--cwd", tmp_path)
    assert result.exit_code == 0, result.err
    assert "Traceback" not in result.err
    assert "probe_at=soon" in result.out  # shown as it is
    assert "cost_usd=a lot" in result.out
    assert "claudeloop: done (exit 0): all done" in result.out  # and the lines after it
    assert result.err.count("not an event object") == 2


def test_a_file_named_claudeloop_is_one_line(claudeloop: Invoke, tmp_path: Path) -> None:
    (tmp_path / ".claudeloop").write_text("notes\n")
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    assert_one_line_error(result, f"{tmp_path / '.claudeloop'} is not a directory", "move")


def test_doctor_says_where_a_file_is_not_toml_and_what_to_correct(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    (tmp_path / "claudeloop.toml").write_text('max_turns = 3\nmodel = "sonnet\n')
    result = claudeloop("doctor", "--cwd", tmp_path, "--json")
    assert result.exit_code == 2
    checks = {check["name"]: check for check in json.loads(result.out)["checks"]}
    assert checks["config"]["detail"].startswith(f"{tmp_path / 'claudeloop.toml'}: line 2, column ")
    assert "not valid TOML" in checks["config"]["detail"]
    assert "correct that key" not in checks["config"]["fix"]
    assert "TOML at that line and column" in checks["config"]["fix"]


def test_a_whole_number_beyond_toml_is_refused_naming_file_key_and_range(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    (tmp_path / "claudeloop.toml").write_text("max_turns = 99999999999999999999999999\n")
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    assert result.exit_code == 2
    assert result.err.strip() == (
        f"claudeloop: error: {tmp_path / 'claudeloop.toml'}: "
        "max_turns = 99999999999999999999999999: a number too large to hold; expected a "
        "whole number above 0"
    )
    assert not (tmp_path / ".claudeloop").exists()
    flagged = claudeloop("run", "--prompt", "x", "--cwd", tmp_path, "--stall-turns", "1" + "0" * 19)
    assert flagged.exit_code == 2
    assert "--stall-turns" in flagged.err
    assert f"'1{'0' * 19}' is a number too large to hold" in flagged.err


@pytest.mark.parametrize(
    ("where", "said"),
    [
        (
            "file",
            "max_dollars = inf: a number too large to hold (TOML reads 1e400 and the like as "
            "inf); expected a number above 0",
        ),
        ("variable", 'CLAUDELOOP_MAX_DOLLARS="1e400": a number too large to hold; expected a '),
        ("flag", "'1e400' is a number too large to hold; use a number above 0"),
    ],
)
def test_a_number_too_large_to_hold_is_said_to_be_that_not_inf_nor_below_0(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, said: str
) -> None:
    args = ["run", "--prompt", "x", "--cwd", tmp_path]
    if where == "file":
        (tmp_path / "claudeloop.toml").write_text("max_dollars = 1e400\n")
    elif where == "variable":
        monkeypatch.setenv("CLAUDELOOP_MAX_DOLLARS", "1e400")
    else:
        args += ["--max-dollars", "1e400"]
    result = claudeloop(*args)
    assert result.exit_code == 2
    (line,) = result.err.splitlines()
    assert said in line
    assert not (tmp_path / ".claudeloop").exists()


def test_doctor_names_a_file_named_claudeloop(claudeloop: Invoke, tmp_path: Path) -> None:
    (tmp_path / ".claudeloop").write_text("notes\n")
    result = claudeloop("doctor", "--cwd", tmp_path, "--json")
    checks = {check["name"]: check for check in json.loads(result.out)["checks"]}
    assert checks["run dir"]["status"] == "fail"
    assert ".claudeloop is not a directory" in checks["run dir"]["detail"]


def _writable_after(lock: Callable[[Path], None]) -> bool:
    """Whether a file can still be made in a directory after `lock(directory)`."""
    with tempfile.TemporaryDirectory() as scratch:
        try:
            lock(Path(scratch))
        except (OSError, subprocess.CalledProcessError):
            return True
        try:
            with tempfile.TemporaryFile(dir=scratch):
                return True
        except OSError:
            return False
        finally:
            _unlock(Path(scratch))


def _by_mode(path: Path) -> None:
    path.chmod(0o555)


def _immutable(path: Path) -> None:
    # Root (CI runs as root) writes into a directory whatever its mode, but not into one
    # marked immutable (ext4's `chattr +i`).
    subprocess.run(["chattr", "+i", str(path)], check=True, capture_output=True)


def _unlock(path: Path) -> None:
    if shutil.which("chattr"):
        subprocess.run(["chattr", "-i", str(path)], check=False, capture_output=True)
    path.chmod(0o755)


def _how_to_make_read_only() -> Callable[[Path], None] | None:
    if not _writable_after(_by_mode):
        return _by_mode
    if shutil.which("chattr") and not _writable_after(_immutable):
        return _immutable
    return None


MAKE_READ_ONLY = _how_to_make_read_only()
needs_an_ordinary_user = pytest.mark.skipif(
    MAKE_READ_ONLY is None,
    reason="no way here to make a directory this user cannot write (root, no chattr)",
)


@pytest.fixture
def read_only() -> Iterator[Callable[[Path], None]]:
    made: list[Path] = []

    def make(path: Path) -> None:
        assert MAKE_READ_ONLY is not None
        MAKE_READ_ONLY(path)
        made.append(path)

    yield make
    for path in made:
        _unlock(path)


@needs_an_ordinary_user
def test_a_read_only_working_directory_is_refused_before_any_turn(
    claudeloop: Invoke, tmp_path: Path, read_only: Callable[[Path], None]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    read_only(project)
    result = claudeloop("run", "--prompt", "x", "--cwd", project)
    assert_one_line_error(result, str(project), "cannot be written")


@needs_an_ordinary_user
def test_a_read_only_working_directory_with_a_run_directory_is_refused_unless_in_plan_mode(
    claudeloop: Invoke, tmp_path: Path, read_only: Callable[[Path], None]
) -> None:
    project = tmp_path / "project"
    (project / ".claudeloop" / "runs").mkdir(parents=True)
    read_only(project)
    result = claudeloop("run", "--prompt", "x", "--cwd", project)
    assert_one_line_error(result, f"--cwd {project} cannot be written", "--permission-mode plan")


@needs_an_ordinary_user
def test_resume_of_a_read_only_run_directory_is_refused_before_any_turn(
    claudeloop: Invoke, tmp_path: Path, read_only: Callable[[Path], None]
) -> None:
    directory = waiting_run(tmp_path)
    read_only(directory.path)
    result = claudeloop("resume", "--cwd", tmp_path)
    assert_one_line_error(result, "run's files", str(directory.path), "cannot be written")


@needs_an_ordinary_user
def test_a_plan_in_a_read_only_directory_is_refused_when_its_checkmarks_are_written(
    claudeloop: Invoke, tmp_path: Path, read_only: Callable[[Path], None]
) -> None:
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "PLAN.md").write_text("- [ ] a\n")
    read_only(plans)
    (tmp_path / "claudeloop.toml").write_text("update_plan = true\n")
    result = claudeloop("run", plans / "PLAN.md", "--cwd", tmp_path)
    assert_one_line_error(result, "PLAN.md", "update_plan")


def test_logs_of_an_event_log_that_cannot_be_read_is_one_line(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    directory = waiting_run(tmp_path)
    directory.events_path.unlink()
    directory.events_path.mkdir()
    assert_one_line_error(claudeloop("logs", "--cwd", tmp_path), "events.jsonl", "cannot be read")


@needs_an_ordinary_user
def test_stop_of_a_run_whose_directory_is_read_only_is_one_line(
    claudeloop: Invoke, tmp_path: Path, read_only: Callable[[Path], None]
) -> None:
    directory = waiting_run(tmp_path)
    lock = acquire(directory.lock_path)  # this test process stands in for the driver
    read_only(directory.path)
    try:
        result = claudeloop("stop", "--cwd", tmp_path)
    finally:
        lock.release()
    assert_one_line_error(result, "control", "cannot be written", f"kill -TERM {os.getpid()}")
