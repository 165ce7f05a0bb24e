"""`claudeloop dashboard`: every run of this machine (and of a fleet) in a browser, live.

Starlette and uvicorn are imported only by this command; the pages are drawn by the
server (app.py, pages.py, svg.py) from the use cases of application/dashboard.py, on
the ports the composition root fills.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket

import click

LOOPBACK = "127.0.0.1"


def exposure(host: str, port: int) -> str | None:
    """What listening on `host` exposes, in a line; None for a loopback address."""
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        if host == "localhost":
            return None
    return (
        f"listening on {host}:{port}, not only this machine: whoever reaches it and has "
        "the token sees every run's plan, events and spend and can stop them, over plain "
        "http (the token travels in clear); bind 127.0.0.1 and use an SSH tunnel instead"
    )


def serve(*, engine: str | None, host: str, port: int) -> None:
    """Serve the dashboard until Ctrl-C; print its URL, the token in it."""
    from claudeloop.application.errors import UsageError

    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)  # a browser opening the printed URL at once waits, not refused
    except OSError as error:  # in use, not this machine's, no such name
        raise UsageError(f"--host {host} --port {port}: cannot listen ({error.strerror})") from None
    except UnicodeError:
        raise UsageError(f"--host {host!r}: not a host name or address") from None
    import uvicorn  # after the port is ours: a mistake is told without loading it

    from claudeloop.application.dashboard import machine_rows
    from claudeloop.cli.bootstrap import (
        account_boards,
        every_project_runs,
        fleet_of,
        run_branches,
        run_index,
        run_masks,
    )
    from claudeloop.cli.dashboard.app import Sources, dashboard_app

    try:
        # A bare --engine: CLAUDELOOP_ENGINE, else the local one.
        fleet = fleet_of(engine or None) if engine is not None else None
    except UsageError:
        listener.close()
        raise
    sources = Sources(
        index=run_index(),
        runs_of=every_project_runs(),
        boards=account_boards(),
        mask=run_masks(),
        fleet=fleet,
        branches=run_branches(),
    )
    # Every record decoded once before the URL is printed: the first page then costs
    # what the next does (the run directories keep what they decoded).
    machine_rows(sources.index, sources.runs_of, now=sources.now(), mask=sources.mask)
    bound = listener.getsockname()[1]
    token = secrets.token_urlsafe(24)
    warning = exposure(host, bound)
    if warning is not None:
        click.echo(f"claudeloop: warning: {warning}", err=True)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"claudeloop dashboard: http://{shown}:{bound}/?token={token}")
    click.echo("(Ctrl-C stops it)")
    config = uvicorn.Config(
        dashboard_app(sources, token, port=bound),
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
        lifespan="off",
    )
    uvicorn.Server(config).run(sockets=[listener])
