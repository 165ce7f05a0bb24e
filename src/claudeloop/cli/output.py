"""What `--json` prints, the same way for every command: indented, keys sorted."""

from __future__ import annotations

import contextlib
import json

import click


def print_json(data: object) -> None:
    """`data` as JSON on stdout. A terminal closed under the run, or a reader gone from the
    pipe, is no error: the exit code and the run directory still tell what happened."""
    with contextlib.suppress(OSError):
        click.echo(json.dumps(data, indent=2, sort_keys=True))
