"""`claudeloop export`: a run's events as CSV, the rows application/export.py reads.

Parsing and rendering only. The events are written as events.jsonl holds them (masked
as they were written); no secret is read to export them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from claudeloop.application.errors import UsageError
from claudeloop.cli.options import names_a_run
from claudeloop.cli.output import warn
from claudeloop.cli.params import CWD_OPTION, working_directory

if TYPE_CHECKING:
    from collections.abc import Iterable

    from claudeloop.application.export import EventRow

EPILOG = """\b
Examples:
  claudeloop export                   the live run, else the newest
  claudeloop export 20261130-101500-a1b2c3 --output run.csv
  claudeloop export --cwd ~/src/app > app.csv
\b
Columns: ts, type, turn, capacity_kind, capacity, cost_usd, outcome (a
turn's or review's verdict, a check's ending, the run's outcome) and rest
(the event's other fields, as JSON). A line written before events carried
capacity_kind is given the kind its words say.
"""


def register(cli: click.Group) -> None:
    """Add `export` to `cli`."""

    @cli.command(
        "export",
        short_help="A run's events as CSV, with the capacity's kind as a column.",
        epilog=EPILOG,
    )
    @CWD_OPTION
    @click.option(
        "-o",
        "--output",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        metavar="FILE",
        help="Write the CSV to FILE (default: stdout).",
    )
    @names_a_run
    def export(run: str | None, cwd: Path | None, output: Path | None) -> None:
        """A run's events as CSV, one row per event, with the capacity's kind in a
        column of its own (RUN: default the live run, else the newest)."""
        export_events(cwd=cwd, run_id=run, output=output)


def export_events(*, cwd: Path | None, run_id: str | None, output: Path | None) -> None:
    from claudeloop.application.export import run_export
    from claudeloop.cli.bootstrap import project_runs
    from claudeloop.domain.text import count

    skipped: list[int] = []
    exported = run_export(project_runs(working_directory(cwd)), run_id, skipped=skipped.append)
    if output is None:
        write_csv(exported.rows, sys.stdout)
    else:
        if output.resolve() == Path(exported.source).resolve():
            raise UsageError(f"--output {output} is the run's own events; name another file")
        try:
            with output.open("w", encoding="utf-8", newline="") as handle:
                written = write_csv(exported.rows, handle)
        except OSError as error:
            raise UsageError(f"--output {output}: cannot be written ({error.strerror})") from None
        click.echo(f"claudeloop: {count(written, 'event')} of run {exported.run_id} in {output}")
    for number in skipped:
        warn(f"{exported.source}: line {number} is no event; left out")


def write_csv(rows: Iterable[EventRow], stream: TextIO) -> int:
    """The header and a line per row on `stream`; how many rows were written."""
    import csv

    from claudeloop.application.export import COLUMNS, cells

    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(COLUMNS)
    written = 0
    for row in rows:
        writer.writerow(cells(row))
        written += 1
    return written
