"""The commands of a click group, through click's own API (`list_commands`,
`get_command`): the top group loads a topic's commands only when one is named
(`claudeloop.cli.main.TOPICS`), so its `commands` attribute holds only those loaded so
far, and a test that read it would see fewer commands than a user can type."""

from __future__ import annotations

import click


def subcommands(group: click.Group) -> dict[str, click.Command]:
    """Every command `group` takes, by name, hidden ones too."""
    context = click.Context(group)
    found = {name: group.get_command(context, name) for name in group.list_commands(context)}
    return {name: command for name, command in found.items() if command is not None}
