"""Every option says what it is for in --help, and every command shows an example (the
README promises both; `--json`, `runs --cwd` and `fleet init` had neither)."""

from __future__ import annotations

from collections.abc import Iterator

import click

from claudeloop.cli.main import cli


def commands(group: click.Group, path: str = "claudeloop") -> Iterator[tuple[str, click.Command]]:
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from commands(command, f"{path} {name}")
        else:
            yield f"{path} {name}", command


def test_every_option_of_every_command_has_help() -> None:
    bare = [
        f"{path} {param.opts[0]}"
        for path, command in commands(cli)
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden and not param.help
    ]
    assert bare == []


def test_every_command_shows_an_example() -> None:
    # `claudeloop claude ARGS` passes everything on: its examples are the CLI's own.
    without = [
        path
        for path, command in commands(cli)
        if "claudeloop" not in (command.epilog or "") and path != "claudeloop claude"
    ]
    assert without == []
