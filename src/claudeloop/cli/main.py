"""The `claudeloop` command."""

from __future__ import annotations

import click

from claudeloop import __version__

EPILOG = """\b
Examples:
  claudeloop --version
  claudeloop --help
"""


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EPILOG,
)
@click.version_option(__version__, "-V", "--version", prog_name="claudeloop")
def cli() -> None:
    """Run Claude Code unattended until a task is truly done.

    claudeloop sends a turn, reads Claude Code's typed signals and decides: continue,
    wait for a usage window and probe, back off while credits are out, or stop and say why.
    """


def main() -> None:
    cli(prog_name="claudeloop")
