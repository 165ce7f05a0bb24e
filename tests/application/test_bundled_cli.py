"""`login` on the `BundledCli` port: `auth login ARGS` of the CLI a run would start,
refused in one line for a profile whose turns go to a local server."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from claudeloop.application.bundled_cli import login
from claudeloop.application.errors import UsageError


@dataclass
class FakeCli:
    local: tuple[str, str] | None = None
    exit_code: int = 0
    ran: list[list[str]] = field(default_factory=list)

    def local_backend(self) -> tuple[str, str] | None:
        return self.local

    def run(self, args: Sequence[str]) -> int:
        self.ran.append(list(args))
        return self.exit_code


def test_login_runs_auth_login_with_the_arguments_and_returns_its_exit_code() -> None:
    cli = FakeCli(exit_code=3)
    assert login(cli, ["--console"]) == 3
    assert cli.ran == [["auth", "login", "--console"]]


def test_a_local_profile_needs_no_login_and_nothing_runs() -> None:
    cli = FakeCli(local=("llama", "http://127.0.0.1:8080"))
    with pytest.raises(
        UsageError, match=re.escape("profile 'llama' sends the turns to http://127.0.0.1:8080")
    ):
        login(cli, [])
    assert cli.ran == []
