"""The HTTP face of a rehearsal: the Messages API the CLI talks to, and the
`/_rehearsal/*` controls a test or a user drives.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from claudeloop.rehearsal.conversation import (
    BadRequest,
    Conversation,
    credentials_kind,
    read_conversation,
)
from claudeloop.rehearsal.failures import (
    BrokenStream,
    CutAtMaxTokens,
    GateAnswer,
    HttpFailure,
    NoFirstByte,
    RefusedByModel,
    Warned,
    Windows,
    gate_answer,
)
from claudeloop.rehearsal.gates import GateSchedule, Timeline
from claudeloop.rehearsal.ledger import Ledger
from claudeloop.rehearsal.player import Reply, play
from claudeloop.rehearsal.player import TextBlock as PlayedText
from claudeloop.rehearsal.scenario import Scenario
from claudeloop.rehearsal.sse import (
    encode_event,
    error_envelope,
    message_json,
    new_message_id,
    new_request_id,
    stream_events,
)

# uvicorn reports a response cut short, or never started, as an error; here it is the
# point of the gate.
_CUT_SHORT = (
    "ASGI callable returned without completing response.",
    "ASGI callable returned without starting response.",
)


class _QuietAboutCuts(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() not in _CUT_SHORT


logging.getLogger("uvicorn.error").addFilter(_QuietAboutCuts())


class RehearsalState:
    """One rehearsal's state: the scenario, its clock, its gates and its ledger."""

    def __init__(self, scenario: Scenario, *, time_scale: float = 1.0) -> None:
        self.scenario = scenario
        self.timeline = Timeline(time_scale)
        five_hour = scenario.five_hour_window_seconds
        self.gates = GateSchedule(
            list(scenario.gates), self.timeline, window_reset_seconds=five_hour
        )
        self.ledger = Ledger(self.timeline)
        self.windows = Windows(self.timeline, five_hour_seconds=five_hour)
        # Reviews answered with their verdict: the next review plays the one after.
        self.reviews_done = 0
        # How many lifts so far: a stall in flight ends at the next one.
        self.lifts = 0

    def state(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.name,
            "time_scale": self.timeline.time_scale,
            **self.ledger.snapshot(),
            "gates": self.gates.snapshot(),
        }

    def lift(self) -> dict[str, Any]:
        now = self.timeline.now()
        lifted = self.gates.lift(now)
        self.ledger.lifted(now)
        self.lifts += 1
        return {"lifted": lifted, "lifted_at": self.ledger.snapshot()["lifted_at"]}


def build_app(rehearsal: RehearsalState) -> Starlette:
    async def messages(request: Request) -> Response:
        return await _messages(rehearsal, request)

    async def count_tokens(request: Request) -> Response:
        received = rehearsal.ledger.now()
        request_id = new_request_id()
        body = await request.body()
        rehearsal.ledger.record(
            received=received,
            path=request.url.path,
            kind="count_tokens",
            credentials=credentials_kind(request.headers),
            status=200,
            request_id=request_id,
            answered=True,
        )
        # Roughly four characters a token, as good as any guess without a tokenizer.
        tokens = max(1, len(body) // 4)
        return JSONResponse({"input_tokens": tokens}, headers={"request-id": request_id})

    async def state(_request: Request) -> Response:
        return JSONResponse(rehearsal.state())

    async def lift(_request: Request) -> Response:
        return JSONResponse(rehearsal.lift())

    async def unknown(_request: Request) -> Response:
        request_id = new_request_id()
        envelope = error_envelope("not_found_error", "Not Found", request_id)
        return JSONResponse(envelope, status_code=404, headers={"request-id": request_id})

    return Starlette(
        routes=[
            Route("/v1/messages", messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
            Route("/_rehearsal/state", state, methods=["GET"]),
            Route("/_rehearsal/lift", lift, methods=["POST"]),
            Route("/{path:path}", unknown, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
        ]
    )


async def _messages(rehearsal: RehearsalState, request: Request) -> Response:
    received = rehearsal.ledger.now()
    request_id = new_request_id()
    credentials = credentials_kind(request.headers)
    try:
        conversation = read_conversation(
            json.loads(await request.body()),
            structured_output=rehearsal.scenario.structured_output,
        )
    except (ValueError, BadRequest) as error:
        rehearsal.ledger.record(
            received=received,
            path=request.url.path,
            kind="invalid",
            credentials=credentials,
            status=400,
            request_id=request_id,
        )
        text = str(error) if isinstance(error, BadRequest) else "body is not valid JSON"
        return _error(HttpFailure(400, "invalid_request_error", text), request_id)

    answering = rehearsal.gates.answering(
        conversation.kind,
        conversation.turn,
        received,
        step=conversation.step,
        model=conversation.model,
    )
    answer: GateAnswer | None = None
    if answering is not None:
        answer = gate_answer(answering, model=conversation.model, windows=rehearsal.windows)
    reply = play(rehearsal.scenario, conversation, reviews_done=rehearsal.reviews_done)
    if isinstance(answer, CutAtMaxTokens):
        # Text cut off mid-sentence at the cap, no tool call, no verdict.
        reply = Reply(blocks=(PlayedText("I am writing the file and"),), stop_reason="max_tokens")
    if isinstance(answer, RefusedByModel):
        # The model declines: no text, no tool call, the category and why in stop_details.
        reply = Reply(
            blocks=(),
            stop_reason="refusal",
            stop_details={"category": answer.category, "explanation": answer.explanation},
        )
    delivered = answer is None or isinstance(answer, Warned | CutAtMaxTokens)
    if conversation.review and delivered and reply.verdict:
        rehearsal.reviews_done += 1
    status = answer.status if isinstance(answer, HttpFailure) else 200
    if isinstance(answer, NoFirstByte):
        status = 0  # none is sent
    rehearsal.ledger.record(
        received=received,
        path=request.url.path,
        kind=conversation.kind,
        credentials=credentials,
        status=status,
        request_id=request_id,
        turn=conversation.turn,
        step=conversation.step,
        model=conversation.model,
        stream=conversation.stream,
        gate=None if answering is None else answering.gate.kind,
        gate_index=None if answering is None else answering.index,
        answered=delivered,
        verdict=delivered and reply.verdict,
        cwd=conversation.cwd,
        prompt=conversation.prompt,
    )
    if isinstance(answer, HttpFailure):
        return _error(answer, request_id)

    headers = {"request-id": request_id}
    headers |= answer.headers if isinstance(answer, Warned) else rehearsal.windows.allowed_headers()
    message_id = new_message_id()
    usage = rehearsal.scenario.usage
    model = conversation.model
    if isinstance(answer, BrokenStream):
        return _broken(answer, rehearsal, conversation, headers, message_id)
    if isinstance(answer, NoFirstByte):
        lifts = rehearsal.lifts
        return Unstarted(lifted=lambda: rehearsal.lifts > lifts)
    if not conversation.stream:
        body = message_json(reply, model=model, usage=usage, message_id=message_id)
        return JSONResponse(body, headers=headers)
    events = stream_events(reply, model=model, usage=usage, message_id=message_id)
    return StreamingResponse(
        _each(events), media_type="text/event-stream", headers=headers | _NO_CACHE
    )


_NO_CACHE = {"cache-control": "no-cache"}
# A delta cut off mid-object: what a proxy that truncates lines would pass on.
_NOT_JSON = (
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{\n\n'
)


async def _each(events: list[bytes]) -> AsyncIterator[bytes]:
    for event in events:
        yield event


def _error(failure: HttpFailure, request_id: str) -> Response:
    envelope = failure.body or error_envelope(failure.error_type, failure.message, request_id)
    headers = failure.headers | {"request-id": request_id}
    return JSONResponse(envelope, status_code=failure.status, headers=headers)


def _broken(
    answer: BrokenStream,
    rehearsal: RehearsalState,
    conversation: Conversation,
    headers: dict[str, str],
    message_id: str,
) -> Response:
    reply = play(rehearsal.scenario, conversation, reviews_done=rehearsal.reviews_done)
    usage = rehearsal.scenario.usage
    if conversation.stream:
        events = stream_events(reply, model=conversation.model, usage=usage, message_id=message_id)
        # message_start, ping, the first block's start and first delta: enough for the
        # client to believe the answer is under way.
        head = b"".join(events[:4])
        media = "text/event-stream"
        tail = _NOT_JSON + encode_event("message_stop", {"type": "message_stop"})
    else:
        whole = json.dumps(
            message_json(reply, model=conversation.model, usage=usage, message_id=message_id)
        ).encode()
        head = whole[: len(whole) // 2]
        media = "application/json"
        tail = b'"}}'
    seconds = rehearsal.timeline.real(answer.stall_seconds)
    lifts = rehearsal.lifts
    return BrokenResponse(
        answer.how,
        head=head,
        tail=tail,
        stall_seconds=seconds,
        media_type=media,
        headers=headers,
        lifted=lambda: rehearsal.lifts > lifts,
    )


async def _until_gone_or_lifted(receive: Receive, lifted: Callable[[], bool]) -> None:
    """Returns when the client disconnects or the rehearsal is lifted."""
    async with anyio.create_task_group() as group:

        async def gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            group.cancel_scope.cancel()

        group.start_soon(gone)
        while not lifted():
            await anyio.sleep(0.05)
        group.cancel_scope.cancel()


class Unstarted(Response):
    """No answer: not even the status line, until the client gives up or a lift (then
    the server ends it, with the 500 uvicorn sends for an answer never started)."""

    def __init__(self, *, lifted: Callable[[], bool]) -> None:
        # Not Response.__init__: nothing of a response is ever prepared.
        self.background = None
        self._lifted = lifted

    async def __call__(self, _scope: Scope, receive: Receive, _send: Send) -> None:
        await _until_gone_or_lifted(receive, self._lifted)


class BrokenResponse(Response):
    """A 200 that goes wrong after its first bytes.

    drop: the head, then the connection closes. stall: the head, then silence for
    `stall_seconds` (or until the client gives up, or a lift: a test holds a turn in
    flight as long as it needs, whatever the machine's load), then the connection closes.
    hang: the head, then silence with the connection open until the client gives up
    (or a lift, which closes it). malformed: the head, then a data line that is not
    JSON, then a normal end.
    """

    def __init__(
        self,
        how: str,
        *,
        head: bytes,
        tail: bytes,
        stall_seconds: float,
        media_type: str,
        headers: dict[str, str],
        lifted: Callable[[], bool] = lambda: False,
    ) -> None:
        # Not Response.__init__: it would declare a Content-Length, and a cut body must be
        # chunked so that the client, not the server's HTTP layer, sees it end early.
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (name.encode("latin-1"), value.encode("latin-1"))
            for name, value in (headers | {"content-type": media_type}).items()
        ]
        self._how = how
        self._head = head
        self._tail = tail
        self._stall_seconds = stall_seconds
        self._lifted = lifted

    async def __call__(self, _scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": self._head, "more_body": True})
        if self._how == "malformed":
            await send({"type": "http.response.body", "body": self._tail, "more_body": False})
            return
        if self._how == "stall":
            with anyio.move_on_after(self._stall_seconds):
                await _until_gone_or_lifted(receive, self._lifted)
        if self._how == "hang":
            await _until_gone_or_lifted(receive, self._lifted)
        # Returning with the body unfinished makes the server close the connection.
