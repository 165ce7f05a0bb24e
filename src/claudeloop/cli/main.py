"""The `claudeloop` command: the group, its entry point and exit codes. Thin: each topic
module adds its commands (`register(cli)`): run_commands (run, resume, rehearse),
inspect_commands (status, logs, runs, sessions, stop, wind-down, report, dashboard),
steer_commands (probe-now, raise, note), branch_commands (diff, rewind, merge),
setup_commands (init, config, doctor, login, claude, completion), export and
fleet_commands (fleet init, queue, worker).

A topic is imported when one of its commands is called, not before: `claudeloop status`
never loads what `run` needs to describe its options (the settings, the records, the
domain's loop), a tenth of a second of CPU in every command (bench/commands.py)."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator
from typing import Any

import click

from claudeloop.application.errors import ClaudeloopError
from claudeloop.application.fleet_seat import take_fleet_seat
from claudeloop.cli.options import HelpGroup

# Each topic module of claudeloop.cli and the commands its `register` adds, in the order
# --help lists them. tests/cli/test_light_commands.py holds this table to what each
# topic registers.
TOPICS: dict[str, tuple[str, ...]] = {
    "run_commands": ("run", "resume", "rehearse"),
    "inspect_commands": (
        "status",
        "logs",
        "runs",
        "sessions",
        "stop",
        "wind-down",
        "report",
        "dashboard",
    ),
    "steer_commands": ("probe-now", "raise", "note"),
    "branch_commands": ("diff", "rewind", "merge"),
    "setup_commands": ("config", "doctor", "init", "completion", "login", "claude"),
    "export": ("export",),
    "fleet_commands": ("fleet", "queue", "worker"),
}
_TOPIC_OF = {name: topic for topic, names in TOPICS.items() for name in names}

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


class _Commands(HelpGroup):
    """The command line; a closed output ends any command alike, parsing and --help too.
    Its commands come from their topic modules when first named (TOPICS); its groups
    (`fleet`, `queue`) are plain HelpGroups, each holding its own commands."""

    group_class = HelpGroup

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*_TOPIC_OF, *super().list_commands(ctx)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        topic = _TOPIC_OF.get(cmd_name)
        if topic is not None and cmd_name not in self.commands:
            register_topic(topic, self)
        return super().get_command(ctx, cmd_name)

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

    click.echo(_version_line(importlib.metadata.version("claudeloop")))
    ctx.exit()


def _version_line(claudeloop_version: str) -> str:
    """claudeloop's version, the Claude Code bundled with it, and whether that is the one
    it was tested with."""
    from claudeloop.cli.bootstrap import bundled_claude_code
    from claudeloop.domain.tested_cli import standing_note

    bundled = bundled_claude_code()
    if bundled is None:
        return f"claudeloop {claudeloop_version} (no Claude Code bundled with claude-agent-sdk)"
    return (
        f"claudeloop {claudeloop_version}\nClaude Code {bundled} (bundled with claude-agent-"
        f"sdk): {standing_note(bundled)}"
    )


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


def register_topic(topic: str, group: click.Group) -> None:
    """Adds the commands of the topic module `topic` to `group`."""
    importlib.import_module(f"claudeloop.cli.{topic}").register(group)


def __getattr__(name: str) -> click.Command:
    """`run` and `resume`, kept importable from here, where scripts and tests have found
    them; loaded when asked for."""
    if name in ("run", "resume"):
        from claudeloop.cli import run_commands

        command: click.Command = getattr(run_commands, name)
        return command
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
