"""Claude Code's own sessions of a working directory, as the SDK lists them."""

from __future__ import annotations

from pathlib import Path

from claudeloop.application.ports import ClaudeSession
from claudeloop.domain.signals import instant_from_epoch


def list_claude_sessions(cwd: Path, limit: int) -> list[ClaudeSession]:
    from claude_agent_sdk import list_sessions

    return [
        ClaudeSession(
            session_id=info.session_id,
            # Whole: `sessions --json` is for machines; the text listing cuts it.
            summary=(info.summary or "").strip(),
            last_modified=instant_from_epoch(info.last_modified),
        )
        for info in list_sessions(directory=str(cwd), limit=limit)
    ]
