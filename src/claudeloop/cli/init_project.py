"""`claudeloop init`: a commented claudeloop.toml and a PLAN.md where they are missing,
`verify` set to the project's own test command, and what to run next, in sentences.

Exit codes: 0 when every file was written or already there; 1 when one could not be
written (each is said); 2 when the configuration the run would read does not load
(the one line names the file or variable), since a run would not start."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from claudeloop.application.errors import ClaudeloopError, UsageError
from claudeloop.application.project_setup import (
    CONFIG_FILE,
    PLAN_FILE,
    SetUp,
    set_up,
    toml_string,
)
from claudeloop.cli.bootstrap import configuration, project_folder
from claudeloop.cli.params import working_directory


def init(*, cwd: Path | None) -> None:
    directory = working_directory(cwd)
    done = set_up(project_folder(directory), config_name=CONFIG_FILE)
    click.echo(f"Setting up claudeloop in {directory}.")
    for line in report(done):
        click.echo(line)
    if done.failed:
        name, reason = done.failed[0]
        raise ClaudeloopError(f"{directory / name}: cannot be written ({reason})")
    try:
        verify = configuration(directory, {}).settings["verify"]
    except UsageError as error:  # a file or variable the run would read: exit 2
        raise UsageError(f"{error}; fix it, then `claudeloop config show`") from None
    if CONFIG_FILE in done.kept and done.checks and not verify.value:
        first = done.checks[0]
        click.echo(
            f"{CONFIG_FILE} sets no verify: add verify = [{toml_string(first.command)}] "
            "to it so that a Done must pass the tests."
        )
    click.echo(next_step(cwd, directory, plan_written=PLAN_FILE in done.written))


def report(done: SetUp) -> list[str]:
    """What was found and what was written or left, one sentence a line."""
    lines: list[str] = []
    if done.checks:
        first = done.checks[0]
        lines.append(f"Found the test command `{first.command}`: {first.because}.")
        lines += [f"Also found `{c.command}`: {c.because}." for c in done.checks[1:]]
    else:
        lines.append(
            "Found no test command (a Makefile test target, pytest, an npm test script, "
            "Cargo.toml or go.mod)."
        )
    for name in done.written:
        lines.append(_written(name, done))
    for name in done.kept:
        lines.append(f"{name} is already there: left as it is.")
    for name, reason in done.failed:
        lines.append(f"{name} could not be written: {reason}.")
    return lines


def _written(name: str, done: SetUp) -> str:
    if name == PLAN_FILE:
        return f"Wrote {PLAN_FILE}: a - [ ] checklist to replace with your task's steps."
    if done.checks:
        command = toml_string(done.checks[0].command)
        return (
            f"Wrote {name} with verify = [{command}]: a Done must pass it before the run "
            "ends. Its other settings are comments to uncomment."
        )
    return (
        f"Wrote {name} with every setting commented out; set verify = [...] there to "
        "the command that tests this project, so that a Done must pass it."
    )


def next_step(given: Path | None, directory: Path, *, plan_written: bool) -> str:
    """The command to run next, as it is typed from where the shell is."""
    if given is None or directory == Path.cwd().resolve():
        plan = PLAN_FILE
        command = f"claudeloop run {PLAN_FILE}"
    else:
        plan = shlex.quote(str(given / PLAN_FILE))
        command = f"claudeloop run {plan} --cwd {shlex.quote(str(given))}"
    if plan_written:
        return f"Next: write the task's steps into {plan}, then run: {command}"
    return f"Next: {command}"
