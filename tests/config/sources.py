"""Loading a configuration from given sources, as the tests write them."""

from __future__ import annotations

from pathlib import Path

import pytest

from claudeloop.adapters.config.loading import Configuration, load_configuration
from claudeloop.application.errors import ConfigError


def load(
    project: Path,
    user_dir: Path,
    *,
    project_text: str | None = None,
    user_text: str | None = None,
    flags: dict[str, object] | None = None,
    env: dict[str, str] | None = None,
) -> Configuration:
    if project_text is not None:
        (project / "claudeloop.toml").write_text(project_text)
    if user_text is not None:
        (user_dir / "config.toml").write_text(user_text)
    environ = {"CLAUDELOOP_CONFIG_DIR": str(user_dir), **(env or {})}
    return load_configuration(cwd=project, flags=flags, environ=environ)


def error_of(project: Path, user_dir: Path, **sources: object) -> str:
    """The one-line message a configuration error gives."""
    with pytest.raises(ConfigError) as caught:
        load(project, user_dir, **sources)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "\n" not in message
    return message
