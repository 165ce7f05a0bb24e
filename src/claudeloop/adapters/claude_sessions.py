"""Claude Code's own sessions of a working directory, read from its session files.

`claudeloop sessions` only reads, and should cost no more than `claudeloop --help`.
claude-agent-sdk's `list_sessions` gave the same list, but importing the SDK cost 2 s
of CPU (it builds mcp's pydantic models), so this module reads the files as that function
does (claude_agent_sdk/_internal/sessions.py), and the tests check its answers against
the SDK's.

Where they are: `<config>/projects/<folder>/<session id>.jsonl`, the config directory
being Claude Code's (`config_directory`), the folder named after the working directory's
real path with every character but an ASCII letter or digit made a hyphen. A name longer
than 200 characters is cut there and given a hash of the path. The SDK computes that
hash as JavaScript would, but the CLI, built with Bun, uses a different one: when no
folder has the SDK's name, the first whose name is the cut name, a hyphen and more is
taken. In a git repository with several worktrees (`git worktree list --porcelain`),
the sessions of every worktree are listed, each session once, at its newer file.

What is read of each file: its first and last 64 KiB and when it was last written, in
whole milliseconds. The newest come first, as the SDK sorts them (ties keep the folder's
order). A session is left out when its first line is a sidechain's (a subagent's
transcript), and when nothing in it can serve as a summary (the CLI's bookkeeping
alone). The summary is the first of: the last title the user set (`customTitle`),
Claude's title (`aiTitle`), the last prompt (`lastPrompt`), the last `summary`, and the
first prompt the user typed.

Like the SDK, this module finds the titles, the last prompt and the summary by their keys
in the text, not by parsing lines. Each window may begin or end in the middle of a line,
and such a line still holds whole values. One result of this, kept on purpose because
the SDK gives it too: a `summary` at any depth counts, so a session whose last prompt is
more than 64 KiB before its end is summed up by the last verdict's summary
(claudeloop's `StructuredOutput` tool has one). Also as in the SDK, another worktree's
folder is found only by its exact name: the SDK's match by prefix for long paths never
matches a name the CLI writes, so a worktree whose path is that long is missed by both.

Where this module departs from the SDK:
- The first prompt: the SDK screens the lines for words (`"tool_result"`, `"isMeta":true`)
  before it parses them; here every line is parsed and its fields are checked, so a line
  that holds those words at some other depth is not skipped.
- When a key appears both with and without a space after its colon, the SDK takes the
  last of the spaced ones; here the last in the text. Claude Code writes compact JSON.
- The config directory follows `~` (`config_directory`), as claudeloop does elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from claudeloop.adapters.claude_code.transcript import config_directory
from claudeloop.application.ports import ClaudeSession

# How much of each end of a session file is read: a session can run to megabytes, and
# its first prompt sits near its start and its titles and last prompt near its end.
_WINDOW = 64 * 1024
# A folder's name is cut at this many characters and followed by a hash of the path,
# to stay within what a file system allows in one name.
_LONGEST_NAME = 200
# The longest first prompt shown whole; a longer one is cut and ends in an ellipsis.
_LONGEST_PROMPT = 200

_SESSION_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_NOT_A_NAME_CHARACTER = re.compile(r"[^a-zA-Z0-9]")
_SIDECHAIN = re.compile(r'"isSidechain": ?true')
# A slash command's message; its name is the summary when no prompt was typed.
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>")
# Text the CLI or an IDE puts where the user speaks, which is no prompt the user typed.
_NOT_TYPED = re.compile(
    r"""
      <local-command-stdout> | <session-start-hook> | <tick> | <goal>
    | \[Request\ interrupted\ by\ user[^\]]*\]
    | \s*<ide_opened_file>[\s\S]*</ide_opened_file>\s*$
    | \s*<ide_selection>[\s\S]*</ide_selection>\s*$
    """,
    re.VERBOSE,
)


def list_claude_sessions(
    cwd: Path, limit: int, environment: Mapping[str, str] | None = None
) -> list[ClaudeSession]:
    """The sessions Claude Code kept for `cwd` (and the other worktrees of its
    repository), the newest `limit` first; `environment` says where Claude Code's config
    is (by default, this process's)."""
    projects = config_directory(os.environ if environment is None else environment) / "projects"
    directory = unicodedata.normalize("NFC", os.path.realpath(cwd))
    sessions = _once_each(
        session for folder in _folders(projects, directory) for session in _sessions_in(folder)
    )
    newest_first = sorted(sessions, key=lambda session: session.last_modified, reverse=True)
    return newest_first[:limit] if limit > 0 else newest_first


def _folders(projects: Path, directory: str) -> list[Path]:
    """The folders that hold the sessions of `directory` and of its repository's other
    worktrees: its own first, which may be a folder under a worktree's."""
    own = _own_folder(projects, directory)
    found = [own] if own is not None else []
    worktrees = _worktrees(directory)
    if len(worktrees) <= 1:
        return found
    names = {_folder_name(worktree) for worktree in worktrees}
    return found + [
        folder
        for folder in _subfolders(projects)
        if folder.name in names and (own is None or folder.name != own.name)
    ]


def _own_folder(projects: Path, directory: str) -> Path | None:
    named = projects / _folder_name(directory)
    if named.is_dir():
        return named
    if len(named.name) <= _LONGEST_NAME:
        return None
    # A long path's hash is the CLI's, not the SDK's: its name up to the hash will do.
    cut = named.name[:_LONGEST_NAME] + "-"
    return next((folder for folder in _subfolders(projects) if folder.name.startswith(cut)), None)


def _folder_name(directory: str) -> str:
    name = _NOT_A_NAME_CHARACTER.sub("-", directory)
    if len(name) <= _LONGEST_NAME:
        return name
    return f"{name[:_LONGEST_NAME]}-{_javascript_hash(directory)}"


def _javascript_hash(text: str) -> str:
    """The hash of a path as the SDK names a long path's folder: each character's code
    added to 31 times the hash so far, kept to 32 bits as JavaScript's `|= 0` keeps
    it, its magnitude in base 36."""
    value = 0
    for character in text:
        value = (value * 31 + ord(character)) & 0xFFFF_FFFF
    magnitude = abs(value - (1 << 32) if value & 0x8000_0000 else value)
    digits = ""
    while True:
        magnitude, digit = divmod(magnitude, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[digit] + digits
        if not magnitude:
            return digits


def _subfolders(projects: Path) -> list[Path]:
    try:
        return [entry for entry in projects.iterdir() if entry.is_dir()]
    except OSError:
        return []  # no sessions kept yet


def _worktrees(directory: str) -> list[str]:
    """The worktrees of the git repository `directory` is in; none outside a repository
    or without git."""
    try:
        listed = subprocess.run(
            ["git", "worktree", "list", "--porcelain"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if listed.returncode != 0:
        return []
    return [
        unicodedata.normalize("NFC", line.removeprefix("worktree "))
        for line in listed.stdout.split("\n")
        if line.startswith("worktree ")
    ]


def _once_each(sessions: Iterable[ClaudeSession]) -> list[ClaudeSession]:
    """Each session once, at its newest: two worktrees' folders can hold one session."""
    newest: dict[str, ClaudeSession] = {}
    for session in sessions:
        kept = newest.get(session.session_id)
        if kept is None or session.last_modified > kept.last_modified:
            newest[session.session_id] = session
    return list(newest.values())


@dataclass(frozen=True, slots=True)
class _Ends:
    """What is read of a session file: its first and last 64 KiB (the same text when it
    is no longer) and when it was last written, in milliseconds since the epoch."""

    head: str
    tail: str
    written_ms: int


def _sessions_in(folder: Path) -> Iterator[ClaudeSession]:
    try:
        files = list(folder.iterdir())
    except OSError:
        return
    for path in files:
        session_id = path.name.removesuffix(".jsonl")
        # The CLI names a session's file by its UUID; its other files are no session.
        if session_id == path.name or not _SESSION_ID.fullmatch(session_id):
            continue
        ends = _ends(path)
        if ends is None or _SIDECHAIN.search(ends.head.split("\n", 1)[0]):
            continue
        summary = _summary(ends)
        if summary:
            yield ClaudeSession(
                session_id=session_id,
                # Whole: `sessions --json` is for machines; the text listing cuts it.
                summary=summary.strip(),
                last_modified=datetime.fromtimestamp(ends.written_ms / 1000, tz=UTC),
            )


def _ends(path: Path) -> _Ends | None:
    """None for an empty file or one that cannot be read."""
    try:
        with path.open("rb") as file:
            status = os.fstat(file.fileno())
            head = file.read(_WINDOW)
            if not head:
                return None
            tail = head
            if status.st_size > _WINDOW:
                file.seek(status.st_size - _WINDOW)
                tail = file.read(_WINDOW)
    except OSError:
        return None
    return _Ends(
        head=head.decode("utf-8", errors="replace"),
        tail=tail.decode("utf-8", errors="replace"),
        # Truncated as the SDK truncates it, so that both sort ties alike.
        written_ms=int(status.st_mtime * 1000),
    )


def _summary(ends: _Ends) -> str:
    return (
        _last_string(ends.tail, "customTitle")
        # A title set early in a long session may lie in the head alone.
        or _last_string(ends.head, "customTitle")
        or _last_string(ends.tail, "aiTitle")
        or _last_string(ends.head, "aiTitle")
        or _last_string(ends.tail, "lastPrompt")
        or _last_string(ends.tail, "summary")
        or _first_prompt(ends.head)
    )


def _last_string(text: str, key: str) -> str:
    """The last string under `key` in `text`, at any depth; "" when there is none."""
    found = list(_string_under(key).finditer(text))
    if not found:
        return ""
    raw = found[-1].group(1)
    if "\\" not in raw:
        return raw
    try:
        value = json.loads(f'"{raw}"')
    except ValueError:
        return raw  # no JSON string (a line cut short, read on into the next): as it is
    return value if isinstance(value, str) else raw


@cache
def _string_under(key: str) -> re.Pattern[str]:
    return re.compile(rf'"{re.escape(key)}": ?"((?:[^"\\]|\\[\s\S])*)"')


def _first_prompt(head: str) -> str:
    """The first thing the user typed, on one line and cut at 200 characters; else the
    first slash command's name; else ""."""
    command = ""
    for entry in _objects(head):
        for text in _typed_texts(entry):
            said = text.replace("\n", " ").strip()
            named = _COMMAND.search(said)
            if named:
                command = command or named.group(1)
            elif said and not _NOT_TYPED.match(said):
                if len(said) > _LONGEST_PROMPT:
                    return said[:_LONGEST_PROMPT].rstrip() + "\u2026"
                return said
    return command


def _objects(text: str) -> Iterator[Mapping[str, Any]]:
    """The JSON object on each line of `text`; a line the window cut is none."""
    for line in text.split("\n"):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, Mapping):
            yield entry


def _typed_texts(entry: Mapping[str, Any]) -> list[str]:
    """The texts of a user's message: not a tool's result, nor the CLI's own words said
    as the user (`isMeta`), nor the summary that replaced a compacted conversation."""
    message = entry.get("message")
    if entry.get("type") != "user" or not isinstance(message, Mapping):
        return []
    if entry.get("isMeta") is True or entry.get("isCompactSummary") is True:
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    blocks = [block for block in content if isinstance(block, Mapping)]
    if any(block.get("type") == "tool_result" for block in blocks):
        return []
    return [
        block["text"]
        for block in blocks
        if block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
