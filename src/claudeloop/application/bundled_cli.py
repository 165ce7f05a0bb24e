"""`claudeloop login` and `claudeloop claude ARGS`: the Claude Code CLI a run would start,
run on the user's terminal with the environment a run would give it, on the
`BundledCli` port."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from claudeloop.application.errors import UsageError


class BundledCli(Protocol):
    """The Claude Code CLI of the selected profile, as a run would start it."""

    def local_backend(self) -> tuple[str, str] | None:
        """The profile's name and base URL when its turns go to a local server, which
        needs no Claude login; None otherwise."""
        ...

    def run(self, args: Sequence[str]) -> int:
        """`ARGS` on this terminal; its exit code (one line, exit 2, when there is no
        CLI to run)."""
        ...


def login(cli: BundledCli, args: Sequence[str]) -> int:
    """`auth login ARGS` of the CLI, refused for a profile that needs no login."""
    if (local := cli.local_backend()) is not None:
        name, base_url = local
        raise UsageError(
            f"profile {name!r} sends the turns to {base_url}, "
            "which needs no Claude login; pick another with --profile"
        )
    return cli.run(["auth", "login", *args])
