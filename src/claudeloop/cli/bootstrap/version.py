"""What `claudeloop --version` says, wired apart from the rest of the root so that it
imports only what finds the bundled CLI (a fifth of a second, not a second)."""

from __future__ import annotations

from claudeloop.adapters import claude_cli
from claudeloop.domain.tested_cli import standing_note


def version_line(claudeloop_version: str) -> str:
    """claudeloop's version, the Claude Code bundled with it, and whether that is the one
    it was tested with."""
    bundled = claude_cli.bundled_version()
    if bundled is None:
        return f"claudeloop {claudeloop_version} (no Claude Code bundled with claude-agent-sdk)"
    return (
        f"claudeloop {claudeloop_version}\nClaude Code {bundled} (bundled with claude-agent-"
        f"sdk): {standing_note(bundled)}"
    )
