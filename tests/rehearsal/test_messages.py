"""The played model over HTTP: SSE shapes, turn and step accounting, probes, records."""

from __future__ import annotations

import httpx
import pytest

from claudeloop.rehearsal import RehearsalServer, builtin_scenario
from tests.rehearsal.wire import (
    CWD,
    ENVIRONMENT,
    TOOLS,
    assembled,
    body,
    events,
    first_turn,
    post,
    prompt,
    scenario,
    tool_call,
    tool_result,
)


def test_a_first_turn_streams_text_then_the_write_call_in_api_order(http: httpx.Client) -> None:
    with RehearsalServer(builtin_scenario("happy")) as server:
        response = post(http, server, first_turn())
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    names = [name for name, _ in events(response.text)]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_start") == names.count("content_block_stop") == 2
    start = events(response.text)[0][1]["message"]
    assert start["id"].startswith("msg_")
    assert start["model"] == "claude-test-1"
    assert start["usage"]["input_tokens"] > 0
    text, write = assembled(response.text)
    assert text["type"] == "text"
    assert text["text"]
    assert write["type"] == "tool_use"
    assert write["name"] == "Write"
    assert write["id"].startswith("toolu_")
    assert write["input"] == {"file_path": f"{CWD}/step1.txt", "content": "step one\n"}
    delta = events(response.text)[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"]["output_tokens"] > 0


def test_the_tool_result_is_answered_with_the_verdict_through_structured_output(
    http: httpx.Client,
) -> None:
    conversation = [prompt("do the plan"), ENVIRONMENT, tool_call(), tool_result()]
    with RehearsalServer(builtin_scenario("happy")) as server:
        response = post(http, server, body(conversation))
        state = server.state()
    [verdict] = assembled(response.text)
    assert verdict["name"] == "StructuredOutput"
    assert verdict["input"] == {
        "complete": False,
        "remaining_work": ["Write step2.txt", "Write step3.txt"],
        "blocked_on": "",
        "summary": "Wrote step1.txt.",
    }
    assert events(response.text)[-2][1]["delta"]["stop_reason"] == "tool_use"
    [record] = state["requests"]
    assert (record["kind"], record["turn"], record["step"]) == ("turn", 1, 1)
    assert record["verdict"] is True
    assert state["verdicts"] == 1


def test_a_resumed_turn_counts_its_prompt_even_when_merged_with_the_last_tool_result(
    http: httpx.Client,
) -> None:
    conversation = [
        prompt("do the plan"),
        ENVIRONMENT,
        tool_call("Write", "toolu_1"),
        tool_result("toolu_1"),
        tool_call("StructuredOutput", "toolu_2"),
        tool_result("toolu_2", then="continue"),
    ]
    with RehearsalServer(builtin_scenario("happy")) as server:
        response = post(http, server, body(conversation))
        [record] = server.state()["requests"]
    assert (record["turn"], record["step"]) == (2, 0)
    assert assembled(response.text)[0]["input"]["file_path"] == f"{CWD}/step2.txt"


FILLER = {"role": "assistant", "content": [{"type": "text", "text": "No response requested."}]}


def test_a_turn_cut_off_before_its_first_answer_and_sent_again_keeps_its_number(
    http: httpx.Client,
) -> None:
    # Its process ended (a kill, the watchdog): the resumed CLI answers the cut-off
    # prompt with words of its own before the prompt sent again.
    conversation = [
        prompt("do the plan"),
        ENVIRONMENT,
        tool_call("Write", "toolu_1"),
        tool_result("toolu_1", then="continue"),
        FILLER,
        prompt("continue"),
    ]
    with RehearsalServer(builtin_scenario("happy")) as server:
        response = post(http, server, body(conversation))
        [record] = server.state()["requests"]
    assert (record["turn"], record["step"]) == (2, 0)
    assert assembled(response.text)[0]["input"]["file_path"] == f"{CWD}/step2.txt"


def test_a_turn_cut_off_after_the_model_answered_is_followed_by_the_next_one(
    http: httpx.Client,
) -> None:
    conversation = [prompt("do the plan"), tool_call(), tool_result(), FILLER, prompt("go on")]
    with RehearsalServer(builtin_scenario("happy")) as server:
        post(http, server, body(conversation))
        [record] = server.state()["requests"]
    assert (record["turn"], record["step"]) == (2, 0)
    # The CLI's words after an answer are no answer either: the step is the model's.
    with RehearsalServer(builtin_scenario("happy")) as server:
        post(http, server, body([prompt("do the plan"), FILLER, tool_call(), tool_result()]))
        [record] = server.state()["requests"]
    assert (record["turn"], record["step"]) == (1, 1)


def test_system_reminders_alone_are_not_a_prompt(http: httpx.Client) -> None:
    reminder_only = {"role": "user", "content": "<system-reminder>\nnote\n</system-reminder>"}
    conversation = [prompt("do the plan"), tool_call(), reminder_only]
    with RehearsalServer(builtin_scenario("happy")) as server:
        post(http, server, body(conversation))
        [record] = server.state()["requests"]
    assert (record["turn"], record["step"]) == (1, 1)


def test_turns_past_the_scenario_repeat_its_last_verdict(http: httpx.Client) -> None:
    conversation = [prompt(f"turn {n}") if n % 2 else tool_call() for n in range(1, 12)]
    with RehearsalServer(builtin_scenario("happy")) as server:
        response = post(http, server, body(conversation))
        [record] = server.state()["requests"]
    assert record["turn"] == 6
    [verdict] = assembled(response.text)
    assert verdict["name"] == "StructuredOutput"
    assert verdict["input"]["complete"] is True


def test_a_turn_without_a_verdict_step_ends_with_one_complete_on_the_last_turn(
    http: httpx.Client,
) -> None:
    plan = scenario(
        '[[turns]]\n[[turns.steps]]\nkind = "tool"\nname = "Bash"\n'
        'input = { command = "ls {cwd}" }\n'
    )
    with RehearsalServer(plan) as server:
        bash = assembled(post(http, server, first_turn()).text)
        verdict = assembled(
            post(http, server, body([prompt("go"), tool_call(), tool_result()])).text
        )
    assert bash[0]["input"] == {"command": f"ls {CWD}"}
    assert verdict[0]["input"]["complete"] is True


def test_without_structured_output_the_tool_is_absent_so_the_request_is_a_probe(
    http: httpx.Client,
) -> None:
    tools = [tool for tool in TOOLS if tool["name"] != "StructuredOutput"]
    with RehearsalServer(builtin_scenario("happy")) as server:
        response = post(http, server, body([prompt("quota")], tools=tools))
        state = server.state()
    assert assembled(response.text) == [{"type": "text", "text": "ok"}]
    assert events(response.text)[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert (state["probes"], state["turn_requests"], state["turns"]) == (1, 0, 0)
    assert state["requests"][0]["turn"] is None


def test_the_marker_fallback_plays_turns_on_any_tools_and_says_done_with_the_marker(
    http: httpx.Client,
) -> None:
    plan = scenario(
        'structured_output = false\ndone_marker = "ALL_DONE"\n'
        '[[turns]]\n[[turns.steps]]\nkind = "verdict"\ncomplete = true\nsummary = "Finished."\n'
    )
    tools = [{"name": "Bash", "input_schema": {"type": "object"}}]
    with RehearsalServer(plan) as server:
        turn = post(http, server, body([prompt("go")], tools=tools))
        side = post(http, server, body([prompt("title?")], tools=[]))
        state = server.state()
    assert assembled(turn.text) == [{"type": "text", "text": "Finished.\n\nALL_DONE"}]
    assert events(turn.text)[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert assembled(side.text)[0]["text"] == "ok"
    assert (state["turns"], state["probes"]) == (1, 1)


def test_a_marker_step_is_text_ending_with_the_done_marker(http: httpx.Client) -> None:
    plan = scenario('[[turns]]\n[[turns.steps]]\nkind = "marker"\ntext = "Everything works."\n')
    with RehearsalServer(plan) as server:
        response = post(http, server, first_turn())
    [block] = assembled(response.text)
    assert block["text"] == "Everything works.\n\nCLAUDELOOP_TASK_FULLY_COMPLETE"


def test_relative_paths_become_absolute_under_the_working_directory(http: httpx.Client) -> None:
    plan = scenario(
        '[[turns]]\n[[turns.steps]]\nkind = "tool"\nname = "Write"\n'
        'input = { file_path = "notes/a.txt", content = "x" }\n'
    )
    with RehearsalServer(plan) as server:
        [write] = assembled(post(http, server, first_turn()).text)
    assert write["input"]["file_path"] == f"{CWD}/notes/a.txt"


def test_a_closed_verdict_schema_only_gets_its_own_keys(http: httpx.Client) -> None:
    closed = {
        "name": "StructuredOutput",
        "input_schema": {
            "type": "object",
            "properties": {"complete": {"type": "boolean"}, "summary": {"type": "string"}},
            "additionalProperties": False,
        },
    }
    conversation = [prompt("go"), tool_call(), tool_result()]
    with RehearsalServer(builtin_scenario("happy")) as server:
        [verdict] = assembled(post(http, server, body(conversation, tools=[closed])).text)
    assert set(verdict["input"]) == {"complete", "summary"}


def test_a_non_streaming_request_gets_the_whole_message_as_json(http: httpx.Client) -> None:
    with RehearsalServer(builtin_scenario("happy")) as server:
        response = post(http, server, body([prompt("go"), ENVIRONMENT], stream=False))
    message = response.json()
    assert response.status_code == 200
    assert message["type"] == "message"
    assert message["role"] == "assistant"
    assert message["stop_reason"] == "tool_use"
    assert [block["type"] for block in message["content"]] == ["text", "tool_use"]
    assert message["content"][1]["input"]["file_path"] == f"{CWD}/step1.txt"
    assert message["usage"]["input_tokens"] > 0
    assert message["usage"]["output_tokens"] > 0


def test_normal_answers_carry_a_request_id_and_allowed_unified_headers(http: httpx.Client) -> None:
    with RehearsalServer(builtin_scenario("happy")) as server:
        response = post(http, server, first_turn())
    headers = response.headers
    assert headers["request-id"].startswith("req_")
    assert headers["anthropic-ratelimit-unified-status"] == "allowed"
    assert headers["anthropic-ratelimit-unified-5h-status"] == "allowed"
    assert float(headers["anthropic-ratelimit-unified-5h-utilization"]) < 0.5
    assert int(headers["anthropic-ratelimit-unified-reset"]) > 0


def test_count_tokens_answers_a_positive_count_and_is_recorded_apart(http: httpx.Client) -> None:
    with RehearsalServer(builtin_scenario("happy")) as server:
        response = http.post(
            f"{server.base_url}/v1/messages/count_tokens?beta=true", json=first_turn()
        )
        state = server.state()
    assert response.status_code == 200
    assert response.json()["input_tokens"] > 0
    assert state["count_tokens"] == 1
    assert (state["turn_requests"], state["probes"]) == (0, 0)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"x-api-key": "k"}, "api_key"),
        ({"authorization": "Bearer token", "x-api-key": ""}, "oauth"),
        ({"x-api-key": ""}, "none"),
    ],
)
def test_each_request_records_the_credentials_kind(
    headers: dict[str, str], expected: str, http: httpx.Client
) -> None:
    with RehearsalServer(builtin_scenario("happy")) as server:
        http.post(f"{server.base_url}/v1/messages", json=first_turn(), headers=headers)
        [record] = server.state()["requests"]
    assert record["credentials"] == expected
    assert record["model"] == "claude-test-1"
    assert record["at"].endswith("+00:00")


def test_a_body_without_a_model_gets_the_error_envelope(http: httpx.Client) -> None:
    with RehearsalServer(builtin_scenario("happy")) as server:
        response = post(http, server, {"messages": []})
    assert response.status_code == 400
    error = response.json()
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    assert error["request_id"] == response.headers["request-id"]


def test_an_unknown_path_is_a_not_found_envelope(http: httpx.Client) -> None:
    with RehearsalServer(builtin_scenario("happy")) as server:
        response = http.get(f"{server.base_url}/v1/models")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


def test_the_clis_demand_for_structured_output_is_the_same_turn(http: httpx.Client) -> None:
    plan = scenario(
        '[[turns]]\n[[turns.steps]]\nkind = "marker"\n'
        '[[turns]]\n[[turns.steps]]\nkind = "verdict"\nsummary = "turn two"\n'
    )
    nudge = {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "[structured-output-enforce] You MUST call the StructuredOutput tool "
                "to complete this request. Call this tool now.",
            }
        ],
    }
    said_done = {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
    with RehearsalServer(plan) as server:
        response = post(http, server, body([prompt("go"), said_done, nudge]))
        [record] = server.state()["requests"]
    assert (record["turn"], record["step"]) == (1, 1)
    [verdict] = assembled(response.text)
    assert verdict["name"] == "StructuredOutput"
    assert verdict["input"]["summary"] == "Turn 1 done."


@pytest.mark.anyio
async def test_the_server_also_runs_as_an_async_context_manager() -> None:
    async with (
        RehearsalServer(builtin_scenario("happy")) as server,
        httpx.AsyncClient() as client,
    ):
        response = await client.post(f"{server.base_url}/v1/messages", json=first_turn())
    assert response.status_code == 200
    assert server.state()["turns"] == 1


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


ENVIRONMENT_TEXT = str(ENVIRONMENT["content"])


@pytest.mark.parametrize(
    "where",
    [
        "system prompt",  # older CLIs
        "system message",  # 2.1.332 and 2.1.337, as measured here
        "first user message",  # 2.1.337 as the issue saw it: a reminder before the prompt
    ],
)
def test_the_working_directory_is_found_wherever_the_cli_puts_its_environment(
    http: httpx.Client, where: str
) -> None:
    request = body([prompt("do the plan")])
    if where == "system prompt":
        request["system"] = [*request["system"], {"type": "text", "text": ENVIRONMENT_TEXT}]
    elif where == "system message":
        request["messages"] = [*request["messages"], ENVIRONMENT]
    else:
        wrapped = f"<system-reminder>\n{ENVIRONMENT_TEXT}</system-reminder>"
        request["messages"] = [
            {"role": "user", "content": [{"type": "text", "text": wrapped}]},
            *request["messages"],
        ]
    with RehearsalServer(builtin_scenario("happy")) as server:
        response = post(http, server, request)
        [record] = server.state()["requests"]
    assert (record["turn"], record["step"]) == (1, 0)
    write = assembled(response.text)[-1]
    assert write["input"]["file_path"].startswith(f"{CWD}/")


def test_a_system_reminder_after_the_last_tool_result_is_no_prompt(http: httpx.Client) -> None:
    # CLI 2.1.337 may end a request with a system message after the last tool result.
    nudge = {
        "role": "system",
        "content": [{"type": "text", "text": "The user hasn't heard from you in a while."}],
    }
    conversation = [prompt("do the plan"), tool_call(), tool_result(), nudge, ENVIRONMENT]
    with RehearsalServer(builtin_scenario("happy")) as server:
        post(http, server, body(conversation))
        [record] = server.state()["requests"]
    assert (record["turn"], record["step"]) == (1, 1)
    assert record["prompt"] == "do the plan"
