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

from claudeloop.application.settings import SETTINGS, Setting
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
guides in [../guides/](../guides/) explain the behaviour behind the options. The
[settings](#settings) of `run` and `resume` close the page: each one's key in
`claudeloop.toml`, its flag, its variable, its default and what it accepts.
"""

_SETTINGS_HEADER = """\
## Settings

Each setting of `run` and `resume` is a top-level key of `./claudeloop.toml` and of the
user `config.toml`, a `CLAUDELOOP_*` variable and, but for `notify_on`, a flag. The
highest source wins: the flag, then the variable, then `./claudeloop.toml`, then the
user `config.toml`, then the default (a selected profile's `model` ranks below the flag
and the variable, above the files). `claudeloop config show` prints each one's value and
where it came from. Generated from `src/claudeloop/application/settings.py`.

| key | flag | variable | default | accepts |
|---|---|---|---|---|
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
    sections.append(_settings())
    return "\n".join(sections)


def _settings() -> str:
    """The table of every setting, from the settings' descriptions."""
    from claudeloop.cli.show_config import shown_default

    rows = [
        f"| `{setting.key}` | {_flag(setting)} | `{setting.variable}` "
        f"| {shown_default(setting)} | {setting.accepted} |"
        for setting in SETTINGS
    ]
    return _SETTINGS_HEADER + "\n".join(rows) + "\n"


def _flag(setting: Setting[object]) -> str:
    if not setting.has_flag:
        return "-"
    if setting.kind == "switch":
        return f"`{setting.option}`, `--no-{setting.option[2:]}`"
    return f"`{setting.option}`"


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
