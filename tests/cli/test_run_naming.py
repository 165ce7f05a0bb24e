"""One way to name a run: every command that acts on one run takes it as `[RUN]`, and
`--run-id RUN`, the older form, still works where scripts have used it. Both, naming two
runs, is a one-line usage error."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from claudeloop.cli.main import cli
from tests.cli.conftest import Invocation
from tests.cli.test_run_directory_commands import waiting_run
from tests.cli.test_user_errors import assert_one_line_error

Invoke = Callable[..., Invocation]

# Every command that acts on one run, and what else it needs to parse.
ACTING_ON_A_RUN: dict[str, tuple[str, ...]] = {
    "resume": (),
    "status": (),
    "logs": (),
    "stop": (),
    "wind-down": (),
    "probe-now": (),
    "raise": ("--max-turns", "9"),
    "diff": (),
    "rewind": ("--to-turn", "0"),
    "merge": (),
    "export": (),
}


@pytest.mark.parametrize("name", list(ACTING_ON_A_RUN))
def test_each_command_on_a_run_says_run_in_its_usage_and_hides_the_older_form(
    name: str,
) -> None:
    shown = CliRunner().invoke(cli, [name, "--help"], terminal_width=80)
    assert shown.exit_code == 0, shown.output
    usage = shown.output.splitlines()[0]
    assert usage.endswith("[RUN]"), usage
    assert "--run-id" not in shown.output.split("Examples:")[0]


def test_note_takes_its_run_before_the_text() -> None:
    # Through the command line, not a bare click.Context: click keeps the first help
    # option it builds for a command, and one built without the group's `-h` would
    # change every later help of `note` in this process (the CLI reference's test).
    shown = CliRunner().invoke(cli, ["note", "--help"], terminal_width=80)
    assert shown.exit_code == 0, shown.output
    assert "[RUN] TEXT" in shown.output.splitlines()[0]


@pytest.mark.parametrize("name", [*ACTING_ON_A_RUN, "note"])
def test_run_and_run_id_naming_two_runs_is_one_line_and_exit_2(
    claudeloop: Invoke, tmp_path: Path, name: str
) -> None:
    extra = ACTING_ON_A_RUN.get(name, ())
    text = ("a note",) if name == "note" else ()
    result = claudeloop(name, "first", *text, "--run-id", "second", *extra, "--cwd", tmp_path)
    assert_one_line_error(result, "'first'", "--run-id 'second'", "name it once")


def test_status_finds_the_same_run_by_run_or_by_run_id(claudeloop: Invoke, tmp_path: Path) -> None:
    waiting_run(tmp_path, "20261130-090000-aaaaaa")
    waiting_run(tmp_path, "20261130-100000-bbbbbb")
    older = "20261130-090000-aaaaaa"
    by_run = claudeloop("status", older, "--cwd", tmp_path, "--json")
    by_run_id = claudeloop("status", "--run-id", older, "--cwd", tmp_path, "--json")
    both = claudeloop("status", older, "--run-id", older, "--cwd", tmp_path, "--json")
    assert by_run.exit_code == by_run_id.exit_code == both.exit_code == 0, by_run.err
    shown = [json.loads(result.out) for result in (by_run, by_run_id, both)]
    assert {(each["run_id"], each["phase"], each["session_id"]) for each in shown} == {
        (older, "waiting", "sess-1")
    }


def test_logs_of_a_named_run_by_either_form(claudeloop: Invoke, tmp_path: Path) -> None:
    waiting_run(tmp_path, "nightly")
    waiting_run(tmp_path, "20261130-100000-bbbbbb")
    by_run = claudeloop("logs", "nightly", "--cwd", tmp_path, "--json")
    by_run_id = claudeloop("logs", "--run-id", "nightly", "--cwd", tmp_path, "--json")
    assert by_run.exit_code == by_run_id.exit_code == 0, by_run.err
    assert by_run.out == by_run_id.out
    assert json.loads(by_run.out.splitlines()[0])["run_id"] == "nightly"


def test_a_run_that_is_not_there_is_named_whichever_form_named_it(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    waiting_run(tmp_path)
    for args in (("resume", "nosuch"), ("resume", "--run-id", "nosuch")):
        assert_one_line_error(claudeloop(*args, "--cwd", tmp_path), "nosuch")


def test_a_fleet_run_is_named_as_run_too(claudeloop: Invoke, tmp_path: Path) -> None:
    engine = f"sqlite:///{tmp_path / 'fleet.sqlite'}"
    assert_one_line_error(claudeloop("stop", "--engine", engine), "--engine needs the run id")
    assert_one_line_error(
        claudeloop("stop", "a", "--run-id", "b", "--engine", engine), "name it once"
    )


@pytest.mark.parametrize(
    ("command", "after"),
    [
        (("note",), ("use the staging database",)),
        (("probe-now",), ()),
        (("raise",), ("--max-turns", "40")),
        (("export",), ()),
        (("stop",), ()),
    ],
)
def test_a_run_named_by_either_form_is_the_same_run(
    claudeloop: Invoke, tmp_path: Path, command: tuple[str, ...], after: tuple[str, ...]
) -> None:
    waiting_run(tmp_path, "nightly")
    waiting_run(tmp_path, "20261130-100000-bbbbbb")
    by_run = claudeloop(*command, "nightly", *after, "--cwd", tmp_path)
    by_run_id = claudeloop(*command, "--run-id", "nightly", *after, "--cwd", tmp_path)
    assert (by_run.exit_code, by_run.out, by_run.err) == (
        by_run_id.exit_code,
        by_run_id.out,
        by_run_id.err,
    )
    if command != ("export",):  # its rows name no run
        assert "nightly" in by_run.out + by_run.err
