"""docs/reference/cli.md, generated from the command line's own `--help`.

`python -m claudeloop.cli.reference docs/reference/cli.md` writes it; without a path it
prints it. tests/docs/test_cli_reference.py fails when the file and `render()` differ.
The help is rendered at a fixed width, so the page does not depend on the terminal it
was generated in.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

from claudeloop.cli.main import cli

WIDTH = 80
REGENERATE = "make docs"

_HEADER = f"""\
# Command-line reference

<!-- Generated from `claudeloop --help` and every subcommand's `--help` by
     src/claudeloop/cli/reference.py. Do not edit: run `{REGENERATE}`
     (`python -m claudeloop.cli.reference docs/reference/cli.md`). -->

Every command and option of `claudeloop`, exactly as its `--help` prints them. Exit
codes, durations and where settings come from are in the top-level help below; the
guides in [../guides/](../guides/) explain the behaviour behind the options.
"""


def _contexts(
    command: click.Command, name: str, parent: click.Context | None = None
) -> Iterator[click.Context]:
    """A context for `command` and, depth first in the order `--help` lists them, for
    every visible subcommand under it."""
    settings = {**command.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    context = click.Context(command, info_name=name, parent=parent, **settings)
    yield context
    if isinstance(command, click.Group):
        for sub_name in command.list_commands(context):
            sub = command.get_command(context, sub_name)
            if sub is not None and not sub.hidden:
                yield from _contexts(sub, sub_name, context)


def render() -> str:
    """The whole page: the top-level help, then each command's help, in `--help` order."""
    sections = [_HEADER]
    for context in _contexts(cli, "claudeloop"):
        text = context.command.get_help(context).rstrip()
        sections.append(f"## `{context.command_path}`\n\n```text\n{text}\n```\n")
    return "\n".join(sections)


def main(argv: list[str] | None = None) -> None:
    """Write the page to the path given, or print it."""
    args = sys.argv[1:] if argv is None else argv
    page = render()
    if not args:
        sys.stdout.write(page)
        return
    target = Path(args[0])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page, encoding="utf-8")


if __name__ == "__main__":
    main()
