"""The Claude Code claudeloop says it was tested with is the one the lock installs: the
version in domain/tested_cli.py, uv.lock's claude-agent-sdk, and the CLI its wheel
bundles in this venv move together (docs/guides/upgrading-claude-code.md). `make canary`
runs this file in a venv with the newest SDK too, where it fails by design: that venv's
CLI is not the tested one."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from claudeloop.domain.tested_cli import TESTED_CLAUDE_CODE, TESTED_SDK

ROOT = Path(__file__).resolve().parents[1]


def locked_version(name: str) -> str:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    (version,) = {package["version"] for package in lock["package"] if package["name"] == name}
    return str(version)


def test_the_tested_sdk_is_the_locked_one() -> None:
    assert locked_version("claude-agent-sdk") == TESTED_SDK


def test_this_venv_runs_the_tested_cli() -> None:
    import claude_agent_sdk

    assert importlib.metadata.version("claude-agent-sdk") == TESTED_SDK
    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude.version"
    assert bundled.read_text().split()[0] == TESTED_CLAUDE_CODE
