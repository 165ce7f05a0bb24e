"""`share_capacity` from every source: on unless a source turns it off."""

from __future__ import annotations

from pathlib import Path

import pytest

from claudeloop.adapters.config.loading import load_configuration
from claudeloop.application.errors import ConfigError


def load(
    tmp_path: Path,
    *,
    project_text: str | None = None,
    flags: dict[str, object] | None = None,
    env: dict[str, str] | None = None,
) -> tuple[object, str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    if project_text is not None:
        (project / "claudeloop.toml").write_text(project_text)
    environ = {"CLAUDELOOP_CONFIG_DIR": str(tmp_path / "user"), **(env or {})}
    config = load_configuration(cwd=project, flags=flags, environ=environ)
    setting = config.settings["share_capacity"]
    return setting.value, setting.origin.describe()


def test_on_by_default(tmp_path: Path) -> None:
    assert load(tmp_path) == (True, "default")


def test_a_file_turns_it_off(tmp_path: Path) -> None:
    value, origin = load(tmp_path, project_text="share_capacity = false\n")
    assert value is False
    assert origin.endswith("claudeloop.toml")


@pytest.mark.parametrize(("text", "expected"), [("false", False), ("0", False), ("true", True)])
def test_the_variable_is_read_as_text(tmp_path: Path, text: str, expected: bool) -> None:
    assert load(tmp_path, env={"CLAUDELOOP_SHARE_CAPACITY": text}) == (
        expected,
        "env CLAUDELOOP_SHARE_CAPACITY",
    )


def test_the_flag_wins(tmp_path: Path) -> None:
    value, origin = load(
        tmp_path,
        project_text="share_capacity = true\n",
        env={"CLAUDELOOP_SHARE_CAPACITY": "true"},
        flags={"share_capacity": False},
    )
    assert (value, origin) == (False, "flag --share-capacity")


def test_a_file_must_say_true_or_false(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, project_text='share_capacity = "no"\n')
    assert "share_capacity" in str(caught.value)
    assert "true or false" in str(caught.value)
