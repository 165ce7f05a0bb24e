"""`--cwd` means one thing in every command: the project directory, said in one help."""

from __future__ import annotations

from collections.abc import Iterator

import click

from claudeloop.cli.main import cli


def commands(group: click.Group, ctx: click.Context) -> Iterator[click.Command]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None:
            continue
        yield command
        if isinstance(command, click.Group):
            yield from commands(command, click.Context(command, parent=ctx))


def test_every_cwd_option_is_the_one_declared() -> None:
    ctx = click.Context(cli)
    helps = {
        (param.help or "")
        for command in commands(cli, ctx)
        for param in command.params
        if isinstance(param, click.Option) and "--cwd" in param.opts
    }
    assert len(helps) == 1, helps
    (said,) = helps
    assert said.startswith("The project directory")
    taking = [
        command.name
        for command in commands(cli, ctx)
        if any(isinstance(p, click.Option) and "--cwd" in p.opts for p in command.params)
    ]
    assert {"run", "resume", "status", "doctor", "init", "add"} <= set(taking)
