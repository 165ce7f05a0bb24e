"""The Claude Code this claudeloop was tested with, and what another version is to it.

The tests and CI install claude-agent-sdk at the version uv.lock says, and its wheel
bundles one Claude Code CLI: every signal claudeloop reads was measured on that one.
A user's install may resolve a newer SDK (pyproject.toml keeps a compatible range), and
so a CLI nobody here has run: `doctor` and `--version` say so, as a note, not a failure.
Upgrading (docs/guides/upgrading-claude-code.md) changes these two values with the lock,
in one commit; a test holds them to the lock.
"""

from __future__ import annotations

from typing import Literal, assert_never

TESTED_CLAUDE_CODE = "2.1.337"
TESTED_SDK = "0.2.190"

Standing = Literal["tested", "newer", "older", "unknown"]


def cli_standing(version: str) -> Standing:
    """Where `version` (as `claude --version` prints it, "2.1.337 (Claude Code)" or
    "2.1.337") stands to the tested one."""
    mine, tested = _numbers(version), _numbers(TESTED_CLAUDE_CODE)
    if mine is None or tested is None:
        return "unknown"
    if mine == tested:
        return "tested"
    return "newer" if mine > tested else "older"


def standing_note(version: str) -> str:
    """A few words on `version` against the tested one, for `doctor` and `--version`."""
    standing = cli_standing(version)
    match standing:
        case "tested":
            return "the version this claudeloop was tested with"
        case "newer":
            return f"newer than {TESTED_CLAUDE_CODE}, the version this claudeloop was tested with"
        case "older":
            return f"older than {TESTED_CLAUDE_CODE}, the version this claudeloop was tested with"
        case "unknown":
            return f"not a version number; this claudeloop was tested with {TESTED_CLAUDE_CODE}"
        case _:
            assert_never(standing)


def _numbers(version: str) -> tuple[int, ...] | None:
    words = version.split()
    parts = words[0].split(".") if words else []
    if not parts or not all(part.isdigit() for part in parts):
        return None
    return tuple(int(part) for part in parts)
