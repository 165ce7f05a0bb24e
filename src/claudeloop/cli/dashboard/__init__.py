"""`claudeloop dashboard`: every run of this machine (and of a fleet) in a browser, live.

Starlette and uvicorn are imported only by this command; the pages are drawn by the
server (app.py, pages.py, svg.py) from the use cases of application/dashboard.py, on
the ports the composition root fills.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
import ssl
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import click

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class Tls:
    """The certificate and key the dashboard serves https with (`--certfile`)."""

    certfile: Path
    keyfile: Path


def exposure(host: str, port: int, *, tls: bool = False) -> str | None:
    """What listening on `host` exposes, in a line; None for a loopback address."""
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        if host == "localhost":
            return None
    reach = (
        f"listening on {host}:{port}, not only this machine: whoever reaches it and has "
        "the token sees every run's plan, events and spend and can stop them"
    )
    if tls:
        return f"{reach}; over https, the token never travels in clear"
    return (
        f"{reach}, over plain http (the token travels in clear); give it a certificate "
        "(--certfile, --keyfile), or bind 127.0.0.1 and use an SSH tunnel instead"
    )


def draw_qr(url: str, out: TextIO) -> None:
    """`url` as a QR code of the terminal's characters, for a phone's camera."""
    import segno

    segno.make(url, error="m").terminal(out=out, compact=True)


def serve(
    *,
    engine: str | None,
    host: str,
    port: int,
    qr: bool = False,
    tls: Tls | None = None,
    phone_url: str | None = None,
) -> None:
    """Serve the dashboard until Ctrl-C; print its URL, the token in it (`phone_url`:
    the address the person reaches it at, its sign-in URL said too; `qr`: the sign-in
    URL drawn as a QR code)."""
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
    config = uvicorn.Config(
        dashboard_app(sources, token, port=bound),
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
        lifespan="off",
        ssl_certfile=str(tls.certfile) if tls else None,
        ssl_keyfile=str(tls.keyfile) if tls else None,
    )
    try:
        config.load()  # the certificate read now: a wrong one is a line, not a traceback
    except (ssl.SSLError, OSError) as error:
        listener.close()
        reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or error
        raise UsageError(
            f"--certfile {tls.certfile if tls else ''} --keyfile {tls.keyfile if tls else ''}: "
            f"not a PEM certificate and its private key ({reason})"
        ) from None
    warning = exposure(host, bound, tls=tls is not None)
    if warning is not None:
        click.echo(f"claudeloop: warning: {warning}", err=True)
    shown = f"[{host}]" if ":" in host else host
    scheme = "https" if tls else "http"
    sign_in = f"{scheme}://{shown}:{bound}/?token={token}"
    click.echo(f"claudeloop dashboard: {sign_in}")
    if phone_url:
        sign_in = f"{phone_url.rstrip('/')}/?token={token}"
        click.echo(f"from your phone (dashboard_url): {sign_in}")
    if qr:
        draw_qr(sign_in, sys.stdout)
    click.echo("(Ctrl-C stops it; a new start makes a new token, signing every browser out)")
    uvicorn.Server(config).run(sockets=[listener])
