from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from claudeloop.cli.main import main


@dataclass
class Invocation:
    exit_code: int
    out: str
    err: str


@pytest.fixture
def claudeloop(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Runs the real entry point in-process and returns exit code, stdout and stderr."""

    def invoke(*args: str | Path) -> Invocation:
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        captured = capsys.readouterr()
        return Invocation(code, captured.out, captured.err)

    return invoke
