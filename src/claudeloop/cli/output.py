"""What `--json` prints, the same way for every command: indented, keys sorted; how a
warning is said; and how a run's command ends."""

from __future__ import annotations

import contextlib
import json
import sys
from typing import TYPE_CHECKING, NoReturn

import click

if TYPE_CHECKING:
    from claudeloop.application.records import RunRecord


def print_json(data: object) -> None:
    """`data` as JSON on stdout. A terminal closed under the run, or a reader gone from the
    pipe, is no error: the exit code and the run directory still tell what happened."""
    with contextlib.suppress(OSError):
        click.echo(json.dumps(data, indent=2, sort_keys=True))


def warn(text: str) -> None:
    """A warning on stderr, as every command says one: `claudeloop: warning: TEXT`."""
    click.echo(f"claudeloop: warning: {text}", err=True)


def json_line(data: object) -> str:
    """`data` as one line of JSON, as events.jsonl holds an event (`logs --json` of a
    line it masked)."""
    return json.dumps(data, ensure_ascii=False)


def finish(
    record: RunRecord,
    *,
    as_json: bool,
    extra: dict[str, object] | None = None,
    exit_code: int | None = None,
) -> NoReturn:
    """End the command with the run's exit code (or `exit_code`, the command's own when
    it is not the run's), its result printed first with --json (with `extra`'s fields
    after the result's own, and that exit code), masked as every view of a run is: the
    run masked the model's words in it, and its checks are named as the user wrote them."""
    # Here, not above: every command imports this module, and --help needs no domain.
    from claudeloop.application.summary import result_object
    from claudeloop.cli.bootstrap import shown_masked

    result = result_object(record)
    code = record.state.exit_code if exit_code is None else exit_code
    if as_json:
        print_json(dict(shown_masked()({**result, "exit_code": code, **(extra or {})})))
    sys.exit(code)
