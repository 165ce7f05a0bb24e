"""Every command's --json goes through one writer, so they all print alike."""

from __future__ import annotations

from pathlib import Path

import claudeloop.cli

CLI = Path(claudeloop.cli.__file__).parent


def test_only_the_json_writer_writes_json() -> None:
    writers = [path.name for path in sorted(CLI.glob("*.py")) if "json.dumps(" in path.read_text()]
    assert writers == ["output.py"]
