"""`probe-now`, `raise` and `note`: a request into a live run's control file, and one
line (or a JSON object) saying what it will do."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from claudeloop.application.steering import Sent, add_note, probe_now
from claudeloop.application.steering import raise_caps as ask_caps
from claudeloop.cli.output import print_json
from claudeloop.cli.params import working_directory
from claudeloop.domain.steering import Cap


def probe(*, cwd: Path | None, run_id: str | None, as_json: bool) -> None:
    from claudeloop.cli.bootstrap import project_runs

    _said(probe_now(project_runs(working_directory(cwd)), run_id), as_json)


def raise_caps(
    *, cwd: Path | None, run_id: str | None, caps: dict[Cap, float], as_json: bool
) -> None:
    from claudeloop.cli.bootstrap import project_runs

    runs = project_runs(working_directory(cwd))
    sent = ask_caps(runs, run_id, caps, now=datetime.now(UTC))
    if as_json:
        print_json([_json(each) for each in sent])
        return
    for each in sent:
        _said(each, False)


def note(*, cwd: Path | None, run_id: str | None, text: str, as_json: bool) -> None:
    from claudeloop.cli.bootstrap import project_runs

    _said(add_note(project_runs(working_directory(cwd)), run_id, text), as_json)


def _json(sent: Sent) -> dict[str, object]:
    return {
        "run_id": sent.run_id,
        "pid": sent.pid,
        "asked": type(sent.asked).__name__,
        "effective": sent.effective,
        "will": sent.will,
    }


def _said(sent: Sent, as_json: bool) -> None:
    if as_json:
        print_json(_json(sent))
        return
    click.echo(f"claudeloop: asked run {sent.run_id} (pid {sent.pid}): {sent.will}")
