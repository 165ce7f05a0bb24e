from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Locally every run explores new examples (and keeps the failing ones in .hypothesis/);
# CI replays one fixed set, so a submission lands or not on its own merits. A property
# that fails here once must be fixed, not re-run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def isolated_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test shares capacity records with the user's real loops, nor with another
    test: every run a test starts keeps its state under the test's own directory."""
    monkeypatch.setenv("CLAUDELOOP_STATE_DIR", str(tmp_path / "state"))
