"""The commands that drive a run: `run`, `resume` and `rehearse`, and the flags of every
setting they share (from application/settings.py's `SETTINGS`). Parsing only: the work is
in commands.py and rehearse.py, imported when a command is called."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import assert_never

import click

from claudeloop.application.fleet_seat import NO_SEAT, FleetSeat
from claudeloop.application.settings import SETTINGS, Setting
from claudeloop.cli.options import JSON_OPTION, F, names_a_run, with_options
from claudeloop.cli.params import (
    APPRISE_URL,
    CHECK,
    CWD_OPTION,
    DASHBOARD_URL,
    DOMAIN,
    DURATION,
    DURATION_OR_ZERO,
    ON_LIMIT,
    PAUSE_AT,
    POSITIVE_FLOAT,
    POSITIVE_INT,
    READ_PATH,
    WHOLE_OR_ZERO,
)


def setting_option(setting: Setting[object]) -> Callable[[F], F]:
    """The flag of `setting`, from its description: its kind's click type, its help."""
    name, key, help_text = setting.option, setting.key, setting.help
    match setting.kind:
        case "switch":
            return click.option(f"{name}/--no-{name[2:]}", key, default=None, help=help_text)
        case "profile" | "text":
            return click.option(name, key, default=None, help=help_text)
        case "choice" | "choices":
            return click.option(
                name, key, default=None, type=click.Choice(setting.choices), help=help_text
            )
        case "whole":
            return click.option(name, key, type=POSITIVE_INT, default=None, help=help_text)
        case "whole_or_zero":
            return click.option(name, key, type=WHOLE_OR_ZERO, default=None, help=help_text)
        case "dollars":
            return click.option(name, key, type=POSITIVE_FLOAT, default=None, help=help_text)
        case "duration":
            return click.option(name, key, type=DURATION, default=None, help=help_text)
        case "duration_or_zero":
            return click.option(name, key, type=DURATION_OR_ZERO, default=None, help=help_text)
        case "pause_at":
            return click.option(name, key, type=PAUSE_AT, default=None, help=help_text)
        case "urls":
            return click.option(name, key, type=APPRISE_URL, multiple=True, help=help_text)
        case "limits":
            return click.option(name, key, type=ON_LIMIT, multiple=True, help=help_text)
        case "checks":
            return click.option(name, key, type=CHECK, multiple=True, help=help_text)
        case "domains":
            return click.option(name, key, type=DOMAIN, multiple=True, help=help_text)
        case "paths":
            return click.option(name, key, type=READ_PATH, multiple=True, help=help_text)
        case "address":
            return click.option(name, key, type=DASHBOARD_URL, default=None, help=help_text)
        case _:
            assert_never(setting.kind)


def loop_options(command: F) -> F:
    """The options `run` and `resume` share: every setting's flag, in the order of
    SETTINGS (application/settings.py), between --cwd and the output's options."""
    options = [
        CWD_OPTION,
        *(setting_option(setting) for setting in SETTINGS if setting.has_flag),
        click.option(
            "--json",
            "as_json",
            is_flag=True,
            help="Print one JSON object with the result at the end.",
        ),
        click.option("-v", "--verbose", count=True, help="More detail on screen."),
        click.option("-q", "--quiet", is_flag=True, help="Only the final line."),
    ]
    return with_options(options, command)


def fleet_seat() -> FleetSeat:
    """The seat `main` took for this command (none when the command was invoked without
    `main`, as a test's CliRunner does)."""
    return click.get_current_context().find_object(FleetSeat) or NO_SEAT


@click.command(
    epilog="""\b
Examples:
  claudeloop run PLAN.md
  claudeloop run PLAN.md --max-turns 20 --max-dollars 10
  claudeloop run --prompt "Port the tests to pytest" --max-turns 10
  claudeloop run --prompt-file TASK.md
  claudeloop run --prompt - < TASK.md
  claudeloop run PLAN.md --max-wait 8h --json
"""
)
@click.argument("plan", required=False, type=click.Path(path_type=Path))
@click.option(
    "--prompt", default=None, help="The task, when there is no plan file ('-': read stdin)."
)
@click.option(
    "--prompt-file",
    type=click.Path(path_type=Path),
    default=None,
    help="Read the task from this file (for a task too long for the command line).",
)
@click.option("--run-id", default=None, help="Name the run (default: time-based).")
@loop_options
def run(
    *,
    plan: Path | None,
    prompt: str | None,
    prompt_file: Path | None,
    run_id: str | None,
    cwd: Path | None,
    as_json: bool,
    verbose: int,
    quiet: bool,
    **settings: object,
) -> None:
    """Start a run on PLAN (a markdown file with - [ ] items) or on --prompt TEXT."""
    from claudeloop.cli import commands

    commands.run(
        plan=plan,
        prompt=prompt,
        prompt_file=prompt_file,
        run_id=run_id,
        output=commands.Output(cwd=cwd, as_json=as_json, verbose=verbose, quiet=quiet),
        flags=settings,
        seat=fleet_seat(),
    )


@click.command(
    epilog="""\b
Examples:
  claudeloop resume
  claudeloop resume 20261130-101500-a1b2c3
  claudeloop resume --session-id 0f6c...  --max-turns 5
  claudeloop resume --new-session    # Claude Code no longer has the session
\b
RUN: the run to continue (default: the most recent); --run-id RUN, the
older form, is read too. A run at a cap sends nothing (exit 3) until a
flag raises it above what was spent: resume RUN --max-turns 4.
"""
)
@click.option("--session-id", default=None, help="Continue the run of this Claude session.")
@click.option(
    "--new-session",
    is_flag=True,
    help="Go on in a new Claude session, told the task, what is done and what is left, "
    "keeping the run's plan, ledger and branch (for a session Claude Code no longer has).",
)
@loop_options
@names_a_run
def resume(
    *,
    run: str | None,
    session_id: str | None,
    new_session: bool,
    cwd: Path | None,
    as_json: bool,
    verbose: int,
    quiet: bool,
    **settings: object,
) -> None:
    """Continue a run, keeping its budget ledger and its Claude session."""
    from claudeloop.cli import commands

    commands.resume(
        run_id=run,
        session_id=session_id,
        new_session=new_session,
        output=commands.Output(cwd=cwd, as_json=as_json, verbose=verbose, quiet=quiet),
        flags=settings,
        seat=fleet_seat(),
    )


@click.command(
    epilog="""\b
Examples:
  claudeloop rehearse            a window closes; the loop waits and resumes
  claudeloop rehearse credits    credits run out, then are topped up
  claudeloop rehearse --list     every scenario and what it shows
  claudeloop rehearse --notify ntfy://ntfy.sh/my-topic    try notifications
"""
)
@click.argument("scenario", required=False)
@click.option("--list", "list_them", is_flag=True, help="List the built-in scenarios.")
@click.option("--keep", is_flag=True, help="Keep the folder; `resume --cwd` there goes on.")
@click.option(
    "--notify",
    type=APPRISE_URL,
    multiple=True,
    help="Send the rehearsal's notifications to this apprise URL (repeatable).",
)
@JSON_OPTION
def rehearse(
    scenario: str | None, list_them: bool, keep: bool, notify: tuple[str, ...], as_json: bool
) -> None:
    """A complete run against the built-in rehearsal API: no Claude account needed.

    Starts the rehearsal API on 127.0.0.1, copies an example plan to a temporary
    directory and runs a real loop through the bundled Claude Code CLI.
    """
    from claudeloop.cli import rehearse as rehearse_command

    rehearse_command.rehearse(
        scenario=scenario, list_them=list_them, keep=keep, as_json=as_json, notify=notify
    )


def register(cli: click.Group) -> None:
    """Add `run`, `resume` and `rehearse` to `cli`."""
    for command in (run, resume, rehearse):
        cli.add_command(command)
