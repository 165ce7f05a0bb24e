"""The answers a session's transcript keeps, read for a turn a crash cut off, and their
price at the rates the next result shows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from claudeloop.adapters.claude_code.pricing import ModelSpend, lost_price
from claudeloop.adapters.claude_code.transcript import (
    CutOff,
    config_directory,
    cut_off_turn,
    served_since,
    session_written,
)

SESSION = "664c5ebc-a560-4f0d-9d41-a53829f04859"
CUT_OFF = datetime(2026, 12, 1, 12, 3, 33, tzinfo=UTC)
USAGE = {"input_tokens": 200, "output_tokens": 40, "cache_read_input_tokens": 0}


def answer(at: str, request: str, model: str = "claude-sonnet-5-5") -> dict[str, Any]:
    return {
        "type": "assistant",
        "timestamp": at,
        "requestId": request,
        "message": {"id": f"msg_{request}", "model": model, "usage": USAGE},
    }


def transcript(config: Path, *entries: dict[str, Any], torn: bool = False) -> None:
    project = config / "projects" / "-tmp-project"
    project.mkdir(parents=True)
    lines = [json.dumps(entry) for entry in entries]
    text = "\n".join(lines) + ('\n{"type": "assist' if torn else "\n")
    (project / f"{SESSION}.jsonl").write_text(text)


def test_the_answers_since_the_cut_off_turn_began_count_once_each(tmp_path: Path) -> None:
    transcript(
        tmp_path,
        answer("2026-12-01T12:03:32.961Z", "req_before"),  # the turn before: billed already
        {"type": "user", "timestamp": "2026-12-01T12:03:33.033Z", "message": {"role": "user"}},
        answer("2026-12-01T12:03:33.069Z", "req_a"),
        answer("2026-12-01T12:03:33.070Z", "req_a"),  # the same answer's second block
        answer("2026-12-01T12:03:33.143Z", "req_b"),
        answer("2026-12-01T12:03:33.150Z", "req_error", model="<synthetic>"),
        torn=True,  # the kill cut the last line short
    )
    served = served_since(tmp_path, SESSION, CUT_OFF)
    assert [request.request_id for request in served] == ["req_a", "req_b"]


def test_no_transcript_means_nothing_served(tmp_path: Path) -> None:
    assert served_since(tmp_path, SESSION, CUT_OFF) == ()
    assert served_since(tmp_path, "../escape", CUT_OFF) == ()


def test_the_config_directory_is_the_clis(tmp_path: Path) -> None:
    assert config_directory({"CLAUDE_CONFIG_DIR": str(tmp_path)}) == tmp_path
    assert config_directory({"HOME": "/home/ada"}) == Path("/home/ada/.claude")


def test_lost_answers_cost_what_the_next_result_says_their_model_costs() -> None:
    # 0.0016 for 2 x (200 in + 5 x 40 out) = 800 weighted tokens: 0.000002 a token.
    spends = (
        ModelSpend("claude-sonnet-5-5", cost_usd=0.0016, weighted_tokens=800, guessed=False),
        ModelSpend("qwen3", cost_usd=0.004, weighted_tokens=400, guessed=True),
    )
    price = lost_price(
        [("claude-sonnet-5-5", USAGE), ("claude-sonnet-5-5", USAGE), ("qwen3", USAGE)], spends
    )
    assert price.listed_usd == pytest.approx(0.0016)
    assert price.guessed_usd == pytest.approx(0.004)
    assert price.guessed_models == ("qwen3",)
    # A model the result prices not at all has no rate to go by: left out.
    assert lost_price([("claude-other", USAGE)], spends).listed_usd == 0


def sent(at: str, request: str, thread: str = "none") -> dict[str, Any]:
    """The line Claude Code writes before it sends a request (measured, CLI 2.1.332)."""
    return {"type": "api-request", "timestamp": at, "id": request, "thread": {"type": thread}}


def answered(at: str, request: str, answer_id: str) -> dict[str, Any]:
    return {**answer(at, answer_id), "requestRef": request}


def failed(at: str) -> dict[str, Any]:
    """The CLI's placeholder for an API error, a 429's (measured, CLI 2.1.337)."""
    entry = answer(at, "req_err", model="<synthetic>")
    return {**entry, "error": "rate_limit", "isApiErrorMessage": True, "apiErrorStatus": 429}


def closed(at: str) -> dict[str, Any]:
    """What a CLI resuming the session writes, as it starts, for the request its last
    process sent and never heard answered (measured, CLI 2.1.337)."""
    entry = answer(at, "req_none", model="<synthetic>")
    content = [{"type": "text", "text": "No response requested."}]
    return {
        **entry,
        "isApiErrorMessage": False,
        "message": {**entry["message"], "content": content},
    }


def test_a_request_sent_whose_answer_never_came_is_in_flight(tmp_path: Path) -> None:
    transcript(
        tmp_path,
        sent("2026-12-01T12:03:30.000Z", "r0"),
        answered("2026-12-01T12:03:31.000Z", "r0", "req_before"),  # the turn before
        {"type": "user", "timestamp": "2026-12-01T12:03:33.033Z", "message": {"role": "user"}},
        sent("2026-12-01T12:03:33.100Z", "r1"),
        answered("2026-12-01T12:03:33.200Z", "r1", "req_a"),
        sent("2026-12-01T12:03:33.300Z", "r2"),  # the kill came while it was answered
    )
    cut = cut_off_turn(tmp_path, SESSION, CUT_OFF)
    assert [request.request_id for request in cut.served] == ["req_a"]
    assert cut.in_flight == 1
    assert cut.last_answered is not None
    assert cut.last_answered.request_id == "req_a"


def test_a_request_that_failed_and_was_sent_again_is_not_in_flight(tmp_path: Path) -> None:
    transcript(
        tmp_path,
        sent("2026-12-01T12:03:33.100Z", "r1"),  # stalled, then cut: sent again
        sent("2026-12-01T12:03:37.100Z", "r2"),
        answered("2026-12-01T12:03:37.200Z", "r2", "req_a"),
        sent("2026-12-01T12:03:37.300Z", "r3"),
        failed("2026-12-01T12:03:37.400Z"),  # a 429
    )
    cut = cut_off_turn(tmp_path, SESSION, CUT_OFF)
    assert cut.in_flight == 0
    assert [request.request_id for request in cut.served] == ["req_a"]


def test_requests_in_flight_on_two_threads_count_apart(tmp_path: Path) -> None:
    transcript(
        tmp_path,
        sent("2026-12-01T12:03:33.100Z", "r1"),
        sent("2026-12-01T12:03:33.150Z", "s1", thread="agent"),
        answered("2026-12-01T12:03:33.200Z", "r1", "req_a"),
        sent("2026-12-01T12:03:33.300Z", "r2"),
    )
    cut = cut_off_turn(tmp_path, SESSION, CUT_OFF)
    assert cut.in_flight == 2


def test_a_session_never_written_has_no_transcript(tmp_path: Path) -> None:
    assert not session_written(tmp_path, SESSION)
    assert cut_off_turn(tmp_path, SESSION, CUT_OFF) == CutOff()
    transcript(tmp_path, prompt("2026-12-01T12:03:33.000Z"), sent("2026-12-01T12:03:33.100Z", "r1"))
    assert session_written(tmp_path, SESSION)
    assert not session_written(tmp_path, "../escape")


def prompt(at: str) -> dict[str, Any]:
    return {"type": "user", "timestamp": at, "message": {"role": "user", "content": "go"}}


def test_a_transcript_of_bookkeeping_alone_is_no_session_a_cli_can_resume(
    tmp_path: Path,
) -> None:
    # CLI 2.1.337 begins a transcript with lines of its own before the prompt (measured:
    # a first line of 129 bytes, then the queue's); killed then, `--resume` of the id
    # says "No conversation found" (resume_target_not_found), so it is not written.
    transcript(
        tmp_path,
        {"type": "api-request-route", "provider": "customEndpoint", "credential": "login",
         "sessionId": SESSION},
        {"type": "queue-operation", "operation": "enqueue", "sessionId": SESSION,
         "timestamp": "2026-12-06T06:19:24.307Z", "content": "go"},
        {"type": "queue-operation", "operation": "dequeue", "sessionId": SESSION,
         "timestamp": "2026-12-06T06:19:24.321Z"},
        torn=True,
    )  # fmt: skip
    assert not session_written(tmp_path, SESSION)


def said(at: str, *, result: bool = False, ends_turn: bool = False) -> dict[str, Any]:
    """A prompt, or a tool's result, as the CLI writes it before its next request."""
    content: object = [{"type": "tool_result", "content": "ok"}] if result else "Go on."
    message = {"role": "user", "content": content}
    entry: dict[str, Any] = {"type": "user", "timestamp": at, "message": message}
    return {**entry, "toolEndsTurn": True} if ends_turn else entry


def calling(at: str, request: str, answer_id: str, tool: str) -> dict[str, Any]:
    entry = answered(at, request, answer_id)
    content = [{"type": "tool_use", "name": tool, "input": {}}]
    return {**entry, "message": {**entry["message"], "content": content}}


@pytest.mark.parametrize(
    ("tail", "in_flight"),
    [
        # The kill came before the CLI wrote the line of the request it was sending.
        (
            [answered("2026-12-01T12:03:33.080Z", "r1", "req_a"), said("2026-12-01T12:03:33.100Z")],
            1,
        ),
        # A prompt while r1 waits is the next process's: r1 was cut off too.
        ([said("2026-12-01T12:03:33.100Z")], 2),
        ([calling("2026-12-01T12:03:33.200Z", "r1", "req_a", "Write")], 1),
        (
            [
                calling("2026-12-01T12:03:33.200Z", "r1", "req_a", "Write"),
                said("2026-12-01T12:03:33.300Z", result=True),  # the tool's result
            ],
            1,
        ),
        # The verdict ends the turn: no request follows it.
        ([calling("2026-12-01T12:03:33.200Z", "r1", "req_a", "StructuredOutput")], 0),
        (
            [
                calling("2026-12-01T12:03:33.200Z", "r1", "req_a", "StructuredOutput"),
                said("2026-12-01T12:03:33.300Z", result=True, ends_turn=True),
            ],
            0,
        ),
    ],
)
def test_a_request_about_to_go_when_the_transcript_stops_counts_as_in_flight(
    tmp_path: Path, tail: list[dict[str, Any]], in_flight: int
) -> None:
    transcript(tmp_path, sent("2026-12-01T12:03:33.050Z", "r1"), *tail)
    assert cut_off_turn(tmp_path, SESSION, CUT_OFF).in_flight == in_flight


def test_a_request_the_crash_cut_off_stays_in_flight_after_a_refused_resend(
    tmp_path: Path,
) -> None:
    # Killed with r1 unanswered; the next driver's CLI sends the turn again and the
    # closed window refuses it; a third driver, resumed from the wait, reads this.
    transcript(
        tmp_path,
        said("2026-12-01T12:03:33.050Z"),
        sent("2026-12-01T12:03:33.100Z", "r1"),
        said("2026-12-01T12:03:40.000Z"),  # the prompt of the turn sent again
        sent("2026-12-01T12:03:40.100Z", "r2"),
        failed("2026-12-01T12:03:40.200Z"),  # a 429
    )
    cut = cut_off_turn(tmp_path, SESSION, CUT_OFF)
    assert cut.in_flight == 1
    assert cut.served == ()


def test_a_tool_result_while_its_request_is_about_to_go_is_no_new_prompt(
    tmp_path: Path,
) -> None:
    transcript(
        tmp_path,
        sent("2026-12-01T12:03:33.100Z", "r1"),
        calling("2026-12-01T12:03:33.200Z", "r1", "req_a", "Write"),
        said("2026-12-01T12:03:33.300Z", result=True),
        sent("2026-12-01T12:03:33.400Z", "r2"),
        answered("2026-12-01T12:03:33.500Z", "r2", "req_b"),
    )
    cut = cut_off_turn(tmp_path, SESSION, CUT_OFF)
    assert cut.in_flight == 0
    assert [request.request_id for request in cut.served] == ["req_a", "req_b"]


@pytest.mark.parametrize("closed_first", [True, False], ids=["closed-first", "prompt-first"])
def test_a_request_the_next_process_closes_itself_was_in_flight_whichever_line_comes_first(
    tmp_path: Path, closed_first: bool
) -> None:
    # Ctrl-C with r1 unanswered; the resume's CLI closes r1 with its own placeholder
    # (written as it starts, landing before or after its prompt), sends r2, and is
    # killed; the last resume's CLI has closed r2 too by the time the transcript is read.
    resumed = [closed("2026-12-01T12:03:40.000Z"), said("2026-12-01T12:03:40.100Z")]
    transcript(
        tmp_path,
        said("2026-12-01T12:03:33.050Z"),
        sent("2026-12-01T12:03:33.100Z", "r1"),
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "timestamp": "2026-12-01T12:03:40.050Z",
        },
        *(resumed if closed_first else reversed(resumed)),
        sent("2026-12-01T12:03:40.200Z", "r2"),
    )
    assert cut_off_turn(tmp_path, SESSION, CUT_OFF).in_flight == 2
    with (tmp_path / "projects" / "-tmp-project" / f"{SESSION}.jsonl").open("a") as file:
        file.write(json.dumps(closed("2026-12-01T12:03:50.000Z")) + "\n")
    assert cut_off_turn(tmp_path, SESSION, CUT_OFF).in_flight == 2
