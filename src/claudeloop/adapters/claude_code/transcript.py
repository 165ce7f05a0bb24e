"""What a session's transcript says the service answered, for a turn a crash cut off.

A turn's cost reaches claudeloop only with its result. When the driver is killed after
the service answered some of a turn's requests (a long turn makes dozens), no result
ever comes for them; the only record of what they cost is the session's transcript,
which Claude Code writes as each answer arrives. Measured with CLI 2.1.332: the
transcript is `$CLAUDE_CONFIG_DIR/projects/<the cwd, as a name>/<session id>.jsonl`, one
JSON object a line; an answer is a line of `type` "assistant" with a `timestamp` (ISO
8601, UTC), a `requestId`, and `message.model` and `message.usage` as the API sent them.
An answer of several content blocks is several lines with one `requestId`, so each
request is counted once. The CLI's own placeholder for an API error (`<synthetic>`)
cost nothing.

A request in flight at the kill is billed all the same, and no answer of it is kept.
Measured with the same CLI: before each request it writes a line of `type` "api-request"
with its `id`, `timestamp` and `thread`, and each answer names that `id` as its
`requestRef`. A request whose answer never came is in flight when nothing came after it
on its thread (a request that failed and was sent again is followed by the retry). The
CLI writes its lines about a tenth of a second late, so a kill can leave the request's
line unwritten: a turn whose last line is a prompt or a tool's result (unless it ended
the turn, `toolEndsTurn`), or an answer calling a tool, was about to send a request,
or had sent it, and it counts as in flight too (an estimate errs on the side of spend).

The process that resumes a session whose last request was never answered closes that
request itself, with a `<synthetic>` answer of its own that names no request and is no
API error ("No response requested.", measured with CLI 2.1.337, written as it starts
and landing before or after its prompt's line): that request was in flight when its
process died, and counts as such whichever line comes first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

_NO_MODEL = "<synthetic>"


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """One request the service answered, as the transcript keeps it."""

    request_id: str
    model: str
    usage: Mapping[str, Any]
    # The answer's own id (`message.id`), which the stream's events name it by too.
    message_id: str = ""


def config_directory(environment: Mapping[str, str]) -> Path:
    """Where Claude Code keeps its sessions, in the environment it runs in."""
    configured = environment.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path(environment.get("HOME") or Path.home()) / ".claude"


@dataclass(frozen=True, slots=True)
class CutOff:
    """What a session's transcript says of a turn a crash cut off."""

    # The requests answered since the turn began, each once.
    served: tuple[ServedRequest, ...] = ()
    # The requests sent since then whose answers it never recorded.
    in_flight: int = 0
    # The last request the session answered, whenever (what an estimate goes by).
    last_answered: ServedRequest | None = None
    # Answers of requests in flight whose streams had begun, as far as they got
    # (responses.py): billed at an estimate no lower than what they showed.
    partial: tuple[ServedRequest, ...] = ()


def served_since(config_dir: Path, session_id: str, since: datetime) -> tuple[ServedRequest, ...]:
    """The requests of `session_id` the service answered at `since` or later, each once;
    nothing when the transcript cannot be found or read."""
    return cut_off_turn(config_dir, session_id, since).served


def cut_off_turn(config_dir: Path, session_id: str, since: datetime) -> CutOff:
    """The turn of `session_id` that began at `since`, as far as its transcript tells."""
    seen: dict[str, ServedRequest] = {}
    last: ServedRequest | None = None
    # Per thread, the request sent since `since` that no answer has followed yet.
    waiting: dict[str, str] = {}
    # Requests a process left unanswered when it died, found by the next one's prompt.
    abandoned = 0
    for entry in _entries(config_dir, session_id):
        answered = _served(entry, None)
        last = answered or last
        if not _since(entry, since):
            continue
        main = not entry.get("isSidechain")
        if entry.get("type") == "api-request" and isinstance(entry.get("id"), str):
            waiting[_thread(entry)] = entry["id"]
        elif entry.get("type") == "assistant" and main and _closes_a_cut_off_request(entry):
            # The next process's own close of the request a dead one left waiting: that
            # request went out and no answer came (unless the prompt above counted it).
            if waiting.get(_MAIN, _RESENT) != _RESENT:
                abandoned += 1
                waiting.pop(_MAIN)
        elif entry.get("type") == "assistant":
            reference = entry.get("requestRef")
            threads = [thread for thread, sent in waiting.items() if sent == reference]
            # An answer that names no request it was sent for (an error's placeholder)
            # ends the request of the main conversation.
            for thread in threads or ([_MAIN] if main else []):
                waiting.pop(thread, None)
            if main and _calls_a_tool(entry):
                waiting[_MAIN] = _FOLLOWS  # the tool's result goes back in a request
        elif entry.get("type") == "user" and main:
            if entry.get("toolEndsTurn"):
                waiting.pop(_MAIN, None)
            elif _MAIN in waiting and _is_prompt(entry):
                # A prompt goes out only after the last turn's result: one written while
                # a request waits is the next process's, sent after the one that sent
                # that request died. Its request was in flight, not sent again (a
                # request the CLI retries itself comes with no new prompt).
                abandoned += 1
                waiting[_MAIN] = _RESENT
            else:
                waiting.setdefault(_MAIN, _FOLLOWS)  # a prompt or a tool's result
        if answered is not None and answered.request_id not in seen:
            seen[answered.request_id] = answered
    in_flight = len(waiting) + abandoned
    return CutOff(served=tuple(seen.values()), in_flight=in_flight, last_answered=last)


_MAIN = json.dumps({"type": "none"})
# What the main conversation waits for when the next request's own line is not written.
_FOLLOWS = ""
# What the main conversation waits for after the prompt of a process that found a request
# waiting (counted as cut off then): its own request, which no close of that one ends.
_RESENT = "resent"
# The tool whose call is the turn's verdict: it ends the turn, no request follows.
_VERDICT_TOOL = "StructuredOutput"


def _calls_a_tool(entry: Mapping[str, Any]) -> bool:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        return False
    return any(
        isinstance(block, Mapping)
        and block.get("type") == "tool_use"
        and block.get("name") != _VERDICT_TOOL
        for block in content
    )


def _closes_a_cut_off_request(entry: Mapping[str, Any]) -> bool:
    """The CLI's placeholder answer ("No response requested.", measured with 2.1.337)
    for a request the session's last process sent and never heard answered, written by
    the process that resumes the session, at its start: a `<synthetic>` answer that
    names no request and is no API error's (those say `isApiErrorMessage`, `error`)."""
    message = entry.get("message")
    model = message.get("model") if isinstance(message, Mapping) else None
    error = entry.get("isApiErrorMessage") or entry.get("error")
    return model == _NO_MODEL and not entry.get("requestRef") and not error


def _is_prompt(entry: Mapping[str, Any]) -> bool:
    """A user's prompt, not a tool's result (which comes back in a list of blocks)."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        return True
    return not any(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content)


def _thread(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry.get("thread") or {"type": "none"}, sort_keys=True, default=str)


def session_written(config_dir: Path, session_id: str) -> bool:
    """Whether Claude Code wrote any of `session_id`'s conversation, so that a CLI can
    resume it. It names a new session (its `init` message) a moment before it writes the
    first prompt: a driver killed in between leaves a session id no CLI can resume ("No
    conversation found"), on which nothing was served. Since 2.1.337 the transcript
    begins with lines of its own before that prompt (the request's route, its queue), so
    a transcript that holds no prompt or answer is no conversation either."""
    return any(entry.get("type") in _CONVERSATION for entry in _entries(config_dir, session_id))


# The entries of a conversation a resume reads; everything else is the CLI's bookkeeping.
_CONVERSATION = ("user", "assistant")


def _transcripts(config_dir: Path, session_id: str) -> Iterator[Path]:
    # A session id is a UUID, one file under whichever project directory holds it.
    if not session_id or "/" in session_id or session_id.startswith("."):
        return iter(())
    return (config_dir / "projects").glob(f"*/{session_id}.jsonl")


def _entries(config_dir: Path, session_id: str) -> Iterator[Mapping[str, Any]]:
    for path in _transcripts(config_dir, session_id):
        yield from json_lines(path)


def json_lines(path: Path) -> Iterator[Mapping[str, Any]]:
    """Each JSON object of a JSON Lines file a kill may have cut short (the CLI's
    transcript, claudeloop's responses.jsonl); nothing if it cannot be read."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line the kill cut short
        if isinstance(entry, Mapping):
            yield entry


def stamped_since(entry: Mapping[str, Any], key: str, since: datetime) -> bool:
    """Whether the entry's instant under `key` (an ISO time with its zone) is `since`
    or later; an entry with no such instant is not."""
    try:
        at = datetime.fromisoformat(str(entry.get(key)))
    except ValueError:
        return False
    return at.utcoffset() is not None and at >= since


def _since(entry: Mapping[str, Any], since: datetime) -> bool:
    return stamped_since(entry, "timestamp", since)


def _served(entry: Mapping[str, Any], since: datetime | None) -> ServedRequest | None:
    message = entry.get("message")
    if entry.get("type") != "assistant" or not isinstance(message, Mapping):
        return None
    model, usage = message.get("model"), message.get("usage")
    request_id = entry.get("requestId") or message.get("id")
    if not isinstance(model, str) or model == _NO_MODEL or not isinstance(usage, Mapping):
        return None
    if not isinstance(request_id, str) or not request_id:
        return None
    if since is not None and not _since(entry, since):
        return None
    ident = message.get("id")
    return ServedRequest(
        request_id=request_id,
        model=model,
        usage=usage,
        message_id=ident if isinstance(ident, str) else "",
    )
