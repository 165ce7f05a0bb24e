"""The fleet's commands: `fleet init`, `queue add|ls|cancel`, `worker`; and `status`,
`logs`, `stop` and `wind-down` with `--engine`, a run of the fleet from any machine.

Parsing and rendering only: each command's work is in application/fleet.py, on the
`Fleet` and `WorkerHost` ports the composition root fills from adapters/fleet when a
fleet command runs (dbos is the `fleet` extra, and `claudeloop run` never loads it).
`queue add` takes the run options of `run` itself, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from claudeloop.application.durations import duration_said
from claudeloop.application.errors import UsageError
from claudeloop.cli.output import print_json
from claudeloop.cli.params import DURATION, POSITIVE_INT, cwd_parameter
from claudeloop.domain.budget import money

if TYPE_CHECKING:
    from claudeloop.application.fleet import FleetRun
    from claudeloop.application.ports import Fleet
    from claudeloop.domain.loop import ControlCommand

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


def _fleet(option: str | None) -> Fleet:
    from claudeloop.cli.bootstrap import fleet_of

    return fleet_of(option)


def init(engine: str | None) -> None:
    """Create the fleet's tables (DBOS's and the capacity board's)."""
    chosen = _fleet(engine)
    chosen.set_up()
    click.echo(f"fleet ready: {chosen.masked_url}")


def _text(value: Any) -> str:
    from claudeloop.application.durations import format_duration

    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, tuple):  # --on-limit LIMIT=ACTION, already rendered
        return "=".join(str(part) for part in value)
    return str(value)


def run_arguments(params: list[click.Parameter], values: dict[str, Any]) -> list[str]:
    """The command line of `claudeloop run` that gives these parsed values again."""
    arguments: list[str] = []
    for param in params:
        value = values.get(param.name or "")
        if value is None or value == ():
            continue
        if isinstance(param, click.Argument):
            arguments.append(_text(value))
            continue
        assert isinstance(param, click.Option)
        name = max(param.opts, key=len)
        if param.count:
            arguments += [name] * int(value)
        elif param.is_flag and param.secondary_opts:
            arguments.append(name if value else max(param.secondary_opts, key=len))
        elif param.is_flag:
            if value:
                arguments.append(name)
        else:
            for item in value if param.multiple else (value,):
                arguments += [name, _text(item)]
    return arguments


def forwarded_options(run: click.Command) -> list[click.Parameter]:
    """The parameters of `run` a queued run passes on to it."""
    return [p for p in run.params if p.name not in _NOT_FORWARDED]


def add(forwarded: list[click.Parameter], values: dict[str, Any]) -> None:
    from claudeloop.application.fleet import InCheckout, InClone, InDirectory, RunPlace, queue_run
    from claudeloop.cli.bootstrap import queue_support

    chosen = _fleet(values.pop("engine"))
    as_json = bool(values.pop("as_json"))
    checkout, repo, branch = values.pop("checkout"), values.pop("repo"), values.pop("branch")
    given_cwd: Path | None = values.pop("cwd")
    plan, prompt = values.get("plan"), values.get("prompt")
    if plan is None and prompt is None:
        raise UsageError("say what the run is to do: a PLAN file, or --prompt TEXT")
    if plan is not None and prompt is not None:
        raise UsageError(
            "give a PLAN file or --prompt TEXT, not both: a plan's checklist is the task"
        )
    if branch is not None and repo is None:
        raise UsageError("--branch names a branch of --repo URL; give --repo too")
    place: RunPlace
    if checkout is not None or repo is not None:
        # A run on the workers' machines: nothing of it is looked for here.
        if given_cwd is not None or (checkout and repo):
            raise UsageError("give one of --cwd PATH, --checkout NAME and --repo URL")
        place = InClone(repo, branch) if repo is not None else InCheckout(checkout)
    else:
        cwd = (given_cwd or Path.cwd()).expanduser().resolve()
        if not cwd.is_dir():
            raise UsageError(f"--cwd {cwd}: not a directory; give the run's working directory")
        if plan is not None:
            # As `run` finds it: from here, else in the run's directory.
            located = plan.expanduser()
            if not located.is_absolute() and not located.exists() and (cwd / located).exists():
                located = cwd / located
            if not located.is_file():
                raise UsageError(f"plan file {plan}: not found (nor in {cwd})")
            values["plan"] = plan = located.resolve()
        place = InDirectory(cwd)
    queued = queue_run(
        chosen,
        queue_support(),
        place=place,
        plan=plan,
        run_id=values.pop("run_id"),
        model=values.get("model"),
        arguments=run_arguments(forwarded, values),
    )
    if as_json:
        print_json({"run_id": queued.run_id, "cwd": queued.cwd, "account": queued.account})
    else:
        click.echo(queued.run_id)


def ls(engine: str | None, as_json: bool) -> None:
    from claudeloop.application.fleet import queue_listing

    chosen = _fleet(engine)
    queued = queue_listing(chosen)
    if as_json:
        print_json({"runs": [run.to_json() for run in queued]})
        return
    if not queued:
        click.echo(f"no runs in the queue of {chosen.masked_url}")
        return
    rows = [("RUN", "STATE", "CWD", "ACCOUNT", "WORKER")] + [
        (run.run_id, run.state, run.cwd, run.account, run.worker or "-") for run in queued
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
        click.echo("  ".join([*cells, row[4]]))


def cancel(run_id: str, engine: str | None) -> None:
    from claudeloop.application.fleet import cancel as cancel_run

    before = cancel_run(_fleet(engine), run_id)
    match before.state:
        case "queued":
            click.echo(f"run {run_id}: cancelled; it will not start")
        case "running":
            click.echo(f"run {run_id}: cancelled; its worker stops it at the next safe point")
        case ended:
            click.echo(f"run {run_id}: already ended ({ended})")


def worker(
    engine: str | None,
    slots: int,
    per_account: int,
    name: str | None,
    *,
    lease: timedelta,
    work_root: Path | None,
) -> None:
    from claudeloop.application.fleet import serve_worker
    from claudeloop.cli.bootstrap import worker_host

    host = worker_host(engine)
    code = serve_worker(
        host,
        slots=slots,
        per_account=per_account,
        name=name,
        lease=lease,
        lease_shown=_text(lease),
        work_root=work_root.expanduser().resolve() if work_root is not None else None,
        say=lambda line: click.echo(f"claudeloop: {line}", err=True),
    )
    host.exit_now(code)


def register(cli: click.Group, run: click.Command) -> None:
    """Add the fleet's commands to `cli`; `queue add` takes `run`'s run options."""
    forwarded = forwarded_options(run)

    @cli.group(
        "fleet",
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
        init(engine)

    @cli.group(
        "queue",
        epilog="""\b
Examples:
  claudeloop queue add PLAN.md --cwd ~/src/app --max-dollars 5
  claudeloop queue ls
  claudeloop queue cancel 20261201-101500-a1b2c3
""",
    )
    def queue_group() -> None:
        """The fleet's queue of runs: add, list, cancel. No worker needs to be running."""

    def queue_add(**values: Any) -> None:
        """Queue a run on PLAN or on --prompt TEXT and print its run id; a worker takes it.

        The run options of `claudeloop run` are passed to the run, all but --notify
        (an apprise URL often holds a token): runs notify where the worker's
        configuration says (`notify` in config.toml, CLAUDELOOP_NOTIFY)."""
        add(forwarded, values)

    add_command = click.Command(
        "add",
        callback=queue_add,
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
        help=queue_add.__doc__,
        epilog="""\b
Examples:
  claudeloop queue add PLAN.md --cwd ~/src/app
  claudeloop queue add --prompt "Fix the flaky tests" --cwd ~/src/api
  claudeloop queue add PLAN.md --run-id nightly --engine postgresql://db/fleet
  claudeloop queue add PLAN.md --checkout app     in each worker's --work-root
  claudeloop queue add PLAN.md --repo git@git.internal:app.git --branch main
""",
    )
    queue_group.add_command(add_command)

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
        ls(engine, as_json)

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
        cancel(run_id, engine)

    @cli.command(
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
    def worker_command(
        engine: str | None,
        slots: int,
        per_account: int,
        name: str | None,
        *,
        lease: timedelta,
        work_root: Path | None,
    ) -> None:
        """Take runs from the fleet's queue and drive them until stopped."""
        worker(engine, slots, per_account, name, lease=lease, work_root=work_root)


# status, logs, stop and wind-down with --engine: a run of the fleet, from any machine


def _look_up(chosen: Fleet, run_id: str, asked: str) -> FleetRun:
    from claudeloop.application.fleet import look_up, require
    from claudeloop.cli.bootstrap import checked_run_id

    require(chosen, asked)
    return look_up(chosen, checked_run_id(run_id))


def remote_status(engine: str, run_id: str | None, as_json: bool) -> None:
    """`status [RUN] --engine [URL]`."""
    from claudeloop.application.fleet import status_view
    from claudeloop.cli.bootstrap import shown_masked
    from claudeloop.cli.inspect import show_status

    chosen = _fleet(engine or None)
    if run_id is None:
        fleet_status(chosen, as_json)
        return
    found = _look_up(chosen, run_id, "status --engine")
    if found.stored is not None and not found.stored.readable:
        raise UsageError(f"run {run_id}: the record its worker stored cannot be read")
    view = status_view(found, now=datetime.now(UTC), mask=shown_masked())
    if view is None:
        if as_json:
            print_json(
                {"run_id": run_id, "phase": None, "state": found.state, "worker": found.worker}
            )
        else:
            held = f"; worker {found.worker}" if found.worker else ""
            click.echo(f"run {run_id}: {found.state}, no record yet{held}")
        return
    if as_json:
        print_json(view.to_json())
        return
    show_status(view.status, f"worker {view.worker or '-'} ({view.state})")


def remote_logs(engine: str, run_id: str, follow: bool, as_json: bool) -> None:
    """`logs RUN --engine [URL] [-f]`: the events the run's worker stored."""
    import time

    from claudeloop.application.fleet import events
    from claudeloop.cli.bootstrap import shown_masked
    from claudeloop.cli.inspect import print_event_lines

    chosen = _fleet(engine or None)
    found = _look_up(chosen, run_id, "logs --engine")
    if not found.has_record and not as_json:
        # Said, as status says it, rather than an empty output that reads like an error.
        to_come = ": its events follow once a worker starts it" if follow else ""
        click.echo(f"run {run_id}: {found.state}, no events yet{to_come}", err=True)
    lines = events(chosen, found, follow=follow, sleep=time.sleep)
    print_event_lines(lines, f"the events of run {run_id}", as_json=as_json, mask=shown_masked())


def remote_control(engine: str, run_id: str, command: ControlCommand, as_json: bool) -> None:
    """`stop` or `wind-down RUN --engine [URL]`: asked through the engine, the
    run's worker writes it into the run's control file."""
    from claudeloop.application.fleet import control
    from claudeloop.application.inspection import takes_effect
    from claudeloop.cli.bootstrap import checked_run_id

    found = control(_fleet(engine or None), checked_run_id(run_id), command)
    if as_json:
        print_json({"run_id": run_id, "worker": found.worker, "command": command.value})
        return
    click.echo(
        f"claudeloop: asked run {run_id} (worker {found.worker or '-'}) to "
        f"{command.value.replace('-', ' ')}: "
        f"{takes_effect(command)}"
    )


def fleet_status(chosen: Fleet, as_json: bool) -> None:
    """Every run of the fleet, newest first, and the account's capacity."""
    from claudeloop.application.fleet import overview
    from claudeloop.cli.bootstrap import shown_masked

    seen = overview(chosen, now=datetime.now(UTC), mask=shown_masked())
    rows = seen.runs
    capacity: list[dict[str, Any]] = [
        {
            "account": s.account,
            "standing": s.standing,
            "at": s.at,
            "source": s.source,
            "writer": s.writer,
            "resets_at": s.resets_at,
        }
        for s in seen.capacity
    ]
    if as_json:
        print_json({"engine": chosen.masked_url, "runs": rows, "capacity": capacity})
        return
    if not rows:
        click.echo(f"no runs in the fleet of {chosen.masked_url}")
    else:
        lines = _table_lines(
            [("RUN", "STATE", "PLAN", "SPEND", "PROBE", "WORKER")]
            + [_fleet_row(row) for row in rows]
        )
        click.echo(lines[0])
        for line, row in zip(lines[1:], rows, strict=True):
            click.echo(line)
            # Under each run, its turns and money in the words `status`, `runs` and
            # `report` say them, the probes' share apart (a summary a worker of before
            # stored has none of these words). A line each, so neither is cut at 80.
            said = row.get("said") or {}
            if said.get("turns"):
                click.echo(f"  turns {said['turns']}")
                click.echo(f"  spend {said['dollars']}")
    if capacity:
        click.echo("")
        _table(
            [("ACCOUNT", "CAPACITY", "SEEN", "BY", "RESETS")]
            + [
                (
                    s["account"],
                    s["standing"],
                    _minute(s["at"]),
                    s["source"],
                    _minute(s["resets_at"]) if s["resets_at"] else "-",
                )
                for s in capacity
            ]
        )


def _table(rows: Sequence[tuple[str, ...]]) -> None:
    for line in _table_lines(rows):
        click.echo(line)


def _table_lines(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Columns as wide as their widest cell; the last one as long as it is, within 80."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for cells in rows:
        line = "  ".join(c.ljust(w) for c, w in zip(cells[:-1], widths, strict=False))
        lines.append(_fit(f"{line}  {cells[-1]}"))
    return lines


def _fleet_row(row: dict[str, Any]) -> tuple[str, str, str, str, str, str]:
    # A running run by its phase (waiting, probing...); an ended one by how it ended.
    state = row["phase"] if row["state"] == "running" and row["phase"] else row["state"]
    plan = f"{row['plan']['done']}/{row['plan']['total']}" if row["plan"] else "-"
    spend = money(row["dollars"]) if row["dollars"] is not None else "-"
    seconds = row["next_probe_in_seconds"]
    probe = "-" if seconds is None else duration_said(seconds)
    return (row["run_id"], state, plan, spend, probe, row["worker"] or "-")


def _minute(instant: str) -> str:
    return instant[:16].replace("T", " ")


def _fit(line: str) -> str:
    return line if len(line) <= 80 else line[:79] + "…"
