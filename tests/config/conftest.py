"""Each test gets its own project directory and user config directory."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "user"
    directory.mkdir()
    return directory
