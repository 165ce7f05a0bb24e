"""One hierarchy: every error a user can cause or meet carries its exit code, so the
command line says it in one line without translating it first."""

from __future__ import annotations

from pathlib import Path

import pytest

from claudeloop.application.errors import (
    BadEngine,
    ClaudeloopError,
    ConfigError,
    FleetUnavailable,
    UsageError,
)
from claudeloop.cli.main import main


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ConfigError("claudeloop.toml: max_turns = 0: expected a whole number above 0"), 2),
        (BadEngine("--engine mysql://x: not postgresql:// or sqlite://"), 2),
        (UsageError("--run-id ../x: not a plain name"), 2),
        (FleetUnavailable("the fleet's database at 127.0.0.1:1 does not answer"), 1),
        (UsageError("gone", exit_code=78), 78),
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


def test_a_scenario_file_that_cannot_be_played_is_a_usage_error_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The rehearsal's own error knows nothing of the loop's exit codes; the command does.
    scenario = tmp_path / "plan.toml"
    scenario.write_text('name = "x"\n[[turns]]\nnope = 1\n', encoding="utf-8")
    with pytest.raises(SystemExit) as ended:
        main(["rehearse", str(scenario)])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"claudeloop: error: {scenario}: ")
    assert err.count("\n") == 1
