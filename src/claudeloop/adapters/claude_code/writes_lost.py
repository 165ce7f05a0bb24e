"""What Claude Code says, as its process exits, of a transcript it could not save.

Measured (CLI 2.1.332, a config directory on a full tmpfs): a process that exits with
status 0 sends the system message `session_writes_lost` (`error_code` ENOSPC or EDQUOT,
`lost` holding `transcript` and/or `global_config`, `transcript_session_ids`) after its
last result; one that exits 1 (its last result an error) writes only a line on stderr,
"Error: Claude Code could not save all of this session's transcript under DIR because
the disk is full (ENOSPC). If you resume this session, part of the conversation may be
missing. ...", which names the sessions only when they are not the process's own. Both
are read here; the gateway hears them when it ends a process (sdk_gateway.py).
"""

from __future__ import annotations

import re

from claude_agent_sdk import Message, SystemMessage

_SESSION_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{7,}")
_RESUMED = re.compile(r"If you resume (?:this session|session (?P<named>.+?)), part of")


def writes_lost_of(message: Message) -> tuple[str, ...] | None:
    """The sessions whose transcripts a `session_writes_lost` message says lost lines;
    () when it names none (the process's own session); None for any other message, and
    for one that lost only changes to ~/.claude.json (no conversation is missing)."""
    if not isinstance(message, SystemMessage) or message.subtype != "session_writes_lost":
        return None
    data = message.data
    lost = data.get("lost")
    if not isinstance(lost, list) or "transcript" not in lost:
        return None
    named = data.get("transcript_session_ids")
    if isinstance(named, list) and any(isinstance(s, str) and s for s in named):
        return tuple(s for s in named if isinstance(s, str) and s)
    session = data.get("session_id")
    return (session,) if isinstance(session, str) and session else ()


def writes_lost_in_stderr(line: str) -> tuple[str, ...] | None:
    """The sessions a stderr line says lost transcript lines: () for "this session" (the
    process's own); None for any other line."""
    if "Claude Code could not save" not in line:
        return None
    found = _RESUMED.search(line)
    if found is None:
        return None  # only ~/.claude.json or an output file: no conversation is missing
    named = found.group("named")
    return tuple(_SESSION_ID.findall(named)) if named else ()
