"""What the service's answers said of their usage as they streamed in, kept on disk.

Claude Code writes an answer to the session's transcript only once its content is
complete, about a tenth of a second late; a kill -9 in between leaves an answer the
service billed in no transcript (measured: under load, one run of two fell short by
one request's price). The usage of each answer reaches claudeloop before that, in the
stream's events (partial messages, options.py): `message_start` carries the message's
id, model and input usage, `message_delta` its final output usage. Each is appended to
`responses.jsonl` in the run directory as it arrives, so a resume bills what the
stream delivered and the transcript lacks (cut_off.py; the rule and why:
docs/architecture/decisions/0010-the-ledger-under-kill-9.md). A prompt handed to the
CLI is a line too: a turn killed before its transcript held any line of it still had a
request out.

One JSON object a line: `at` (ISO 8601, UTC), `session`, and either `prompt` (true) or
`id`, `model`, `usage` and `complete` (its final usage seen). A line the kill cut short
is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from claudeloop.adapters.claude_code.transcript import json_lines, stamped_since
from claudeloop.adapters.private_file import append_line, make_private_directory


@dataclass(frozen=True, slots=True)
class StreamedResponse:
    """One answer as far as its stream got: `complete` once its final usage came."""

    message_id: str
    model: str
    usage: Mapping[str, Any]
    complete: bool


@dataclass(frozen=True, slots=True)
class StreamedTurn:
    """What the stream told of a session since an instant."""

    responses: tuple[StreamedResponse, ...] = ()
    # Whether a prompt was handed to the CLI on the session since then.
    prompted: bool = False


class ResponseLog:
    """Appends what the stream says of each answer's usage; reads it back for a resume.
    `path` None keeps nothing (a review's gateway, a probe's)."""

    def __init__(
        self, path: Path | None, *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self._path = path
        self._clock = clock
        # The answer streaming now on each of a session's streams (the main one, each
        # subagent's), by (session, parent tool call): its id, model and usage so far.
        self._open: dict[tuple[str, str | None], tuple[str, str, dict[str, Any]]] = {}

    def prompted(self, session_id: str | None) -> None:
        """A prompt went to the CLI on `session_id` (None: a new session, not named yet;
        nothing is kept: no transcript of it can be resumed either)."""
        if session_id:
            self._append({"session": session_id, "prompt": True})

    def heard(self, session_id: str, event: Mapping[str, Any], parent: str | None = None) -> None:
        """One event of the model's stream (the raw API event)."""
        stream = (session_id, parent)
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message")
            if not isinstance(message, Mapping):
                return
            ident, model, usage = message.get("id"), message.get("model"), message.get("usage")
            if not isinstance(ident, str) or not isinstance(model, str):
                return
            self._open[stream] = (ident, model, dict(usage) if isinstance(usage, Mapping) else {})
            self._write(session_id, self._open[stream], complete=False)
        elif kind == "message_delta" and stream in self._open:
            ident, model, usage = self._open.pop(stream)
            final = event.get("usage")
            if isinstance(final, Mapping):
                usage |= {key: value for key, value in final.items() if value is not None}
            self._write(session_id, (ident, model, usage), complete=True)

    def since(self, session_id: str, since: datetime) -> StreamedTurn:
        """The answers of `session_id` the stream began at `since` or later (each once, as
        far as it got), and whether a prompt went out meanwhile."""
        found: dict[str, StreamedResponse] = {}
        prompted = False
        for entry in self._entries():
            if entry.get("session") != session_id or not _at_or_after(entry, since):
                continue
            if entry.get("prompt") is True:
                prompted = True
                continue
            ident, model, usage = entry.get("id"), entry.get("model"), entry.get("usage")
            if not isinstance(ident, str) or not isinstance(model, str):
                continue
            if not isinstance(usage, Mapping):
                continue
            complete = entry.get("complete") is True
            if ident in found and found[ident].complete and not complete:
                continue
            found[ident] = StreamedResponse(ident, model, usage, complete)
        return StreamedTurn(tuple(found.values()), prompted)

    def _write(
        self, session_id: str, answer: tuple[str, str, dict[str, Any]], *, complete: bool
    ) -> None:
        ident, model, usage = answer
        self._append(
            {
                "session": session_id,
                "id": ident,
                "model": model,
                "usage": usage,
                "complete": complete,
            }
        )

    def _append(self, fields: dict[str, Any]) -> None:
        if self._path is None:
            return
        line = json.dumps({"at": self._clock().isoformat(), **fields}, default=str)
        try:
            make_private_directory(self._path.parent)
            append_line(self._path, line)
        except OSError:
            # A full disk must not end a turn: what is lost is billed by the transcript,
            # or at an estimate.
            return

    def _entries(self) -> Iterator[Mapping[str, Any]]:
        if self._path is not None:
            yield from json_lines(self._path)


def _at_or_after(entry: Mapping[str, Any], since: datetime) -> bool:
    return stamped_since(entry, "at", since)
