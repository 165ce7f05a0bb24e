"""The fleet's commands: `fleet init`, `queue add|ls|cancel` and `worker`. Parsing
only: the work is in fleet.py, imported when a command is called (`status`, `logs`,
`stop` and `wind-down` with `--engine` are inspect_commands', and call it too).

`queue add` takes the run options of `run` itself, so the two cannot drift apart.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from claudeloop.cli.options import HelpGroup
from claudeloop.cli.params import DURATION, POSITIVE_INT, cwd_parameter

# Options of `run` that are about `run`'s own output or are set by the worker itself,
# and --notify: an apprise URL often holds a token, and a queued run's options are kept
# in the engine's database. A worker's runs notify through the configuration the worker
# reads (`notify` in config.toml, CLAUDELOOP_NOTIFY), as `run` and `resume` do.
_NOT_FORWARDED = {"cwd", "run_id", "as_json", "verbose", "quiet", "notify"}

ENGINE_HELP = (
    "Where the fleet keeps its queue and run records: postgresql://USER@HOST/DB "
    "(default: CLAUDELOOP_ENGINE, else a SQLite file in the user state directory)."
)
ENGINE_OPTION = click.option("--engine", default=None, metavar="URL", help=ENGINE_HELP)


def forwarded_options(run: click.Command) -> list[click.Parameter]:
    """The parameters of `run` a queued run passes on to it."""
    return [p for p in run.params if p.name not in _NOT_FORWARDED]


@click.group(
    "fleet",
    cls=HelpGroup,
    epilog="""\b
Examples:
  claudeloop fleet init
  claudeloop fleet init --engine postgresql://db.internal/fleet
""",
)
def fleet_group() -> None:
    """A fleet: a queue of runs and workers that take them (DBOS Transact)."""


@fleet_group.command(
    "init",
    epilog="""\b
Examples:
  claudeloop fleet init                 # SQLite under the state directory
  claudeloop fleet init --engine postgresql://db.internal/fleet
\b
Safe to repeat, and to run while workers start: set-up happens under a lock.
""",
)
@ENGINE_OPTION
def fleet_init(engine: str | None) -> None:
    """Create the fleet's tables in the engine's database."""
    from claudeloop.cli import fleet

    fleet.init(engine)


@click.group(
    "queue",
    cls=HelpGroup,
    epilog="""\b
Examples:
  claudeloop queue add PLAN.md --cwd ~/src/app --max-dollars 5
  claudeloop queue ls
  claudeloop queue cancel 20261201-101500-a1b2c3
""",
)
def queue_group() -> None:
    """The fleet's queue of runs: add, list, cancel. No worker needs to be running."""


def queue_add(run: click.Command) -> click.Command:
    """`queue add`, with the run options of `run`."""
    forwarded = forwarded_options(run)

    def add(**values: Any) -> None:
        """Queue a run on PLAN or on --prompt TEXT and print its run id; a worker takes it.

        The run options of `claudeloop run` are passed to the run, all but --notify
        (an apprise URL often holds a token): runs notify where the worker's
        configuration says (`notify` in config.toml, CLAUDELOOP_NOTIFY)."""
        from claudeloop.cli import fleet

        fleet.add(forwarded, values)

    return click.Command(
        "add",
        callback=add,
        params=[
            *forwarded,
            cwd_parameter(),
            click.Option(
                ["--checkout"],
                default=None,
                metavar="NAME",
                help="The run's directory is NAME under each worker's --work-root "
                "(the same project checked out on every machine); instead of --cwd.",
            ),
            click.Option(
                ["--repo"],
                default=None,
                metavar="URL",
                help="The run's directory is a clone of URL; its work travels through git "
                "(branch claudeloop/RUN_ID, pushed after each turn); instead of --cwd.",
            ),
            click.Option(
                ["--branch"],
                default=None,
                help="With --repo: the branch the run starts from (default: the remote's).",
            ),
            click.Option(["--run-id"], default=None, help="Name the run (default: time-based)."),
            click.Option(["--engine"], default=None, metavar="URL", help=ENGINE_HELP),
            click.Option(["--json", "as_json"], is_flag=True, help="Print the run id as JSON."),
        ],
        help=add.__doc__,
        epilog="""\b
Examples:
  claudeloop queue add PLAN.md --cwd ~/src/app
  claudeloop queue add --prompt "Fix the flaky tests" --cwd ~/src/api
  claudeloop queue add PLAN.md --run-id nightly --engine postgresql://db/fleet
  claudeloop queue add PLAN.md --checkout app     in each worker's --work-root
  claudeloop queue add PLAN.md --repo git@git.internal:app.git --branch main
""",
    )


@queue_group.command(
    "ls",
    epilog="""\b
Examples:
  claudeloop queue ls
  claudeloop queue ls --json | jq '.runs[] | select(.state == "running")'
""",
)
@ENGINE_OPTION
@click.option("--json", "as_json", is_flag=True, help="JSON for scripts, instead of lines.")
def queue_ls(engine: str | None, as_json: bool) -> None:
    """Every run of the queue, oldest first: run id, state, cwd, account, worker.

    States: queued, running, done, exit N (the run's exit code), cancelled, failed."""
    from claudeloop.cli import fleet

    fleet.ls(engine, as_json)


@queue_group.command(
    "cancel",
    epilog="""\b
Examples:
  claudeloop queue cancel 20261201-101500-a1b2c3
""",
)
@click.argument("run_id", metavar="RUN_ID")
@ENGINE_OPTION
def queue_cancel(run_id: str, engine: str | None) -> None:
    """Cancel a run: a queued one never starts, a running one is stopped at its next
    safe point (its run directory stays, `claudeloop resume` can go on with it)."""
    from claudeloop.cli import fleet

    fleet.cancel(run_id, engine)


@click.command(
    "worker",
    epilog="""\b
Examples:
  claudeloop worker
  claudeloop worker --slots 4 --per-account 2
  claudeloop worker --name second            a second worker on this machine
  CLAUDELOOP_ENGINE=postgresql://db.internal/fleet claudeloop worker
  claudeloop worker --work-root ~/src --lease 1m

Each run is driven by `claudeloop run` (or `claudeloop resume` when its run
directory already holds a record) as a child process in the run's directory.
A worker heart-beats in the engine; one silent longer than its own lease has
its runs taken over by another worker, which resumes each from the record and
session transcript kept in the engine. The database away (an outage, a
restart) fences no one: the runs pause and go on once it answers. A worker cut
off alone past its lease (paused, its network gone) is fenced: its runs end on
its machine and it starts again in place, taking new runs.
SIGTERM or Ctrl-C: no new run starts, the running ones stop at a safe point and
the worker exits 130; another worker takes them over.
--slots and --per-account are settings of the queue: the worker started last
sets them for every worker.
""",
)
@ENGINE_OPTION
@click.option(
    "--slots",
    type=POSITIVE_INT,
    default=1,
    show_default=True,
    help="Runs at once in each worker.",
)
@click.option(
    "--per-account",
    type=POSITIVE_INT,
    default=1,
    show_default=True,
    help="Runs of one account at once, across the fleet (the last worker started sets it).",
)
@click.option(
    "--name",
    default=None,
    help="Tells two workers of this machine apart; started again with its name, a "
    "worker resumes the runs it left unfinished (default: no name).",
)
@click.option(
    "--lease",
    type=DURATION,
    default="30s",
    show_default=True,
    help="How long a silent worker keeps its runs before another takes them over.",
)
@click.option(
    "--work-root",
    type=click.Path(path_type=Path),
    default=None,
    help="Where this worker finds the runs queued with --checkout NAME.",
)
def worker(
    engine: str | None,
    slots: int,
    per_account: int,
    name: str | None,
    *,
    lease: timedelta,
    work_root: Path | None,
) -> None:
    """Take runs from the fleet's queue and drive them until stopped."""
    from claudeloop.cli import fleet

    fleet.worker(engine, slots, per_account, name, lease=lease, work_root=work_root)


def register(cli: click.Group) -> None:
    """Add the fleet's commands to `cli`; `queue add` takes `run`'s run options."""
    from claudeloop.cli.run_commands import run

    queue_group.add_command(queue_add(run))
    for command in (fleet_group, queue_group, worker):
        cli.add_command(command)
