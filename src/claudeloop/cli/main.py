"""The `claudeloop` command: parsing, rendering, exit codes. Thin."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, assert_never

import click

from claudeloop.application.errors import ClaudeloopError
from claudeloop.application.fleet_seat import NO_SEAT, FleetSeat, take_fleet_seat
from claudeloop.application.settings import LARGEST_WHOLE, SETTINGS, Setting
from claudeloop.cli.export import register as register_export
from claudeloop.cli.fleet import register as register_fleet
from claudeloop.cli.params import (
    APPRISE_URL,
    CHECK,
    CWD_OPTION,
    DOMAIN,
    DURATION,
    ON_LIMIT,
    PAUSE_AT,
    POSITIVE_FLOAT,
    POSITIVE_INT,
    READ_PATH,
    OneLineChoice,
)

if TYPE_CHECKING:
    from datetime import timedelta

    from claudeloop.domain.loop import ControlCommand

F = TypeVar("F", bound=Callable[..., Any])


def with_options(options: list[Callable[[Any], Any]], command: F) -> F:
    """`command` with `options`, shown in --help in the order listed."""
    for option in reversed(options):
        command = option(command)
    return command


EPILOG = """\b
Examples:
  claudeloop init               set up a project: claudeloop.toml, PLAN.md
  claudeloop run PLAN.md        work through a plan's checklist
  claudeloop run --prompt "Fix the flaky tests" --max-dollars 5
  claudeloop resume             continue the most recent run here
  claudeloop login              log Claude Code in (the CLI bundled with it)
  claudeloop doctor             check the CLI, credentials, backend, model
  claudeloop config show        effective settings and where each came from
  claudeloop rehearse           a full run against the rehearsal API

Settings come from flags, then CLAUDELOOP_* variables (CLAUDELOOP_MAX_TURNS=20), then
./claudeloop.toml, then config.toml in the user config directory (CLAUDELOOP_CONFIG_DIR
overrides where that is), then built-in defaults.
"""


# How a command ends whose reader closed its output (`claudeloop logs | head -1`): as the
# shell reports a program killed by SIGPIPE (128 + 13), without a word.
OUTPUT_CLOSED_EXIT = 141


class OutputClosed(Exception):
    """The reader of claudeloop's output went away: nothing to report, nowhere to."""


@contextlib.contextmanager
def _output_closed_is_no_error() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError as error:
        # Raised as something click does not catch: it would end with exit 1 itself.
        raise OutputClosed from error


class _Commands(click.Group):
    """The command line; a closed output ends any command alike, parsing and --help too."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        with _output_closed_is_no_error():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with _output_closed_is_no_error():
            return super().invoke(ctx)


def _show_version(ctx: click.Context, _param: click.Parameter, asked: bool) -> None:
    if not asked or ctx.resilient_parsing:
        return
    import importlib.metadata

    from claudeloop.cli.bootstrap.version import version_line

    click.echo(version_line(importlib.metadata.version("claudeloop")))
    ctx.exit()


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
@click.option(
    "-V",
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show claudeloop's version and the Claude Code bundled with it, then exit.",
)
def cli() -> None:
    """Run Claude Code unattended until a task is truly done.

    claudeloop sends a turn, reads Claude Code's typed signals and decides: continue,
    wait for a usage window and probe, back off while credits are out, or stop and say why.

    \b
    Exit codes: 0 done · 1 blocked or failed · 2 usage or configuration error ·
    3 budget cap reached · 4 max wait exceeded · 75 wound down · 77 authentication
    failed · 78 backend misconfigured · 130 stopped by the user (Ctrl-C, stop) ·
    143 stopped by SIGTERM · 141 its output was closed (| head).
    """


# The option of every command that prints for scripts.
JSON_OPTION = click.option(
    "--json", "as_json", is_flag=True, help="JSON for scripts, instead of lines."
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
            return click.option(
                name,
                key,
                type=click.IntRange(0, LARGEST_WHOLE),
                metavar="N",
                default=None,
                help=help_text,
            )
        case "dollars":
            return click.option(name, key, type=POSITIVE_FLOAT, default=None, help=help_text)
        case "duration":
            return click.option(name, key, type=DURATION, default=None, help=help_text)
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


@cli.command(
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


@cli.command(
    epilog="""\b
Examples:
  claudeloop resume
  claudeloop resume --run-id 20261130-101500-a1b2c3
  claudeloop resume --session-id 0f6c...  --max-turns 5
  claudeloop resume --new-session    # Claude Code no longer has the session
"""
)
@click.option("--run-id", default=None, help="The run to continue (default: the most recent).")
@click.option("--session-id", default=None, help="Continue the run of this Claude session.")
@click.option(
    "--new-session",
    is_flag=True,
    help="Go on in a new Claude session, told the task, what is done and what is left, "
    "keeping the run's plan, ledger and branch (for a session Claude Code no longer has).",
)
@loop_options
def resume(
    *,
    run_id: str | None,
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
        run_id=run_id,
        session_id=session_id,
        new_session=new_session,
        output=commands.Output(cwd=cwd, as_json=as_json, verbose=verbose, quiet=quiet),
        flags=settings,
        seat=fleet_seat(),
    )


def fleet_seat() -> FleetSeat:
    """The seat `main` took for this command (none when the command was invoked without
    `main`, as a test's CliRunner does)."""
    return click.get_current_context().find_object(FleetSeat) or NO_SEAT


@cli.command(
    epilog="""\b
Examples:
  claudeloop sessions
  claudeloop sessions --json --cwd ~/src/app
"""
)
@CWD_OPTION
@JSON_OPTION
@click.option(
    "--limit", type=POSITIVE_INT, default=20, help="How many sessions, newest first (default 20)."
)
def sessions(cwd: Path | None, as_json: bool, limit: int) -> None:
    """Claude sessions of the working directory, newest first."""
    from claudeloop.cli import inspect

    inspect.sessions(cwd=cwd, as_json=as_json, limit=limit)


@cli.command(
    epilog="""\b
Examples:
  claudeloop rehearse            a window closes; the loop waits and resumes
  claudeloop rehearse credits    credits run out, then are topped up
  claudeloop rehearse --list     every scenario and what it shows
  claudeloop rehearse --notify ntfy://ntfy.sh/my-topic    try notifications
"""
)
@click.argument("scenario", required=False, default="window")
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
    scenario: str, list_them: bool, keep: bool, notify: tuple[str, ...], as_json: bool
) -> None:
    """A complete run against the built-in rehearsal API: no Claude account needed.

    Starts the rehearsal API on 127.0.0.1, copies an example plan to a temporary
    directory and runs a real loop through the bundled Claude Code CLI.
    """
    from claudeloop.cli import rehearse as rehearse_command

    rehearse_command.rehearse(
        scenario=scenario, list_them=list_them, keep=keep, as_json=as_json, notify=notify
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point: every user error ends in one line and its exit code.

    What a fleet's worker told this process (its seat: a lease, a link, a board) is
    taken out of the environment first, before anything reads it or starts a process
    that would inherit it, and handed to the command as its context's object."""
    seat = take_fleet_seat(os.environ)
    try:
        cli.main(args=argv, prog_name="claudeloop", standalone_mode=False, obj=seat)
    except ClaudeloopError as error:
        click.echo(f"claudeloop: error: {error}", err=True)
        sys.exit(error.exit_code)
    except click.UsageError as error:
        # "claudeloop: error: run: ...": the command named once, after the one prefix.
        command = error.ctx.command_path.partition(" ")[2] if error.ctx else ""
        where = f"{command}: " if command else ""
        click.echo(f"claudeloop: error: {where}{error.format_message()}", err=True)
        sys.exit(2)
    except click.ClickException as error:
        click.echo(f"claudeloop: error: {error.format_message()}", err=True)
        sys.exit(error.exit_code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.Abort:
        click.echo("claudeloop: aborted", err=True)
        sys.exit(130)
    except (OutputClosed, BrokenPipeError):
        # Whatever is left in stdout's buffer must not be flushed into the closed pipe
        # at exit, where Python would print "Exception ignored ... BrokenPipeError".
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(OUTPUT_CLOSED_EXIT)


RUN_SELECTION = [
    CWD_OPTION,
    click.option(
        "--run-id",
        default=None,
        help="The run (default: the one a live driver is driving, else the most recent).",
    ),
]


def run_selection(command: F) -> F:
    return with_options(RUN_SELECTION, command)


# A run of the fleet, from any machine: a value of its own is optional, so
# `status --engine` means the engine CLAUDELOOP_ENGINE names (or the SQLite default).
FLEET_SELECTION = click.option(
    "--engine",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[URL]",
    help="The run is in this fleet (no URL: CLAUDELOOP_ENGINE, else the local one).",
)


def _in_fleet(engine: str | None, cwd: Path | None, run_id: str | None, *, listed: bool) -> bool:
    """Whether the command reads the fleet (--engine) rather than a run directory."""
    from claudeloop.application.errors import UsageError

    if engine is None:
        return False
    if cwd is not None:
        raise UsageError("--engine finds the run in the fleet; give --cwd or --engine, not both")
    if run_id is None and not listed:
        raise UsageError("--engine needs --run-id ID; `claudeloop status --engine` lists them")
    return True


@cli.command(
    epilog="""\b
Examples:
  claudeloop status
  claudeloop status --json --run-id 20261130-101500-a1b2c3
  claudeloop status --engine                 every run of the fleet
  claudeloop status --engine postgresql://db.internal/fleet --run-id nightly
"""
)
@run_selection
@FLEET_SELECTION
@JSON_OPTION
def status(cwd: Path | None, run_id: str | None, engine: str | None, as_json: bool) -> None:
    """Phase, turns, spend, capacity, next probe and plan progress of a run.

    With --engine and no --run-id: every run of the fleet, and the capacity of
    its accounts (on PostgreSQL)."""
    if _in_fleet(engine, cwd, run_id, listed=True):
        from claudeloop.cli import fleet

        fleet.remote_status(engine or "", run_id, as_json)
        return
    from claudeloop.cli import inspect

    inspect.status(cwd=cwd, run_id=run_id, as_json=as_json)


@cli.command(
    epilog="""\b
Examples:
  claudeloop logs
  claudeloop logs -f
  claudeloop logs --json | jq .type
  claudeloop logs --engine --run-id nightly -f     a run of the fleet
"""
)
@run_selection
@FLEET_SELECTION
@click.option("-f", "--follow", is_flag=True, help="Keep printing events until the run ends.")
@click.option("--json", "as_json", is_flag=True, help="The raw JSON lines.")
def logs(
    cwd: Path | None, run_id: str | None, engine: str | None, follow: bool, as_json: bool
) -> None:
    """The run's events as readable lines."""
    if _in_fleet(engine, cwd, run_id, listed=False):
        from claudeloop.cli import fleet

        assert run_id is not None
        fleet.remote_logs(engine or "", run_id, follow, as_json)
        return
    from claudeloop.cli import inspect

    inspect.logs(cwd=cwd, run_id=run_id, follow=follow, as_json=as_json)


@cli.command(
    epilog="""\b
Examples:
  claudeloop runs
  claudeloop runs --json
  claudeloop runs --all          every run started on this machine
"""
)
@CWD_OPTION
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Every run started on this machine, of every working directory.",
)
@JSON_OPTION
def runs(cwd: Path | None, every: bool, as_json: bool) -> None:
    """claudeloop runs of the working directory, newest first, with their outcome."""
    from claudeloop.cli import inspect

    if every:
        if cwd is not None:
            from claudeloop.application.errors import UsageError

            raise UsageError("--all lists the runs of every directory; drop --cwd")
        inspect.machine_runs(as_json=as_json)
        return
    inspect.runs(cwd=cwd, as_json=as_json)


RUN_ARGUMENT = click.argument("run_id", metavar="[RUN]", required=False)


@cli.command(
    epilog="""\b
Examples:
  claudeloop diff                    every commit of the newest run
  claudeloop diff 20261130-101500-a1b2c3 --turn 3
  claudeloop diff --stat
"""
)
@RUN_ARGUMENT
@CWD_OPTION
@click.option("--turn", type=click.IntRange(min=1), default=None, help="Only this turn's commit.")
@click.option("--stat", is_flag=True, help="A diffstat instead of the patch.")
def diff(run_id: str | None, cwd: Path | None, turn: int | None, stat: bool) -> None:
    """What a --worktree or --checkpoint run's commits changed (RUN: default the newest)."""
    from claudeloop.cli import branch

    branch.diff(cwd=cwd, run_id=run_id, turn=turn, stat=stat)


@cli.command(
    epilog="""\b
Examples:
  claudeloop rewind 20261130-101500-a1b2c3 --to-turn 2
  claudeloop rewind --to-turn 0 --reason "wrong library; use httpx"
  claudeloop resume                  its next turn is told what was undone
"""
)
@RUN_ARGUMENT
@CWD_OPTION
@click.option(
    "--to-turn",
    type=click.IntRange(min=0),
    required=True,
    help="Reset the run's branch to this turn's commit (0: where the run began).",
)
@click.option("--reason", default=None, help="Why, told to the model at its next turn.")
@JSON_OPTION
def rewind(
    run_id: str | None, cwd: Path | None, to_turn: int, reason: str | None, as_json: bool
) -> None:
    """Undo a stopped run's turns after N: its branch is reset to turn N's commit, and
    its next turn is told what was undone (and why); the session goes on."""
    from claudeloop.cli import branch

    branch.rewind(cwd=cwd, run_id=run_id, to_turn=to_turn, reason=reason, as_json=as_json)


@cli.command(
    epilog="""\b
Examples:
  claudeloop merge 20261130-101500-a1b2c3
  claudeloop merge --json
  claudeloop merge RUN --resolve     a run resolves any conflict
"""
)
@RUN_ARGUMENT
@CWD_OPTION
@click.option(
    "--resolve",
    is_flag=True,
    help="On a conflict, start a run that resolves it in a worktree of its own, "
    "verified by the run's --verify checks; then merge that run.",
)
@JSON_OPTION
def merge(run_id: str | None, cwd: Path | None, resolve: bool, as_json: bool) -> None:
    """Merge a --worktree run's branch into the branch it came from (the checkout must
    be on it); when it does not apply cleanly, nothing is merged, the conflicting files
    are listed and the exit is 1 (or, with --resolve, a run resolves them)."""
    from claudeloop.cli import branch

    branch.merge(cwd=cwd, run_id=run_id, as_json=as_json, resolve=resolve, seat=fleet_seat())


@cli.command(
    epilog="""\b
Examples:
  claudeloop dashboard                  this machine's runs, on 127.0.0.1
  claudeloop dashboard --port 8420
  claudeloop dashboard --engine         the fleet's runs too
  claudeloop dashboard --host 0.0.0.0   reachable by others (it warns)
"""
)
@click.option(
    "--engine",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[URL]",
    help="Show this fleet's runs too (no URL: CLAUDELOOP_ENGINE, else the local one).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="The port to listen on (0: a free one).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on; another than 127.0.0.1 exposes the runs.",
)
def dashboard(engine: str | None, port: int, host: str) -> None:
    """A live web page of every run of this machine: phase, waits, plan, spend,
    timeline, events, the accounts' capacity, and stop and wind-down buttons.

    It prints its URL, with a token every request needs; Ctrl-C stops it.
    """
    from claudeloop.cli.dashboard import serve

    serve(engine=engine, host=host, port=port)


@cli.command(
    epilog="""\b
Examples:
  claudeloop stop
  claudeloop stop --run-id 20261130-101500-a1b2c3
  claudeloop stop --engine --run-id nightly      its worker passes it on
"""
)
@run_selection
@FLEET_SELECTION
@JSON_OPTION
def stop(cwd: Path | None, run_id: str | None, engine: str | None, as_json: bool) -> None:
    """Stop the live run at the next safe point (at once during a wait); it exits 130."""
    from claudeloop.domain.loop import ControlCommand

    _control(ControlCommand.STOP, cwd=cwd, run_id=run_id, engine=engine, as_json=as_json)


@cli.command(
    "wind-down",
    epilog="""\b
Examples:
  claudeloop wind-down
  claudeloop wind-down --engine --run-id nightly
""",
)
@run_selection
@FLEET_SELECTION
@JSON_OPTION
def wind_down(cwd: Path | None, run_id: str | None, engine: str | None, as_json: bool) -> None:
    """Finish the current turn, write the handoff summary, exit 75."""
    from claudeloop.domain.loop import ControlCommand

    _control(ControlCommand.WIND_DOWN, cwd=cwd, run_id=run_id, engine=engine, as_json=as_json)


RUN_ARGUMENT = click.argument("run", required=False, metavar="[RUN]")


@cli.command(
    "probe-now",
    epilog="""\b
Examples:
  claudeloop probe-now                       the run a live driver drives
  claudeloop probe-now 20261130-101500-a1b2c3
  claudeloop probe-now nightly --engine      its worker passes it on
\b
Outside a wait it does nothing; the run says so in its events (probe.asked).
""",
)
@RUN_ARGUMENT
@CWD_OPTION
@FLEET_SELECTION
@JSON_OPTION
def probe_now(run: str | None, cwd: Path | None, engine: str | None, as_json: bool) -> None:
    """End the live run's wait early and probe at once (capacity is back)."""
    from claudeloop.cli import steer

    steer.probe(cwd=cwd, run_id=run, engine=engine, as_json=as_json)


@cli.command(
    "raise",
    epilog="""\b
Examples:
  claudeloop raise --max-turns 80
  claudeloop raise 20261130-101500-a1b2c3 --max-dollars 25
  claudeloop raise --max-wait 12h --max-turns 120
  claudeloop raise nightly --engine --max-dollars 40
\b
A cap lower than what the run spent is refused (exit 2). The run's record
keeps the new cap, so a resume keeps it too.
""",
)
@RUN_ARGUMENT
@click.option("--max-turns", type=POSITIVE_INT, default=None, help="The new turn cap.")
@click.option("--max-dollars", type=POSITIVE_FLOAT, default=None, help="The new dollar cap.")
@click.option(
    "--max-wait", type=DURATION, default=None, help="The new longest wait (90m, 12h, 2d)."
)
@CWD_OPTION
@FLEET_SELECTION
@JSON_OPTION
def raise_cap(
    *,
    run: str | None,
    max_turns: int | None,
    max_dollars: float | None,
    max_wait: timedelta | None,
    cwd: Path | None,
    engine: str | None,
    as_json: bool,
) -> None:
    """Change a cap of the live run without a restart, at its next safe point."""
    from claudeloop.cli import steer
    from claudeloop.domain.steering import Cap

    given = {
        Cap.TURNS: float(max_turns) if max_turns is not None else None,
        Cap.DOLLARS: max_dollars,
        Cap.WAIT: max_wait.total_seconds() if max_wait is not None else None,
    }
    caps = {cap: value for cap, value in given.items() if value is not None}
    steer.raise_caps(cwd=cwd, run_id=run, caps=caps, engine=engine, as_json=as_json)


@cli.command(
    epilog="""\b
Examples:
  claudeloop note "the flaky test in test_io.py is known; leave it"
  claudeloop note 20261130-101500-a1b2c3 "use the staging database"
  claudeloop note nightly --engine "use the staging database"
\b
The note is said with the next prompt, and with each one until a turn is
answered; it waits for that turn (past a wait for capacity), and status
shows it till then. It is in the events (note.added), masked like the rest.
""",
)
@click.argument("words", nargs=-1, required=True, metavar="[RUN] TEXT")
@CWD_OPTION
@FLEET_SELECTION
@JSON_OPTION
def note(words: tuple[str, ...], cwd: Path | None, engine: str | None, as_json: bool) -> None:
    """Leave a note for the live run's next turn (added to its prompt)."""
    from claudeloop.application.errors import UsageError
    from claudeloop.cli import steer

    if len(words) > 2:
        raise UsageError(
            f"note takes [RUN] TEXT, not {len(words)} words; quote the text: "
            'claudeloop note "the text"'
        )
    run, text = (words[0], words[1]) if len(words) == 2 else (None, words[0])
    steer.note(cwd=cwd, run_id=run, text=text, engine=engine, as_json=as_json)


@cli.command(
    epilog="""\b
Examples:
  claudeloop report                      the last 12 hours
  claudeloop report --since 7d --json
  claudeloop report --html night.html    one file, pictures inline
  claudeloop report --all                every run started on this machine
""",
)
@click.option(
    "--since",
    type=DURATION,
    default="12h",
    show_default=True,
    help="Runs that started or did something this long ago or since.",
)
@JSON_OPTION
@click.option(
    "--html",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write the report as one HTML file with its pictures.",
)
@CWD_OPTION
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Every run started on this machine, of every working directory.",
)
def report(
    since: timedelta, as_json: bool, html: Path | None, cwd: Path | None, every: bool
) -> None:
    """What the runs did: outcome, turns, dollars, waits, checks, what is left."""
    from claudeloop.cli import report as reporting

    if every and cwd is not None:
        from claudeloop.application.errors import UsageError

        raise UsageError("--all reports the runs of every directory; drop --cwd")
    reporting.report(cwd=cwd, since=since, as_json=as_json, html=html, every=every)


def _control(
    command: ControlCommand,
    *,
    cwd: Path | None,
    run_id: str | None,
    engine: str | None,
    as_json: bool,
) -> None:
    """Hands `stop` or `wind-down` to the run's worker in a fleet, else to its directory."""
    if _in_fleet(engine, cwd, run_id, listed=False):
        from claudeloop.cli import fleet

        assert run_id is not None
        fleet.remote_control(engine or "", run_id, command, as_json)
        return
    from claudeloop.cli import inspect

    inspect.control(cwd=cwd, run_id=run_id, command=command, as_json=as_json)


@cli.group(
    epilog="""\b
Examples:
  claudeloop config show
  claudeloop config show --profile local --json
"""
)
def config() -> None:
    """Configuration: claudeloop.toml, the user config.toml, CLAUDELOOP_* variables."""


@config.command(
    "show",
    epilog="""\b
Examples:
  claudeloop config show
  claudeloop config show --json | jq .settings.max_turns
  CLAUDELOOP_MAX_TURNS=5 claudeloop config show --profile local
""",
)
@CWD_OPTION
@click.option("--profile", default=None, help="Show this profile instead of the selected one.")
@JSON_OPTION
def config_show(cwd: Path | None, profile: str | None, as_json: bool) -> None:
    """The effective settings, where each came from, and the selected profile's
    environment for Claude Code. Secrets are masked."""
    from claudeloop.cli import show_config

    show_config.show(cwd=cwd, profile=profile, as_json=as_json)


@cli.command(
    epilog="""\b
Examples:
  claudeloop doctor
  claudeloop doctor --profile local
  claudeloop doctor --no-probe --json

Exit codes: 0 every check passed · 78 the backend or the model is misconfigured ·
77 no credentials, or they were refused · 2 a configuration file or variable is
invalid · 1 anything else failed.
"""
)
@CWD_OPTION
@click.option("--profile", default=None, help="Check this profile instead of the selected one.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object with every check.")
@click.option(
    "--no-probe", is_flag=True, help="Do not send the model a probe (no request, no cost)."
)
def doctor(cwd: Path | None, profile: str | None, as_json: bool, no_probe: bool) -> None:
    """Check what a run needs: the Claude Code CLI, credentials, configuration, the
    profile, the backend and the model, and a writable run directory."""
    from claudeloop.cli import doctor as doctor_command

    doctor_command.doctor(cwd=cwd, profile=profile, as_json=as_json, probe=not no_probe)


@cli.command(
    epilog="""\b
Examples:
  claudeloop init                   set up the current directory
  claudeloop init --cwd ~/src/app   set up another
  claudeloop init && claudeloop config show

Never overwrites: a file already there is left as it is, and said so.

\b
Exit codes: 0 every file written or already there · 1 one could not be
written · 2 the configuration a run would read does not load.
"""
)
@CWD_OPTION
def init(cwd: Path | None) -> None:
    """Set up a project: claudeloop.toml and PLAN.md, where they are missing.

    claudeloop.toml has every setting as a comment to uncomment, and verify
    (the commands a Done must pass) set to the project's own test command, found from its files: a
    Makefile with a test target (make test); pytest.ini, pytest in pyproject.toml,
    setup.cfg or tox.ini, or a tests/ directory beside pyproject.toml or setup.cfg
    (pytest); a test script in package.json (npm test); Cargo.toml (cargo test);
    go.mod (go test ./...). The first found wins; the others are named."""
    from claudeloop.cli import init_project

    init_project.init(cwd=cwd)


@cli.command(
    epilog="""\b
Examples:
  eval "$(claudeloop completion bash)"    in ~/.bashrc
  eval "$(claudeloop completion zsh)"     in ~/.zshrc, after compinit
  claudeloop completion fish > ~/.config/fish/completions/claudeloop.fish
"""
)
@click.argument("shell", type=OneLineChoice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(context: click.Context, shell: str) -> None:
    """Print the shell completion script of bash, zsh or fish.

    Commands, options and their choices then complete on Tab (click's shell
    completion; bash 4.4 or newer)."""
    from claudeloop.cli import completion as completion_command

    click.echo(completion_command.script(context.find_root().command, shell), nl=False)


@cli.command(
    context_settings={"ignore_unknown_options": True},
    epilog="""\b
Examples:
  claudeloop login               a Claude subscription (Pro, Max, Team)
  claudeloop login --console     an Anthropic Console account (API billing)
  claudeloop login --sso         through your organization's single sign-on
  claudeloop claude auth status  what Claude Code will authenticate with

Any other option goes to the CLI's `auth login` as it is. For a token to put
in CLAUDE_CODE_OAUTH_TOKEN: claudeloop claude setup-token.
""",
)
@CWD_OPTION
@click.option("--profile", default=None, help="Log in as this profile's runs would.")
@click.option("--console", is_flag=True, help="An Anthropic Console account (API billing) instead.")
@click.option("--sso", is_flag=True, help="Through your organization's single sign-on.")
@click.option("--email", default=None, help="The address to fill in on the login page.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def login(
    *,
    cwd: Path | None,
    profile: str | None,
    console: bool,
    sso: bool,
    email: str | None,
    args: tuple[str, ...],
) -> None:
    """Log Claude Code in: runs the `auth login` of the Claude Code CLI bundled
    with claudeloop, with the environment a run gives it (CLAUDE_CONFIG_DIR and
    the profile's variables), on this terminal."""
    from claudeloop.cli import login as login_command

    passed = [
        *(["--console"] if console else []),
        *(["--sso"] if sso else []),
        *(["--email", email] if email is not None else []),
        *args,
    ]
    login_command.login(cwd=cwd, profile=profile, args=passed)


@cli.command(
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    epilog="""\b
Examples:
  claudeloop claude --version
  claudeloop claude auth status --text
  claudeloop claude setup-token   a token for CLAUDE_CODE_OAUTH_TOKEN
  claudeloop claude -- --help     the CLI's own help
""",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def claude(args: tuple[str, ...]) -> None:
    """Run the Claude Code CLI bundled with claudeloop (none need be on PATH)
    with ARGS, in the environment a run gives it; exits with its exit code."""
    from claudeloop.cli import login as login_command

    login_command.claude(args=args)


register_fleet(cli, run)
register_export(cli)
