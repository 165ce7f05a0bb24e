"""The options and arguments several commands share, each declared once: `--json`, a run
named as `[RUN]` (with `--run-id`, its older form), a run of the fleet (`--engine`).
`--cwd` is declared in params.py, beside the working directory it names."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from claudeloop.application.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])


def with_options(options: list[Callable[[Any], Any]], command: F) -> F:
    """`command` with `options`, shown in --help in the order listed."""
    for option in reversed(options):
        command = option(command)
    return command


# A hyphen held while --help is wrapped: click's wrapper breaks lines after a hyphen,
# which cuts a flag or a word a person copies in two ("wind-" / "down",
# "--sandbox-allow-" / "read"). U+2011 is one column wide, as the hyphen it holds.
_HELD_HYPHEN = "\u2011"


def _whole_at_hyphens(wrap: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(wrap)
    def wrapped(text: str, *args: Any, **kwargs: Any) -> str:
        return wrap(text.replace("-", _HELD_HYPHEN), *args, **kwargs).replace(_HELD_HYPHEN, "-")

    return wrapped


click.formatting.wrap_text = _whole_at_hyphens(click.formatting.wrap_text)


class HelpGroup(click.Group):
    """A group whose --help says each command's description whole, wrapped to the
    terminal, where click's own cuts it with "..." to fit one line. Its groups too."""

    group_class: type[click.Group] | type[type] | None = type

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            # The first sentence (or paragraph), however long: write_dl wraps it.
            rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


# The option of every command that prints for scripts.
JSON_OPTION = click.option(
    "--json", "as_json", is_flag=True, help="JSON for scripts, instead of lines."
)

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

# `--run-id ID`, the older way to name the run a command acts on: still read, not shown.
RUN_ID_ALIAS = click.option("--run-id", "run_id_alias", default=None, hidden=True)


def one_run(run: str | None, run_id: str | None) -> str | None:
    """The run named by RUN or by --run-id (its older form); both only when they agree."""
    if run is not None and run_id is not None and run != run_id:
        raise UsageError(f"RUN {run!r} and --run-id {run_id!r} name two runs; name it once, as RUN")
    return run if run is not None else run_id


def names_a_run(command: F) -> F:
    """`command` takes the run it acts on as `[RUN]`, or as `--run-id ID` as before; it is
    called with one `run` (None: the command's default run).

    A run named that this folder (or --cwd's) does not hold is looked for in the
    machine's index of runs: found in another project folder, the command acts there,
    as with --cwd of that folder (`run_folder`).

    Put it right above the function, under the command's other options and arguments."""

    @functools.wraps(command)
    def merged(*args: Any, run: str | None, run_id_alias: str | None, **kwargs: Any) -> Any:
        run = one_run(run, run_id_alias)
        if run is not None and "cwd" in kwargs and kwargs.get("engine") is None:
            kwargs["cwd"] = run_folder(run, kwargs["cwd"])
        return command(*args, run=run, **kwargs)

    named = click.argument("run", required=False, metavar="[RUN]")(RUN_ID_ALIAS(merged))
    return cast("F", named)


def run_folder(run: str, cwd: Path | None) -> Path | None:
    """The --cwd a command on run `run` acts with: `cwd` when its folder holds the run,
    else the project folder the machine's index of runs knows it in (said on stderr);
    one line naming both places looked when neither has it."""
    from claudeloop.application.locating import project_of_run
    from claudeloop.cli.bootstrap import checked_run_id, project_runs, run_index
    from claudeloop.cli.params import working_directory

    here = working_directory(cwd)
    found = project_of_run(checked_run_id(run), runs=project_runs(here), index=run_index())
    if found == here:
        return cwd
    click.echo(f"claudeloop: run {run} is in {found} (from this machine's index of runs)", err=True)
    return found


def in_fleet(engine: str | None, cwd: Path | None, run: str | None, *, listed: bool) -> bool:
    """Whether the command reads the fleet (--engine) rather than a run directory."""
    if engine is None:
        return False
    if cwd is not None:
        raise UsageError("--engine finds the run in the fleet; give --cwd or --engine, not both")
    if run is None and not listed:
        raise UsageError(
            "--engine needs the run id, as RUN; `claudeloop status --engine` lists them"
        )
    return True
