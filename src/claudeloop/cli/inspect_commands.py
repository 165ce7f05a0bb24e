"""The commands that look at runs or end one: `status`, `logs`, `runs`, `sessions`,
`stop`, `wind-down`, `report` and `dashboard`. Parsing only: the work is in inspect.py,
report.py, fleet.py (a run of the fleet, --engine) and dashboard/, imported when a
command is called."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from claudeloop.application.errors import UsageError
from claudeloop.cli.options import FLEET_SELECTION, JSON_OPTION, in_fleet, names_a_run
from claudeloop.cli.params import CWD_OPTION, DURATION, POSITIVE_INT

if TYPE_CHECKING:
    from datetime import timedelta

    from claudeloop.domain.loop import ControlCommand

# What RUN means to the commands that act on a run of the working directory.
_DEFAULT_RUN = """\b
RUN: default the run a live driver is driving, else the most recent;
--run-id RUN, the older form, is read too.
"""


@click.command(
    epilog="""\b
Examples:
  claudeloop status
  claudeloop status 20261130-101500-a1b2c3 --json
  claudeloop status --engine                 every run of the fleet
  claudeloop status nightly --engine postgresql://db.internal/fleet
"""
    + _DEFAULT_RUN
)
@CWD_OPTION
@FLEET_SELECTION
@JSON_OPTION
@names_a_run
def status(cwd: Path | None, run: str | None, engine: str | None, as_json: bool) -> None:
    """Phase, turns, spend, capacity, next probe and plan progress of a run.

    With --engine and no RUN: every run of the fleet, and the capacity of its
    accounts (on PostgreSQL)."""
    if in_fleet(engine, cwd, run, listed=True):
        from claudeloop.cli import fleet

        fleet.remote_status(engine or "", run, as_json)
        return
    from claudeloop.cli import inspect

    inspect.status(cwd=cwd, run_id=run, as_json=as_json)


@click.command(
    epilog="""\b
Examples:
  claudeloop logs
  claudeloop logs -f
  claudeloop logs --json | jq .type
  claudeloop logs nightly --engine -f     a run of the fleet
"""
    + _DEFAULT_RUN
)
@CWD_OPTION
@FLEET_SELECTION
@click.option("-f", "--follow", is_flag=True, help="Keep printing events until the run ends.")
@click.option("--json", "as_json", is_flag=True, help="The raw JSON lines.")
@names_a_run
def logs(
    cwd: Path | None, run: str | None, engine: str | None, follow: bool, as_json: bool
) -> None:
    """The run's events as readable lines."""
    if in_fleet(engine, cwd, run, listed=False):
        from claudeloop.cli import fleet

        assert run is not None
        fleet.remote_logs(engine or "", run, follow, as_json)
        return
    from claudeloop.cli import inspect

    inspect.logs(cwd=cwd, run_id=run, follow=follow, as_json=as_json)


@click.command(
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
            raise UsageError("--all lists the runs of every directory; drop --cwd")
        inspect.machine_runs(as_json=as_json)
        return
    inspect.runs(cwd=cwd, as_json=as_json)


@click.command(
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


@click.command(
    epilog="""\b
Examples:
  claudeloop stop
  claudeloop stop 20261130-101500-a1b2c3
  claudeloop stop nightly --engine      its worker passes it on
"""
    + _DEFAULT_RUN
)
@CWD_OPTION
@FLEET_SELECTION
@JSON_OPTION
@names_a_run
def stop(cwd: Path | None, run: str | None, engine: str | None, as_json: bool) -> None:
    """Stop the live run at the next safe point (at once during a wait); it exits 130."""
    from claudeloop.domain.loop import ControlCommand

    _control(ControlCommand.STOP, cwd=cwd, run=run, engine=engine, as_json=as_json)


@click.command(
    "wind-down",
    epilog="""\b
Examples:
  claudeloop wind-down
  claudeloop wind-down nightly --engine
"""
    + _DEFAULT_RUN,
)
@CWD_OPTION
@FLEET_SELECTION
@JSON_OPTION
@names_a_run
def wind_down(cwd: Path | None, run: str | None, engine: str | None, as_json: bool) -> None:
    """Finish the current turn, write the handoff summary, exit 75."""
    from claudeloop.domain.loop import ControlCommand

    _control(ControlCommand.WIND_DOWN, cwd=cwd, run=run, engine=engine, as_json=as_json)


def _control(
    command: ControlCommand,
    *,
    cwd: Path | None,
    run: str | None,
    engine: str | None,
    as_json: bool,
) -> None:
    """Hands `stop` or `wind-down` to the run's worker in a fleet, else to its directory."""
    if in_fleet(engine, cwd, run, listed=False):
        from claudeloop.cli import fleet

        assert run is not None
        fleet.remote_control(engine or "", run, command, as_json)
        return
    from claudeloop.cli import inspect

    inspect.control(cwd=cwd, run_id=run, command=command, as_json=as_json)


@click.command(
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
        raise UsageError("--all reports the runs of every directory; drop --cwd")
    reporting.report(cwd=cwd, since=since, as_json=as_json, html=html, every=every)


@click.command(
    short_help="A live web page of every run of this machine.",
    epilog="""\b
Examples:
  claudeloop dashboard                  this machine's runs, on 127.0.0.1
  claudeloop dashboard --port 8420
  claudeloop dashboard --engine         the fleet's runs too
  claudeloop dashboard --host 0.0.0.0   reachable by others (it warns)
  claudeloop dashboard --qr             the sign-in URL as a QR code
  claudeloop dashboard --host 100.64.0.1 --certfile b.crt --keyfile b.key
                                        https, on a tailnet's address
""",
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
@click.option(
    "--qr",
    is_flag=True,
    help="Also draw the sign-in URL as a QR code, to open it on a phone (the "
    "dashboard_url address when set).",
)
@click.option(
    "--certfile",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Serve https with this PEM certificate (with --keyfile), e.g. from `tailscale cert`.",
)
@click.option(
    "--keyfile",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The private key of --certfile (PEM).",
)
def dashboard(
    *,
    engine: str | None,
    port: int,
    host: str,
    qr: bool,
    certfile: Path | None,
    keyfile: Path | None,
) -> None:
    """A live web page of every run of this machine: phase, waits, plan, spend,
    timeline, events, the accounts' capacity, and stop and wind-down buttons.

    It prints its URL, with a token every request needs, and, when dashboard_url is
    set (claudeloop.toml, the user config or CLAUDELOOP_DASHBOARD_URL), the same at
    that address. Opening it signs the browser in for 7 days or until the dashboard
    stops: each start makes a new token. Ctrl-C stops it.
    """
    from claudeloop.application.settings import DASHBOARD_URL
    from claudeloop.cli.bootstrap import configuration
    from claudeloop.cli.dashboard import Tls, serve

    if (certfile is None) != (keyfile is None):
        raise UsageError("--certfile and --keyfile: give both, or neither (plain http)")
    tls = Tls(certfile, keyfile) if certfile is not None and keyfile is not None else None
    phone_url = configuration(Path.cwd(), {}).get(DASHBOARD_URL)
    serve(engine=engine, host=host, port=port, qr=qr, tls=tls, phone_url=phone_url)


def register(cli: click.Group) -> None:
    """Add the commands that look at runs, or stop one, to `cli`."""
    for command in (status, logs, runs, sessions, stop, wind_down, report, dashboard):
        cli.add_command(command)
