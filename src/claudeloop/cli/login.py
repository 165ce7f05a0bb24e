"""`claudeloop login` and `claudeloop claude ARGS`: the Claude Code CLI bundled in the
SDK's wheel, run on the user's terminal with the environment a run would give it
(application/bundled_cli.py; the CLI wired by the composition root)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from claudeloop.application import bundled_cli
from claudeloop.cli.bootstrap import bundled_cli_of


def login(*, cwd: Path | None, profile: str | None, args: Sequence[str]) -> None:
    """`claude auth login ARGS` of the CLI a run would start, as a run would start it."""
    sys.exit(bundled_cli.login(bundled_cli_of(cwd or Path.cwd(), profile), args))


def claude(*, args: Sequence[str]) -> None:
    """The CLI a run would start, with ARGS, as a run would start it (the selected
    profile's environment); its exit code is ours."""
    sys.exit(bundled_cli_of(Path.cwd(), None).run(list(args)))
