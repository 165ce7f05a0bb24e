"""A turn cut off by a kill -9 is billed by what is knowable: the transcript, what the
stream delivered (responses.jsonl), and an estimate for the rest (cut_off.py)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import anyio
import pytest
from claude_agent_sdk import StreamEvent

from claudeloop.adapters.claude_code import ClaudeCodeGateway, GatewaySettings
from claudeloop.adapters.claude_code import sdk_gateway as gateway_module
from claudeloop.adapters.claude_code.cut_off import with_streamed
from claudeloop.adapters.claude_code.responses import (
    ResponseLog,
    StreamedResponse,
    StreamedTurn,
)
from claudeloop.adapters.claude_code.transcript import CutOff, ServedRequest
from tests.adapters.claude_code.test_sdk_gateway import (
    CUT_OFF,
    SESSION,
    FakeCli,
    after_a_crash,
    answer,
    cut_off_transcript,
    init,
)

MODEL = "claude-sonnet-5-5"
USAGE = {"input_tokens": 200, "output_tokens": 40}


def start(message_id: str, *, input_tokens: int = 200) -> dict[str, object]:
    usage = {"input_tokens": input_tokens, "output_tokens": 1}
    return {"type": "message_start", "message": {"id": message_id, "model": MODEL, "usage": usage}}


def delta(output_tokens: int = 40) -> dict[str, object]:
    return {"type": "message_delta", "delta": {}, "usage": {"output_tokens": output_tokens}}


def at(seconds: float) -> datetime:
    return CUT_OFF + timedelta(seconds=seconds)


def test_an_answer_heard_to_its_end_is_kept_with_its_final_usage(tmp_path: Path) -> None:
    clock = iter([at(1), at(2), at(3)])
    log = ResponseLog(tmp_path / "responses.jsonl", clock=lambda: next(clock))
    log.heard(SESSION, start("msg_a"))
    log.heard(SESSION, {"type": "content_block_delta"})  # nothing of usage
    log.heard(SESSION, delta(40))
    log.heard(SESSION, start("msg_b"))  # cut mid-stream
    turn = log.since(SESSION, CUT_OFF)
    assert turn.responses == (
        StreamedResponse("msg_a", MODEL, USAGE, complete=True),
        StreamedResponse("msg_b", MODEL, {"input_tokens": 200, "output_tokens": 1}, False),
    )
    assert not turn.prompted


def test_only_the_sessions_answers_since_the_cut_are_read_and_a_cut_line_is_skipped(
    tmp_path: Path,
) -> None:
    path = tmp_path / "responses.jsonl"
    clock = iter([at(-5), at(1), at(2), at(3)])
    log = ResponseLog(path, clock=lambda: next(clock))
    log.heard(SESSION, start("msg_before"))  # the turn before the cut-off one
    log.prompted(SESSION)
    log.heard("another-session", start("msg_other"))
    log.heard(SESSION, start("msg_sub"), parent="toolu_1")  # a subagent's stream
    with path.open("a") as file:
        file.write('{"at": "2026-12-01T12:00:04+00:00", "session": "')  # the kill's cut
    turn = log.since(SESSION, CUT_OFF)
    assert [answer.message_id for answer in turn.responses] == ["msg_sub"]
    assert turn.prompted


def test_a_log_nowhere_keeps_nothing_and_a_full_disk_never_ends_a_turn(tmp_path: Path) -> None:
    nowhere = ResponseLog(None)
    nowhere.prompted(SESSION)
    assert nowhere.since(SESSION, CUT_OFF) == StreamedTurn()
    blocked = tmp_path / "file"
    blocked.write_text("")
    unwritable = ResponseLog(blocked / "responses.jsonl")  # its directory is a file
    unwritable.heard(SESSION, start("msg_a"))
    assert unwritable.since(SESSION, CUT_OFF) == StreamedTurn()


def served(message_id: str) -> ServedRequest:
    return ServedRequest(f"req_{message_id}", MODEL, USAGE, message_id)


def test_an_answer_the_stream_delivered_and_the_transcript_lacks_is_served_not_in_flight() -> None:
    lost = CutOff(served=(served("msg_a"),), in_flight=1)
    streamed = StreamedTurn(
        (
            StreamedResponse("msg_a", MODEL, USAGE, complete=True),  # kept by both: once
            StreamedResponse("msg_b", MODEL, USAGE, complete=True),
        )
    )
    billed = with_streamed(lost, streamed)
    assert [request.message_id for request in billed.served] == ["msg_a", "msg_b"]
    assert (billed.in_flight, billed.partial) == (0, ())


def test_an_answer_cut_mid_stream_stays_in_flight_with_what_it_showed() -> None:
    cut = StreamedResponse("msg_b", MODEL, {"input_tokens": 200}, complete=False)
    # The transcript had not even written the request's line: it is in flight all the same.
    billed = with_streamed(CutOff(), StreamedTurn((cut,)))
    assert billed.in_flight == 1
    assert [request.message_id for request in billed.partial] == ["msg_b"]


def test_a_prompt_sent_of_which_nothing_was_kept_is_one_request_in_flight() -> None:
    assert with_streamed(CutOff(), StreamedTurn(prompted=True)).in_flight == 1
    assert with_streamed(CutOff(), StreamedTurn()).in_flight == 0
    # Something of the turn was kept: that account stands.
    kept = CutOff(served=(served("msg_a"),))
    assert with_streamed(kept, StreamedTurn(prompted=True)).in_flight == 0


def gateway_with_log(
    cli: FakeCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, log: Path
) -> ClaudeCodeGateway:
    monkeypatch.setattr(gateway_module, "ClaudeSDKClient", cli.client)
    settings = GatewaySettings(
        cwd=Path("/work/project"),
        stderr_log=tmp_path / "debug.log",
        responses_log=log,
        env={"CLAUDE_CONFIG_DIR": str(tmp_path / "config")},
    )
    return ClaudeCodeGateway(settings)


def test_a_turn_keeps_each_answers_usage_as_it_streams_in(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "run" / "responses.jsonl"
    events = [StreamEvent(uuid="u", session_id=SESSION, event=e) for e in (start("m"), delta())]
    cli = FakeCli([init(SESSION), *events, answer()])
    gateway = gateway_with_log(cli, monkeypatch, tmp_path, log)

    async def go() -> None:
        await gateway.run_turn("go on", session_id=SESSION)
        await gateway.close()

    anyio.run(go)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line.get("prompt") or line["complete"] for line in lines] == [True, False, True]
    assert lines[-1]["usage"] == {"input_tokens": 200, "output_tokens": 40}
    assert log.stat().st_mode & 0o777 == 0o600


def write_log(log: Path, *, complete: bool) -> None:
    """The request in flight in cut_off_transcript, as the stream delivered it."""
    entry = {
        "at": at(3).isoformat(),
        "session": SESSION,
        "id": "msg_b",
        "model": MODEL,
        "usage": USAGE if complete else {"input_tokens": 200, "output_tokens": 1},
        "complete": complete,
    }
    log.write_text(json.dumps(entry) + "\n")


def test_the_answer_in_flight_that_the_stream_delivered_is_billed_at_its_own_usage(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cut_off_transcript(tmp_path / "config")
    log = tmp_path / "responses.jsonl"
    write_log(log, complete=True)
    cli = FakeCli([answer(cost=0.0016, tokens=(400, 80), session_tokens=(400, 80))])
    outcome = after_a_crash(gateway_with_log(cli, monkeypatch, tmp_path, log))
    # Its own 0.0016, the answer the transcript kept 0.0008, the one only the stream
    # delivered 0.0008: all known, nothing estimated.
    assert outcome.cost_usd == pytest.approx(0.0032)
    assert outcome.estimated_cost_usd == 0.0


def test_an_answer_cut_mid_stream_is_billed_at_an_estimate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cut_off_transcript(tmp_path / "config")
    log = tmp_path / "responses.jsonl"
    write_log(log, complete=False)
    cli = FakeCli([answer(cost=0.0016, tokens=(400, 80), session_tokens=(400, 80))])
    outcome = after_a_crash(gateway_with_log(cli, monkeypatch, tmp_path, log))
    # Priced like the answer before it (0.0008), above the 0.000402 its stream showed.
    assert outcome.cost_usd == pytest.approx(0.0032)
    assert outcome.estimated_cost_usd == pytest.approx(0.0008)
