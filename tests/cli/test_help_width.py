"""Every command's --help fits an 80-column terminal: click wraps option help and
paragraphs, but not examples and other `\\b` blocks, which must be short themselves."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from claudeloop.cli.main import cli
from tests.commands import subcommands

WIDTH = 80


def command_paths(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    if isinstance(command, click.Group):
        for name, sub in subcommands(command).items():
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


def cli_command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = subcommands(command)[name]
    return command


def described_commands(output: str) -> dict[str, str]:
    """The command list of a group's --help: each name with its description, its
    wrapped lines joined."""
    described: dict[str, str] = {}
    lines = output.split("Commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    name = ""
    for line in lines:
        if line[2] != " ":
            name, _, said = line.strip().partition(" ")
            described[name] = said.strip()
        else:
            described[name] += " " + line.strip()
    return described


@pytest.mark.parametrize(
    "path",
    [p for p in command_paths(cli) if isinstance(cli_command(p), click.Group)],
    ids=lambda p: " ".join(p) or "root",
)
def test_no_command_description_is_cut_in_a_groups_help(path: tuple[str, ...]) -> None:
    shown = CliRunner().invoke(cli, [*path, "--help"], terminal_width=WIDTH)
    group = cli_command(path)
    assert isinstance(group, click.Group)
    described = described_commands(shown.output)
    assert set(described) == {name for name, c in subcommands(group).items() if not c.hidden}
    for name, said in described.items():
        assert not said.endswith(("...", "…")), (name, said)
        command = subcommands(group)[name]
        if command.short_help is not None:
            assert said == command.short_help
        else:  # the help's first sentence, whole
            words = said.split()
            assert (command.help or "").split()[: len(words)] == words
            assert said.endswith(".")
