"""`verify`, `verify_timeout`, `review`, `stall_turns` and `same_failure` from every
source; a bad command is one line naming the file, the key and the value."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from claudeloop.adapters.config.loading import load_configuration
from claudeloop.application.errors import ConfigError
from claudeloop.application.settings import (
    REVIEW,
    SAME_FAILURE,
    STALL_TURNS,
    VERIFY,
    VERIFY_TIMEOUT,
)


def load(
    tmp_path: Path,
    *,
    project_text: str | None = None,
    flags: dict[str, object] | None = None,
    env: dict[str, str] | None = None,
) -> Any:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    if project_text is not None:
        (project / "claudeloop.toml").write_text(project_text)
    environ = {"CLAUDELOOP_CONFIG_DIR": str(tmp_path / "user"), **(env or {})}
    return load_configuration(cwd=project, flags=flags, environ=environ)


def test_the_defaults_verify_nothing_and_brake_after_three(tmp_path: Path) -> None:
    config = load(tmp_path)
    assert config.get(VERIFY) == []
    assert config.get(VERIFY_TIMEOUT) == timedelta(minutes=10)
    assert config.get(REVIEW) is False
    assert (config.get(STALL_TURNS), config.get(SAME_FAILURE)) == (3, 3)


def test_a_file_lists_the_commands_and_the_rest(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        project_text='verify = ["make test", "ruff check ."]\nverify_timeout = "90s"\n'
        "review = true\nstall_turns = 0\nsame_failure = 5\n",
    )
    assert config.get(VERIFY) == ["make test", "ruff check ."]
    assert config.get(VERIFY_TIMEOUT) == timedelta(seconds=90)
    assert config.get(REVIEW) is True
    assert (config.get(STALL_TURNS), config.get(SAME_FAILURE)) == (0, 5)


def test_the_variable_holds_one_command_per_line(tmp_path: Path) -> None:
    config = load(tmp_path, env={"CLAUDELOOP_VERIFY": "make test\npytest -x tests"})
    assert config.get(VERIFY) == ["make test", "pytest -x tests"]


def test_the_flags_win(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        project_text='verify = ["make test"]\n',
        flags={"verify": ["pytest"], "stall_turns": 7},
    )
    assert config.get(VERIFY) == ["pytest"]
    assert config.settings["verify"].origin.describe() == "flag --verify"
    assert config.get(STALL_TURNS) == 7


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('verify = ["   "]\n', 'verify.0 = "   "'),
        ('verify = ["pytest \'unclosed"]\n', 'verify.0 = "pytest \'unclosed"'),
        ("stall_turns = -1\n", "stall_turns = -1"),
        ('verify_timeout = "soon"\n', 'verify_timeout = "soon"'),
    ],
)
def test_a_bad_value_is_one_line_naming_file_key_and_value(
    tmp_path: Path, text: str, said: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, project_text=text)
    message = str(caught.value)
    assert "\n" not in message
    assert "claudeloop.toml" in message
    assert said in message
    assert caught.value.exit_code == 2
