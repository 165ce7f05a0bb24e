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


def _helps() -> Iterator[tuple[str, str]]:
    """Each command's --help at 80 columns, as `claudeloop X --help` prints it: in the
    context of its group (a context without it would give the command a help option
    of its own, without -h, that click keeps)."""
    from claudeloop.cli.reference import _contexts

    for context in _contexts(cli, "claudeloop"):
        yield context.command_path, context.command.get_help(context)


def test_no_help_cuts_a_word_at_its_hyphen_nor_shows_the_largest_integer() -> None:
    """`wind-` / `down`, `--sandbox-allow-` / `read`: a word cut in two cannot be copied;
    `[0<=x<=9223372036854775807]` says nothing a person needs."""
    cut, ranges = [], []
    for path, text in _helps():
        cut += [f"{path}: {line}" for line in text.splitlines() if line.rstrip().endswith("-")]
        ranges += [path for line in text.splitlines() if "9223372036854775807" in line]
    assert cut == []
    assert ranges == []


def test_the_permission_mode_says_what_the_readme_says_of_shell_commands() -> None:
    """Shell commands run without asking, inside the sandbox (README, Confinement)."""
    text = " ".join(dict(_helps())["claudeloop run"].split())
    assert "no unapproved shell" not in text
    assert "shell commands run without asking, inside the sandbox" in text
