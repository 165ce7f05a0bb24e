"""What the boundary stopped, read from the shapes Claude Code 2.1.337 was measured to
send (tests/e2e/test_confinement.py drives the real CLI)."""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    Message,
    ResultMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from claudeloop.adapters.claude_code.blocked import Lines, blocked_in
from claudeloop.adapters.claude_code.reading import read_turn
from claudeloop.domain.confinement import BlockedAction

HOME = "/home/u"
LINES = Lines(hidden=(HOME,), visible=("/home/u/src/app", "/home/u/.pyenv"))


def call(number: int, command: str, **more: Any) -> AssistantMessage:
    block = ToolUseBlock(id=f"t{number}", name="Bash", input={"command": command, **more})
    return AssistantMessage(content=[block], model="claude-sonnet-4-5")


def answer(number: int, text: str, *, error: bool = True) -> UserMessage:
    return UserMessage(
        content=[ToolResultBlock(tool_use_id=f"t{number}", content=text, is_error=error)]
    )


def result(denials: list[Any] | None = None) -> ResultMessage:
    return ResultMessage(
        subtype="success",
        duration_ms=1,
        duration_api_ms=1,
        is_error=False,
        num_turns=1,
        session_id="s",
        permission_denials=denials,
    )


def test_a_hidden_home_path_is_a_read_and_a_missing_file_in_the_tree_is_not() -> None:
    messages: list[Message] = [
        call(1, "cat ~/.ssh/id_rsa"),
        answer(1, "Exit code 1\ncat: /home/u/.ssh/id_rsa: No such file or directory"),
        call(2, "cat notes.txt"),
        answer(2, "cat: /home/u/src/app/notes.txt: No such file or directory"),
        call(3, "ls ~/.pyenv/x"),
        answer(3, "ls: /home/u/.pyenv/x: No such file or directory"),
        call(4, "cat /etc/missing"),
        answer(4, "cat: /etc/missing: No such file or directory"),
    ]
    assert blocked_in(messages, LINES) == (BlockedAction("read", "/home/u/.ssh/id_rsa"),)


def test_a_read_only_file_system_is_a_write_relative_paths_too() -> None:
    messages: list[Message] = [
        call(1, "echo x > /tmp/o/x.txt; echo y > .claudeloop/c"),
        answer(
            1,
            "/bin/bash: line 1: /tmp/o/x.txt: Read-only file system\n"
            "/bin/bash: line 1: .claudeloop/c: Read-only file system",
        ),
    ]
    assert blocked_in(messages, LINES) == (
        BlockedAction("write", "/tmp/o/x.txt"),
        BlockedAction("write", ".claudeloop/c"),
    )


def test_the_proxys_violations_name_the_host_and_a_local_refusal_is_said_once() -> None:
    violation = (
        "curl: (56) CONNECT tunnel failed, response 403\n<sandbox_violations>\n"
        "deny network-outbound pypi.org:443 (user denied)\n</sandbox_violations>"
    )
    messages: list[Message] = [
        call(1, "curl https://pypi.org"),
        answer(1, violation, error=False),
        call(2, "python3 -c 'connect'"),
        answer(2, "ConnectionRefusedError: [Errno 111] Connection refused"),
        call(3, "nc 127.0.0.1 9"),
        answer(3, "nc: connect failed: ECONNREFUSED"),
    ]
    assert blocked_in(messages, LINES) == (
        BlockedAction("network", "pypi.org:443"),
        BlockedAction("network", "a local address (connection refused)"),
    )


def test_an_escape_asked_for_and_a_shell_taken_away_are_told_with_their_command() -> None:
    messages: list[Message] = [
        call(1, "cat ~/.ssh/id_rsa", dangerouslyDisableSandbox=True),
        answer(1, "cat: /home/u/.ssh/id_rsa: No such file or directory"),
        call(2, "make test"),
        answer(2, "<tool_use_error>Error: No such tool available: Bash.</tool_use_error>"),
        AssistantMessage(content=[TextBlock("done")], model="claude-sonnet-4-5"),
    ]
    assert blocked_in(messages, LINES) == (
        BlockedAction("escape", "cat ~/.ssh/id_rsa"),
        BlockedAction("read", "/home/u/.ssh/id_rsa"),
        BlockedAction("command", "make test"),
    )


def test_refused_tools_name_their_path_or_command_and_others_are_left_out() -> None:
    denials = [
        {"tool_name": "Read", "tool_use_id": "a", "tool_input": {"file_path": "/home/u/.netrc"}},
        {"tool_name": "Grep", "tool_use_id": "b", "tool_input": {"path": "/home/u/.aws"}},
        {"tool_name": "Write", "tool_use_id": "c", "tool_input": {"file_path": "/etc/x"}},
        {"tool_name": "NotebookEdit", "tool_use_id": "d", "tool_input": {"notebook_path": "/n"}},
        {"tool_name": "Bash", "tool_use_id": "e", "tool_input": {"command": "cat /proc/1/env\n"}},
        {"tool_name": "WebFetch", "tool_use_id": "f", "tool_input": {"url": "https://x"}},
        {"tool_name": "Read", "tool_use_id": "g", "tool_input": {}},
        "not a denial",
    ]  # fmt: skip
    assert blocked_in([result(denials)], LINES) == (
        BlockedAction("read", "/home/u/.netrc"),
        BlockedAction("read", "/home/u/.aws"),
        BlockedAction("write", "/etc/x"),
        BlockedAction("write", "/n"),
        BlockedAction("command", "cat /proc/1/env"),
    )


def test_a_long_command_is_cut_and_each_stop_is_told_once() -> None:
    long = "echo " + "x" * 400
    messages: list[Message] = [
        call(1, long, dangerouslyDisableSandbox=True),
        call(2, long, dangerouslyDisableSandbox=True),
    ]
    (only,) = blocked_in(messages, LINES)
    assert only.kind == "escape"
    assert len(only.target) == 200
    assert only.target.endswith("…")


def test_a_turn_read_without_a_boundary_tells_nothing_blocked() -> None:
    messages: list[Message] = [
        call(1, "cat ~/.ssh/id_rsa"),
        answer(1, "cat: /home/u/.ssh/id_rsa: No such file or directory"),
        result(),
    ]
    assert read_turn(messages, local_backend=False).blocked == ()
    assert read_turn(messages, local_backend=False, lines=LINES).blocked == (
        BlockedAction("read", "/home/u/.ssh/id_rsa"),
    )
