"""The commands that steer a live run: `probe-now`, `raise` and `note`. Parsing only:
the work is in steer.py, imported when a command is called."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from claudeloop.application.errors import UsageError
from claudeloop.cli.options import (
    FLEET_SELECTION,
    JSON_OPTION,
    RUN_ID_ALIAS,
    names_a_run,
    one_run,
    run_folder,
)
from claudeloop.cli.params import CWD_OPTION, DURATION, POSITIVE_FLOAT, POSITIVE_INT

if TYPE_CHECKING:
    from datetime import timedelta


@click.command(
    "probe-now",
    epilog="""\b
Examples:
  claudeloop probe-now                       the run a live driver drives
  claudeloop probe-now 20261130-101500-a1b2c3
  claudeloop probe-now nightly --engine      its worker passes it on
\b
Outside a wait it does nothing; the run says so in its events (probe.asked).
A run that has ended is sent nothing: the command says so, exit 0.
""",
)
@CWD_OPTION
@FLEET_SELECTION
@JSON_OPTION
@names_a_run
def probe_now(run: str | None, cwd: Path | None, engine: str | None, as_json: bool) -> None:
    """End the live run's wait early and probe at once (capacity is back)."""
    from claudeloop.cli import steer

    steer.probe(cwd=cwd, run_id=run, engine=engine, as_json=as_json)


@click.command(
    "raise",
    epilog="""\b
Examples:
  claudeloop raise --max-turns 80
  claudeloop raise 20261130-101500-a1b2c3 --max-dollars 25
  claudeloop raise --max-wait 12h --max-turns 120
  claudeloop raise nightly --engine --max-dollars 40
\b
A cap lower than what the run spent is refused (exit 2). The run's record
keeps the new cap, so a resume keeps it too. A run that has ended is refused
(exit 2): its caps change as it resumes (resume RUN --max-turns N).
""",
)
@click.option("--max-turns", type=POSITIVE_INT, default=None, help="The new turn cap.")
@click.option("--max-dollars", type=POSITIVE_FLOAT, default=None, help="The new dollar cap.")
@click.option(
    "--max-wait", type=DURATION, default=None, help="The new longest wait (90m, 12h, 2d)."
)
@CWD_OPTION
@FLEET_SELECTION
@JSON_OPTION
@names_a_run
def raise_cap(
    *,
    run: str | None,
    max_turns: int | None,
    max_dollars: float | None,
    max_wait: timedelta | None,
    cwd: Path | None,
    engine: str | None,
    as_json: bool,
) -> None:
    """Change a cap of the live run without a restart, at its next safe point."""
    from claudeloop.cli import steer
    from claudeloop.domain.steering import Cap

    given = {
        Cap.TURNS: float(max_turns) if max_turns is not None else None,
        Cap.DOLLARS: max_dollars,
        Cap.WAIT: max_wait.total_seconds() if max_wait is not None else None,
    }
    caps = {cap: value for cap, value in given.items() if value is not None}
    steer.raise_caps(cwd=cwd, run_id=run, caps=caps, engine=engine, as_json=as_json)


@click.command(
    epilog="""\b
Examples:
  claudeloop note "the flaky test in test_io.py is known; leave it"
  claudeloop note 20261130-101500-a1b2c3 "use the staging database"
  claudeloop note nightly --engine "use the staging database"
\b
The note is said with the next prompt, and with each one until a turn is
answered; it waits for that turn (past a wait for capacity), and status
shows it till then. It is in the events (note.added), masked like the rest.
""",
)
@click.argument("words", nargs=-1, required=True, metavar="[RUN] TEXT")
@CWD_OPTION
@FLEET_SELECTION
@JSON_OPTION
@RUN_ID_ALIAS
def note(
    words: tuple[str, ...],
    cwd: Path | None,
    engine: str | None,
    as_json: bool,
    run_id_alias: str | None,
) -> None:
    """Leave a note for the live run's next turn (added to its prompt)."""
    from claudeloop.cli import steer

    if len(words) > 2:
        raise UsageError(
            f"note takes [RUN] TEXT, not {len(words)} words; quote the text: "
            'claudeloop note "the text"'
        )
    run, text = (words[0], words[1]) if len(words) == 2 else (None, words[0])
    run = one_run(run, run_id_alias)
    if run is not None and engine is None:
        cwd = run_folder(run, cwd)
    steer.note(cwd=cwd, run_id=run, text=text, engine=engine, as_json=as_json)


def register(cli: click.Group) -> None:
    """Add the commands that steer a live run to `cli`."""
    for command in (probe_now, raise_cap, note):
        cli.add_command(command)
