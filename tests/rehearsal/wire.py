"""Request bodies shaped like the Claude Code CLI's, and a reader for SSE streams."""

from __future__ import annotations

import json
from typing import Any

import httpx

from claudeloop.rehearsal import RehearsalServer, Scenario, parse_scenario

REMINDER = "<system-reminder>\nAttribution guidance.\n</system-reminder>\n"
CWD = "/tmp/rehearsal-work"
TOOLS = [
    {"name": "Bash", "input_schema": {"type": "object"}},
    {"name": "Write", "input_schema": {"type": "object"}},
    {
        "name": "StructuredOutput",
        "input_schema": {"type": "object", "properties": {"complete": {"type": "boolean"}}},
    },
]
ENVIRONMENT = {
    "role": "system",
    "content": f"# Environment\n - Primary working directory: {CWD}\n - Platform: linux\n",
}


def prompt(text: str) -> dict[str, Any]:
    """A user prompt as the CLI sends it: a system reminder, then the words."""
    return {
        "role": "user",
        "content": [{"type": "text", "text": REMINDER}, {"type": "text", "text": text}],
    }


def tool_call(name: str = "Write", call_id: str = "toolu_1") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": {}}],
    }


def tool_result(call_id: str = "toolu_1", *, then: str | None = None) -> dict[str, Any]:
    """A tool result; `then` is a next prompt the CLI merged into the same message."""
    content: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": call_id, "content": "done"},
        {"type": "text", "text": REMINDER},
    ]
    if then is not None:
        content.append({"type": "text", "text": then})
    return {"role": "user", "content": content}


def body(
    messages: list[dict[str, Any]],
    *,
    stream: bool = True,
    tools: list[dict[str, Any]] | None = None,
    model: str = "claude-test-1",
) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 1024,
        "stream": stream,
        "system": [{"type": "text", "text": "You are a Claude agent."}],
        "tools": TOOLS if tools is None else tools,
        "messages": messages,
    }


def first_turn() -> dict[str, Any]:
    return body([prompt("do the plan"), ENVIRONMENT])


def events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) per SSE event; the data must be JSON."""
    parsed = []
    for chunk in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        parsed.append((lines["event"], json.loads(lines["data"])))
    return parsed


def assembled(text: str) -> list[dict[str, Any]]:
    """The content blocks a client rebuilds from the stream's deltas."""
    blocks: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    for name, data in events(text):
        if name == "content_block_start":
            blocks.append(dict(data["content_block"]))
        elif name == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "text_delta":
                blocks[data["index"]]["text"] += delta["text"]
            else:
                partial[data["index"]] = partial.get(data["index"], "") + delta["partial_json"]
        elif name == "content_block_stop" and data["index"] in partial:
            blocks[data["index"]]["input"] = json.loads(partial[data["index"]])
    return blocks


def post(
    http: httpx.Client, server: RehearsalServer, payload: dict[str, Any], **headers: str
) -> httpx.Response:
    return http.post(
        f"{server.base_url}/v1/messages?beta=true",
        json=payload,
        headers={"x-api-key": "test", **headers},
    )


def scenario(toml: str) -> Scenario:
    return parse_scenario(toml, source="test.toml", fmt="toml")
