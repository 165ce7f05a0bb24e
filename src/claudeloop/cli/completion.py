"""`claudeloop completion SHELL`: the completion script click generates for the shell,
the one `_CLAUDELOOP_COMPLETE=bash_source claudeloop` prints. The shell then asks
claudeloop itself what completes a word (`_CLAUDELOOP_COMPLETE=bash_complete`), which
click answers before any command runs."""

from __future__ import annotations

import click

SHELLS: tuple[str, ...] = ("bash", "zsh", "fish")
PROG_NAME = "claudeloop"
COMPLETE_VARIABLE = "_CLAUDELOOP_COMPLETE"


def script(cli: click.Command, shell: str) -> str:
    """The completion script of `cli` for `shell`, one of SHELLS."""
    from click.shell_completion import get_completion_class

    completion = get_completion_class(shell)
    assert completion is not None, shell  # SHELLS are click's own
    return completion(cli, {}, PROG_NAME, COMPLETE_VARIABLE).source()
