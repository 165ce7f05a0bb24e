"""The work of the fleet's commands (declared in fleet_commands.py): `fleet init`,
`queue add|ls|cancel`, `worker`; and of `status`, `logs`, `stop` and `wind-down` with
`--engine`, a run of the fleet from any machine.

Parsing and rendering only: each command's rules are in application/fleet.py, on the
`Fleet` and `WorkerHost` ports the composition root fills from adapters/fleet when a
fleet command runs (dbos is the `fleet` extra, and `claudeloop run` never loads it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from claudeloop.application.durations import duration_said
from claudeloop.application.errors import UsageError
from claudeloop.cli.output import print_json
from claudeloop.cli.params import located, working_directory
from claudeloop.domain.budget import money

if TYPE_CHECKING:
    from claudeloop.application.fleet import FleetRow, FleetRun
    from claudeloop.application.ports import Fleet
    from claudeloop.domain.loop import ControlCommand


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


def add(forwarded: list[click.Parameter], values: dict[str, Any]) -> None:
    from claudeloop.application.fleet import InDirectory, queue_run, queued_place
    from claudeloop.cli.bootstrap import queue_support

    chosen = _fleet(values.pop("engine"))
    as_json = bool(values.pop("as_json"))
    plan: Path | None = values.get("plan")
    place = queued_place(
        plan=plan,
        prompt=values.get("prompt"),
        cwd=values.pop("cwd"),
        checkout=values.pop("checkout"),
        repo=values.pop("repo"),
        branch=values.pop("branch"),
        directory=working_directory,
    )
    if plan is not None and isinstance(place, InDirectory):
        found = located(plan, place.cwd)
        if not found.is_file():
            raise UsageError(f"plan file {plan}: not found (nor in {place.cwd})")
        values["plan"] = plan = found.resolve()
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
    for line in _aligned(rows):  # as long as they are: no cwd is cut
        click.echo(line)


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
    if as_json:
        print_json(
            {
                "engine": chosen.masked_url,
                "runs": [row.to_json() for row in rows],
                "capacity": [asdict(account) for account in seen.capacity],
            }
        )
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
            if row.said_turns:
                click.echo(f"  turns {row.said_turns}")
                click.echo(f"  spend {row.said_dollars}")
    if seen.capacity:
        click.echo("")
        _table(
            [("ACCOUNT", "CAPACITY", "SEEN", "BY", "RESETS")]
            + [
                (
                    s.account,
                    s.standing,
                    _minute(s.at),
                    s.source,
                    _minute(s.resets_at) if s.resets_at else "-",
                )
                for s in seen.capacity
            ]
        )


def _table(rows: Sequence[tuple[str, ...]]) -> None:
    for line in _table_lines(rows):
        click.echo(line)


def _table_lines(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Columns as wide as their widest cell; the last one as long as it is, within 80."""
    return [_fit(line) for line in _aligned(rows)]


def _aligned(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Columns as wide as their widest cell, two spaces apart; the last as long as it is."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(c.ljust(w) for c, w in zip(cells[:-1], widths, strict=False)), cells[-1]])
        for cells in rows
    ]


def _fleet_row(row: FleetRow) -> tuple[str, str, str, str, str, str]:
    # A running run by its phase (waiting, probing...); an ended one by how it ended.
    state = row.phase if row.state == "running" and row.phase else row.state
    plan = f"{row.plan[0]}/{row.plan[1]}" if row.plan else "-"
    spend = money(row.dollars) if row.dollars is not None else "-"
    seconds = row.next_probe_in_seconds
    probe = "-" if seconds is None else duration_said(seconds)
    return (row.run_id, state, plan, spend, probe, row.worker or "-")


def _minute(instant: str) -> str:
    return instant[:16].replace("T", " ")


def _fit(line: str) -> str:
    return line if len(line) <= 80 else line[:79] + "…"
