"""One hierarchy: every error a user can cause or meet carries its exit code, so the
command line says it in one line without translating it first."""

from __future__ import annotations

import pytest

from claudeloop.adapters.config.loading import ConfigError
from claudeloop.adapters.fleet.engine import BadEngine
from claudeloop.adapters.fleet.queue import FleetUnavailable
from claudeloop.application.errors import ClaudeloopError, UsageError
from claudeloop.cli.errors import UserError
from claudeloop.cli.main import main
from claudeloop.rehearsal import ScenarioError


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ConfigError("claudeloop.toml: max_turns = 0: expected a whole number above 0"), 2),
        (ScenarioError("plan.toml: turns.0: unknown key"), 2),
        (BadEngine("--engine mysql://x: not postgresql:// or sqlite://"), 2),
        (UserError("--run-id ../x: not a plain name"), 2),
        (FleetUnavailable("the fleet's database at 127.0.0.1:1 does not answer"), 1),
        (UserError("gone", exit_code=78), 78),
    ],
)
def test_each_error_carries_its_exit_code(error: ClaudeloopError, code: int) -> None:
    assert isinstance(error, ClaudeloopError)
    assert error.exit_code == code
    # The mistakes a user can correct are usage errors; what the user meets is not.
    assert isinstance(error, UsageError) is not isinstance(error, FleetUnavailable)


def test_the_command_line_says_any_of_them_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unreachable(*_args: object, **_kwargs: object) -> None:
        raise FleetUnavailable("the fleet's database at 127.0.0.1:1 does not answer")

    from claudeloop.cli import inspect

    monkeypatch.setattr(inspect, "runs", unreachable)
    with pytest.raises(SystemExit) as ended:
        main(["runs"])
    assert ended.value.code == 1
    assert capsys.readouterr().err == (
        "claudeloop: error: the fleet's database at 127.0.0.1:1 does not answer\n"
    )
