"""`probe-now`, `raise` and `note`: a request into a live run's control file, and one
line (or a JSON object) saying what it will do."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import assert_never

import click

from claudeloop.application.errors import UsageError
from claudeloop.application.steering import Sent, add_note, probe_now
from claudeloop.application.steering import raise_caps as ask_caps
from claudeloop.cli.output import print_json
from claudeloop.cli.params import working_directory
from claudeloop.domain.steering import AddNote, Cap, ProbeNow, RaiseCap, Steer, describe_cap


def probe(*, cwd: Path | None, run_id: str | None, engine: str | None, as_json: bool) -> None:
    if engine is not None:
        _remote(engine, cwd, run_id, [ProbeNow()], as_json=as_json, verb="probe-now")
        return
    from claudeloop.cli.bootstrap import project_runs

    _said(probe_now(project_runs(working_directory(cwd)), run_id), as_json)


def raise_caps(
    *,
    cwd: Path | None,
    run_id: str | None,
    caps: dict[Cap, float],
    engine: str | None,
    as_json: bool,
) -> None:
    if engine is not None:
        asked: list[Steer] = [RaiseCap(cap, to) for cap, to in caps.items()]
        _remote(engine, cwd, run_id, asked, as_json=as_json, verb="raise")
        return
    from claudeloop.cli.bootstrap import project_runs

    runs = project_runs(working_directory(cwd))
    sent = ask_caps(runs, run_id, caps, now=datetime.now(UTC))
    if as_json:
        print_json([_json(each) for each in sent])
        return
    for each in sent:
        _said(each, False)


def note(
    *, cwd: Path | None, run_id: str | None, text: str, engine: str | None, as_json: bool
) -> None:
    if engine is not None:
        if not text.strip():
            raise UsageError("the note is empty; give the text to say to the next turn")
        _remote(engine, cwd, run_id, [AddNote(text)], as_json=as_json, verb="note")
        return
    from claudeloop.cli.bootstrap import project_runs

    _said(add_note(project_runs(working_directory(cwd)), run_id, text), as_json)


def _remote(
    engine: str,
    cwd: Path | None,
    run_id: str | None,
    asked: list[Steer],
    *,
    as_json: bool,
    verb: str,
) -> None:
    """The requests asked of a fleet's run through its engine: its worker writes them
    into the run's control file."""
    from claudeloop.application.fleet import steer
    from claudeloop.cli.bootstrap import checked_run_id, fleet_of

    if cwd is not None:
        raise UsageError("--engine finds the run in the fleet; give --cwd or --engine, not both")
    if run_id is None:
        raise UsageError(
            f"--engine needs the run's id: claudeloop {verb} RUN --engine; "
            "`claudeloop status --engine` lists them"
        )
    found = steer(fleet_of(engine or None), checked_run_id(run_id), asked, now=datetime.now(UTC))
    worker = found.worker or "-"
    if as_json:
        print_json({"run_id": run_id, "worker": worker, "asked": [_words(a) for a in asked]})
        return
    for each in asked:
        click.echo(
            f"claudeloop: asked run {run_id} (worker {worker}) through the engine: "
            f"{_words(each)}; its worker passes it on, the run applies it at a safe point"
        )


def _words(asked: Steer) -> str:
    match asked:
        case ProbeNow():
            return "probe now"
        case RaiseCap(cap=cap, to=to):
            return f"{cap.value} {describe_cap(cap, to)}"
        case AddNote():
            return "a note for the next turn"
        case _:
            assert_never(asked)


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
    if sent.pid is None:  # nothing was sent: what it says names the run
        click.echo(f"claudeloop: {sent.will}")
        return
    click.echo(f"claudeloop: asked run {sent.run_id} (pid {sent.pid}): {sent.will}")
