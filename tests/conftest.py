from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test shares capacity records with the user's real loops, nor with another
    test: every run a test starts keeps its state under the test's own directory."""
    monkeypatch.setenv("CLAUDELOOP_STATE_DIR", str(tmp_path / "state"))
