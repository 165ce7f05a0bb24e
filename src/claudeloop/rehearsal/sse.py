"""A reply in the Messages API's wire shapes: the SSE event stream, the JSON message and
the error envelope.

Text and tool input are sent in several deltas, as the real API does, so a client that
only handles one delta per block fails here and not in production.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from claudeloop.rehearsal.player import Reply, TextBlock, ToolUseBlock
from claudeloop.rehearsal.scenario import Usage

_TEXT_CHUNK = 24
_JSON_CHUNK = 32


def new_message_id() -> str:
    return f"msg_rh{uuid.uuid4().hex[:22]}"


def new_request_id() -> str:
    return f"req_rh{uuid.uuid4().hex[:22]}"


def message_json(reply: Reply, *, model: str, usage: Usage, message_id: str) -> dict[str, Any]:
    """The non-streaming response body."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [_complete_block(block) for block in reply.blocks],
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        **_details(reply),
        "usage": _start_usage(usage) | {"output_tokens": usage.output_tokens},
    }


def _details(reply: Reply) -> dict[str, Any]:
    """`stop_details`, sent only beside a refusal (as the API does)."""
    return {"stop_details": reply.stop_details} if reply.stop_details is not None else {}


def stream_events(reply: Reply, *, model: str, usage: Usage, message_id: str) -> list[bytes]:
    """The whole SSE stream, one encoded event per item (so a broken stream can be cut
    after any event)."""
    start: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _start_usage(usage) | {"output_tokens": 1},
    }
    events = [
        encode_event("message_start", {"type": "message_start", "message": start}),
        encode_event("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(reply.blocks):
        events.extend(_block_events(index, block))
    events.append(
        encode_event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": reply.stop_reason,
                    "stop_sequence": None,
                    **_details(reply),
                },
                "usage": {"output_tokens": usage.output_tokens},
            },
        )
    )
    events.append(encode_event("message_stop", {"type": "message_stop"}))
    return events


def encode_event(name: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def error_envelope(error_type: str, message: str, request_id: str) -> dict[str, Any]:
    """Anthropic's error body; `request_id` repeats the `request-id` header."""
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": request_id,
    }


def _block_events(index: int, block: TextBlock | ToolUseBlock) -> list[bytes]:
    if isinstance(block, TextBlock):
        opening: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [
            {"type": "text_delta", "text": piece} for piece in _chunks(block.text, _TEXT_CHUNK)
        ]
    else:
        opening = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
        whole = json.dumps(block.input, separators=(",", ":"))
        # The real API opens every tool input with an empty partial.
        pieces = ["", *_chunks(whole, _JSON_CHUNK)]
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
    events = [
        encode_event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        )
    ]
    events.extend(
        encode_event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )
        for delta in deltas
    )
    events.append(
        encode_event("content_block_stop", {"type": "content_block_stop", "index": index})
    )
    return events


def _complete_block(block: TextBlock | ToolUseBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}


def _start_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "service_tier": "standard",
    }


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
