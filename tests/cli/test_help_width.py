"""Every command's --help fits an 80-column terminal: click wraps option help and
paragraphs, but not examples and other `\\b` blocks, which must be short themselves."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from claudeloop.cli.main import cli

WIDTH = 80


def command_paths(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from command_paths(sub, (*path, name))


@pytest.mark.parametrize("path", list(command_paths(cli)), ids=lambda p: " ".join(p) or "root")
def test_help_fits_80_columns(path: tuple[str, ...]) -> None:
    shown = CliRunner().invoke(cli, [*path, "--help"], terminal_width=WIDTH)
    assert shown.exit_code == 0, shown.output
    too_wide = [line for line in shown.output.splitlines() if len(line) > WIDTH]
    assert too_wide == []


def test_the_scenario_list_names_every_scenario_within_80_columns() -> None:
    from claudeloop.cli.rehearse import scenario_list
    from claudeloop.rehearsal import BUILTIN_SCENARIOS

    lines = scenario_list().splitlines()
    assert all(len(line) <= WIDTH for line in lines)
    named = [line.split()[0] for line in lines if not line.startswith(" ")]
    assert named == list(BUILTIN_SCENARIOS)
