"""What the boundary stopped in one turn, read from the turn's messages.

Measured with Claude Code 2.1.337 (docs/architecture/threat-model.md), each stop shows
in one of four places:

- a file tool refused outside the working directories: the result's
  `permission_denials` (Read, Grep, Glob: a read; Write, Edit, NotebookEdit: a write),
  and a shell command refused for approval (`cat /proc/1/environ`): a command;
- a connection the sandbox's proxy denied: a `<sandbox_violations>` block in the
  command's output (`deny network-outbound pypi.org:443`); a local address refused
  outright shows only as the command's "Connection refused";
- a write outside the tree: "Read-only file system" in the command's output;
- a read of a hidden path: "No such file or directory" on a path in the home that no
  allowed folder covers (bubblewrap hides it; the path exists outside).

A Bash call that asks for `dangerouslyDisableSandbox` is an escape tried (it runs
sandboxed all the same). Where no sandbox can run, the Bash tool is denied outright, and
a call of it is answered "No such tool available": a command refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from claudeloop.domain.confinement import BlockedAction, BlockedKind

if TYPE_CHECKING:
    from claude_agent_sdk import Message

_READ_TOOLS = frozenset({"Read", "Grep", "Glob", "LS"})
_WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
_VIOLATIONS = re.compile(r"<sandbox_violations>(.*?)</sandbox_violations>", re.DOTALL)
_OUTBOUND = re.compile(r"network-outbound\s+(\S+)")
_READ_ONLY = re.compile(r"([^\s:'\"]+): Read-only file system")
_MISSING = re.compile(r"(/[^\s:'\"]+): No such file or directory")
# Where no sandbox can run, the Bash tool is taken away (a `Bash` deny rule): a call of
# it is answered so.
_NO_SHELL = "No such tool available: Bash"
_REFUSED = re.compile(r"Connection refused|ECONNREFUSED")
# A command or path said in an event: its first line, at most this long.
_LONGEST = 200


@dataclass(frozen=True, slots=True)
class Lines:
    """Where the boundary runs on this machine: `hidden` folders (the home) but for
    `visible` ones (the tree, the toolchains allowed)."""

    hidden: tuple[str, ...] = ()
    visible: tuple[str, ...] = ()

    def hides(self, path: str) -> bool:
        target = PurePath(path)
        return any(target.is_relative_to(root) for root in self.hidden) and not any(
            target.is_relative_to(root) for root in self.visible
        )


def blocked_in(messages: Sequence[Message], lines: Lines) -> tuple[BlockedAction, ...]:
    """Each stop the turn's messages tell, once, in the order told."""
    # Imported here: the run's wiring names `Lines` before it starts any turn.
    from claude_agent_sdk import (
        AssistantMessage,
        ResultMessage,
        ToolResultBlock,
        ToolUseBlock,
        UserMessage,
    )

    found: dict[BlockedAction, None] = {}
    commands: dict[str, str] = {}  # a Bash call's command, by its id
    for message in messages:
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ToolUseBlock) and block.name == "Bash":
                    commands[block.id] = _cut(str(block.input.get("command", "")))
                    if block.input.get("dangerouslyDisableSandbox") is True:
                        found[BlockedAction("escape", commands[block.id])] = None
        elif isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if not isinstance(block, ToolResultBlock):
                    continue
                text = _text(block.content)
                if _NO_SHELL in text and block.tool_use_id in commands:
                    found[BlockedAction("command", commands[block.tool_use_id])] = None
                found.update(dict.fromkeys(_in_output(text, lines)))
        elif isinstance(message, ResultMessage):
            found.update(dict.fromkeys(_denied(message.permission_denials or [])))
    return tuple(found)


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        str(part.get("text", "")) for part in content or [] if isinstance(part, Mapping)
    )


def _in_output(text: str, lines: Lines) -> Iterable[BlockedAction]:
    for violations in _VIOLATIONS.findall(text):
        for host in _OUTBOUND.findall(violations):
            yield BlockedAction("network", host)
    if _REFUSED.search(text) and "<sandbox_violations>" not in text:
        yield BlockedAction("network", "a local address (connection refused)")
    for path in _READ_ONLY.findall(text):
        yield BlockedAction("write", path)
    for path in _MISSING.findall(text):
        if lines.hides(path):
            yield BlockedAction("read", path)


def _denied(denials: Iterable[Any]) -> Iterable[BlockedAction]:
    for denial in denials:
        if not isinstance(denial, Mapping):
            continue
        name, given = denial.get("tool_name"), denial.get("tool_input")
        given = given if isinstance(given, Mapping) else {}
        kind: BlockedKind
        if name in _READ_TOOLS:
            kind, target = "read", given.get("file_path") or given.get("path")
        elif name in _WRITE_TOOLS:
            kind, target = "write", given.get("file_path") or given.get("notebook_path")
        elif name == "Bash":
            kind, target = "command", given.get("command")
        else:
            continue
        if isinstance(target, str) and target:
            yield BlockedAction(kind, _cut(target))


def _cut(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= _LONGEST else line[: _LONGEST - 1] + "…"
