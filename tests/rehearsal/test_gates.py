"""Each gate over HTTP: when it starts and ends, and what it answers."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from claudeloop.rehearsal import RehearsalServer, ScenarioError
from tests.rehearsal.wire import (
    ENVIRONMENT,
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

UNIFIED = "anthropic-ratelimit-unified-"
TURN_TWO = [prompt("one"), tool_call(), tool_result(then="two")]
PROBE = body([prompt("quota")], tools=[])


def gated(gate: str, *, turns: int = 2) -> str:
    """A scenario of `turns` verdict-only turns under one gate."""
    turn = '[[turns]]\n[[turns.steps]]\nkind = "verdict"\nsummary = "ok"\n'
    return turn * turns + "[[gates]]\n" + gate


def test_a_window_gate_lets_turn_one_through_and_rejects_turn_two_with_the_reset(
    http: httpx.Client,
) -> None:
    plan = scenario(gated('kind = "window"\nat_turn = 2\nfor_seconds = 60\n'))
    with RehearsalServer(plan) as server:
        before = time.time()
        first = post(http, server, first_turn())
        second = post(http, server, body(TURN_TWO))
        state = server.state()
    assert first.status_code == 200
    assert second.status_code == 429
    headers = second.headers
    assert headers[UNIFIED + "status"] == "rejected"
    assert headers[UNIFIED + "representative-claim"] == "five_hour"
    assert headers[UNIFIED + "5h-status"] == "rejected"
    assert float(headers[UNIFIED + "5h-utilization"]) == 1.0
    reset = int(headers[UNIFIED + "reset"])
    assert before + 59 <= reset <= time.time() + 61
    assert headers[UNIFIED + "5h-reset"] == str(reset)
    assert headers[UNIFIED + "7d-status"] == "allowed"
    error = second.json()
    assert error["type"] == "error"
    assert error["error"]["type"] == "rate_limit_error"
    assert error["request_id"] == headers["request-id"]
    records = state["requests"]
    assert [(r["turn"], r["status"], r["gate"]) for r in records] == [
        (1, 200, None),
        (2, 429, "window"),
    ]
    assert (state["turns"], state["turn_requests"]) == (1, 2)
    [gate] = state["gates"]
    assert gate["active"] is True
    assert gate["kind"] == "window"
    assert gate["started_at"] == records[1]["at"]
    assert gate["ended_at"] is None


def test_an_active_window_rejects_probes_too_and_reopens_when_its_time_is_up(
    http: httpx.Client,
) -> None:
    plan = scenario(gated('kind = "window"\nat_turn = 1\nfor_seconds = 0.4\n'))
    with RehearsalServer(plan) as server:
        turn = post(http, server, first_turn())
        probe = post(http, server, PROBE)
        time.sleep(0.45)
        after = post(http, server, PROBE)
        state = server.state()
    assert (turn.status_code, probe.status_code, after.status_code) == (429, 429, 200)
    assert state["probes"] == 2
    assert [r["gate"] for r in state["requests"]] == ["window", "window", None]
    [gate] = state["gates"]
    assert gate["active"] is False
    assert gate["ended_at"] is not None
    assert gate["ended_at"] <= state["requests"][2]["at"]


def test_time_scale_compresses_the_window_and_the_reset_it_announces(
    http: httpx.Client,
) -> None:
    plan = scenario(gated('kind = "window"\nat_turn = 1\nfor_seconds = 18000\n'))
    with RehearsalServer(plan, time_scale=0.00003) as server:  # 5 hours in 0.54 s
        rejected = post(http, server, first_turn())
        reset = int(rejected.headers[UNIFIED + "reset"])
        time.sleep(0.6)
        reopened = post(http, server, first_turn())
    assert rejected.status_code == 429
    assert reset - time.time() < 2
    assert reopened.status_code == 200


def test_a_silent_window_rejects_without_announcing_any_reset(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "window_silent"\nat_turn = 1\nuntil_lift = true\n'))
    with RehearsalServer(plan) as server:
        response = post(http, server, first_turn())
    assert response.status_code == 429
    assert response.headers[UNIFIED + "status"] == "rejected"
    assert not [name for name in response.headers if name.endswith("reset")]
    assert response.json()["error"]["type"] == "rate_limit_error"


def test_a_weekly_gate_claims_the_seven_day_window(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "weekly"\nat_turn = 1\nfor_seconds = 30\n'))
    with RehearsalServer(plan) as server:
        response = post(http, server, first_turn())
    headers = response.headers
    assert response.status_code == 429
    assert headers[UNIFIED + "representative-claim"] == "seven_day"
    assert headers[UNIFIED + "7d-status"] == "rejected"
    assert headers[UNIFIED + "7d-reset"] == headers[UNIFIED + "reset"]
    assert headers[UNIFIED + "5h-status"] == "allowed"


def test_an_until_lift_window_announces_a_full_window_unless_told_otherwise(
    http: httpx.Client,
) -> None:
    plain = scenario(gated('kind = "window"\nat_turn = 1\nuntil_lift = true\n'))
    told = scenario(
        gated('kind = "window"\nat_turn = 1\nuntil_lift = true\nannounce_reset_seconds = 60\n')
    )
    with RehearsalServer(plain) as server:
        full = int(post(http, server, first_turn()).headers[UNIFIED + "reset"])
    with RehearsalServer(told) as server:
        short = int(post(http, server, first_turn()).headers[UNIFIED + "reset"])
    assert full - time.time() == pytest.approx(5 * 3600, abs=5)
    assert short - time.time() == pytest.approx(60, abs=5)


def test_a_warning_answers_normally_under_headers_that_warn(http: httpx.Client) -> None:
    gate = (
        'kind = "warning"\nat_turn = 1\nfor_seconds = 30\nutilization = 0.95\n'
        'overage_disabled_reason = "out_of_credits"\n'
    )
    with RehearsalServer(scenario(gated(gate))) as server:
        response = post(http, server, first_turn())
        state = server.state()
    headers = response.headers
    assert response.status_code == 200
    assert assembled(response.text)[0]["name"] == "StructuredOutput"
    assert headers[UNIFIED + "status"] == "allowed_warning"
    assert headers[UNIFIED + "5h-status"] == "allowed_warning"
    assert float(headers[UNIFIED + "5h-utilization"]) == 0.95
    assert headers[UNIFIED + "overage-status"] == "rejected"
    assert headers[UNIFIED + "overage-disabled-reason"] == "out_of_credits"
    assert (state["turns"], state["verdicts"]) == (1, 1)
    assert state["requests"][0]["gate"] == "warning"


def test_subscription_credits_out_is_a_rejection_with_overage_out_of_credits(
    http: httpx.Client,
) -> None:
    plan = scenario(gated('kind = "credits_overage"\nat_turn = 1\nfor_seconds = 30\n'))
    with RehearsalServer(plan) as server:
        response = post(http, server, first_turn())
    headers = response.headers
    assert response.status_code == 429
    assert headers[UNIFIED + "status"] == "rejected"
    assert headers[UNIFIED + "overage-status"] == "rejected"
    assert headers[UNIFIED + "overage-disabled-reason"] == "out_of_credits"
    assert UNIFIED + "reset" in headers


@pytest.mark.parametrize(
    ("kind", "status", "error_type", "message"),
    [
        (
            "credits",
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. "
            "Please go to Plans & Billing to upgrade or purchase credits.",
        ),
        ("auth", 401, "authentication_error", "invalid x-api-key"),
        ("model_missing", 404, "not_found_error", 'model "llama9" not found, try pulling it first'),
        ("local_load_failed", 500, "api_error", None),
        (
            "local_busy",
            503,
            "overloaded_error",
            "server busy, please try again.  maximum pending requests exceeded",
        ),
        ("overloaded", 529, "overloaded_error", "Overloaded"),
        (
            "prompt_too_long",
            400,
            "invalid_request_error",
            "prompt is too long: 250000 tokens > 200000 maximum",
        ),
    ],
)
def test_each_error_gate_answers_the_services_status_and_envelope(
    http: httpx.Client, kind: str, status: int, error_type: str, message: str | None
) -> None:
    plan = scenario(gated(f'kind = "{kind}"\nat_turn = 1\nfor_seconds = 30\n'))
    with RehearsalServer(plan) as server:
        response = post(http, server, body([prompt("go")], model="llama9"))
        [record] = server.state()["requests"]
    assert response.status_code == status
    envelope = response.json()
    assert envelope["type"] == "error"
    assert envelope["error"]["type"] == error_type
    assert envelope["error"]["message"] == message or message is None
    assert envelope["request_id"] == response.headers["request-id"]
    assert UNIFIED + "status" not in response.headers
    assert (record["status"], record["gate"], record["answered"]) == (status, kind, False)


@pytest.mark.parametrize(
    ("kind", "status", "error_type", "message"),
    [
        # Each as a LiteLLM 1.108 proxy answered `POST /v1/messages` (measured, with the
        # rehearsal as its upstream; the model and cooldown ids differ).
        (
            "litellm_unknown_model",
            400,
            "invalid_request_error",
            "anthropic_messages: Invalid model name passed in model=llama9. "
            "Call `/v1/models` to view available models for your key.",
        ),
        (
            "litellm_cooldown",
            429,
            "rate_limit_error",
            "No deployments available for selected model, Try again in 5 seconds. All "
            "deployments for selected model are in cooldown. Passed model=llama9. "
            "pre-call-checks=False, cooldown_list=['f25a10ab8ea30185']",
        ),
    ],
)
def test_litellm_gates_answer_the_proxys_envelope(
    http: httpx.Client, kind: str, status: int, error_type: str, message: str
) -> None:
    plan = scenario(gated(f'kind = "{kind}"\nat_turn = 1\nfor_seconds = 30\n'))
    with RehearsalServer(plan) as server:
        response = post(http, server, body([prompt("go")], model="llama9"))
    assert response.status_code == status
    assert response.json()["error"] == {"type": error_type, "message": message}
    assert UNIFIED + "status" not in response.headers


def test_litellm_refusing_a_key_without_a_database_answers_openais_shape(
    http: httpx.Client,
) -> None:
    plan = scenario(gated('kind = "litellm_no_db"\nat_turn = 1\nfor_seconds = 30\n'))
    with RehearsalServer(plan) as server:
        response = post(http, server, first_turn())
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": "No connected db.",
            "type": "no_db_connection",
            "param": None,
            "code": "400",
        }
    }


def test_litellm_upstream_error_is_a_500_naming_the_model_group(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "litellm_upstream_error"\nat_turn = 1\nfor_seconds = 30\n'))
    with RehearsalServer(plan) as server:
        response = post(http, server, body([prompt("go")], model="llama9"))
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["type"] == "api_error"
    assert error["message"].startswith("litellm.InternalServerError: ")
    assert "LiteLLM: model group 'llama9' failed with the error above." in error["message"]


def test_a_gate_message_replaces_the_default(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "overloaded"\nat_turn = 1\nfor_seconds = 9\nmessage = "busy"\n'))
    with RehearsalServer(plan) as server:
        response = post(http, server, first_turn())
    assert response.json()["error"]["message"] == "busy"


def read_until_cut(http: httpx.Client, server: RehearsalServer, payload: object) -> bytes:
    """The bytes of an answer that must end in a broken connection."""
    chunks: list[bytes] = []

    def read() -> None:
        url = f"{server.base_url}/v1/messages"
        with http.stream("POST", url, json=payload, headers={"x-api-key": "k"}) as response:
            assert response.status_code == 200
            chunks.extend(response.iter_raw())

    with pytest.raises(httpx.RemoteProtocolError):
        read()
    return b"".join(chunks)


def test_a_model_refusal_is_a_200_that_stops_with_refusal_and_its_details(
    http: httpx.Client,
) -> None:
    plan = scenario(gated('kind = "model_refusal"\nat_turn = 1\nfor_requests = 2\n'))
    with RehearsalServer(plan) as server:
        streamed = post(http, server, first_turn())
        whole = post(http, server, body([prompt("go")], stream=False))
    assert streamed.status_code == 200
    played = events(streamed.text)
    (delta,) = [data["delta"] for name, data in played if name == "message_delta"]
    assert delta["stop_reason"] == "refusal"
    assert delta["stop_details"]["category"] == "cyber"
    assert assembled(streamed.text) == []  # no text, no tool call
    assert whole.json()["stop_reason"] == "refusal"
    assert whole.json()["stop_details"] == delta["stop_details"]


def test_a_drop_cuts_the_stream_after_it_started(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "drop"\nat_turn = 1\nfor_requests = 1\n'))
    with RehearsalServer(plan) as server:
        received = read_until_cut(http, server, first_turn())
        retried = post(http, server, first_turn())
        state = server.state()
    names = [name for name, _ in events(received.decode())]
    assert names[0] == "message_start"
    assert "message_stop" not in names
    assert retried.status_code == 200
    assert [r["gate"] for r in state["requests"]] == ["drop", None]
    assert (state["turns"], state["turn_requests"]) == (1, 2)


def test_a_drop_cuts_a_non_streaming_answer_too(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "drop"\nat_turn = 1\nfor_seconds = 9\n'))
    with RehearsalServer(plan) as server:
        received = read_until_cut(http, server, body([prompt("go")], stream=False))
    assert received.startswith(b'{"id"')


def test_a_lift_ends_a_stall_in_flight(http: httpx.Client) -> None:
    # A ten-minute stall: without the lift the read would outlast the client's 5 s
    # timeout and fail with a ReadTimeout, not the cut connection asserted here.
    plan = scenario(gated('kind = "stall"\nat_turn = 1\nfor_requests = 1\nstall_seconds = 600\n'))
    with RehearsalServer(plan) as server:
        done = threading.Event()

        def lift_until_done() -> None:  # lifts until the read ends: one after the stall began
            while not done.wait(0.3):
                server.lift()

        lifter = threading.Thread(target=lift_until_done)
        lifter.start()
        try:
            received = read_until_cut(http, server, first_turn())
        finally:
            done.set()
            lifter.join()
    assert events(received.decode())[0][0] == "message_start"


def test_a_stall_goes_silent_for_its_scaled_time_then_cuts(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "stall"\nat_turn = 1\nfor_seconds = 9\nstall_seconds = 30\n'))
    with RehearsalServer(plan, time_scale=0.01) as server:  # a 0.3 s stall
        started = time.monotonic()
        received = read_until_cut(http, server, first_turn())
        stalled = time.monotonic() - started
    assert events(received.decode())[0][0] == "message_start"
    assert 0.25 <= stalled < 2


def test_a_client_that_gives_up_on_a_stall_frees_the_server(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "stall"\nat_turn = 1\nfor_requests = 1\n'))  # 60 s
    with RehearsalServer(plan) as server:
        with pytest.raises(httpx.ReadTimeout):
            http.post(f"{server.base_url}/v1/messages", json=first_turn(), timeout=0.3)
        after = post(http, server, first_turn())
        started = time.monotonic()
    assert after.status_code == 200
    assert time.monotonic() - started < 1.5  # the shutdown did not wait out the stall


def test_a_hang_starts_the_answer_then_holds_the_connection_until_the_client_gives_up(
    http: httpx.Client,
) -> None:
    plan = scenario(gated('kind = "hang"\nat_turn = 1\nfor_requests = 1\n'))
    with RehearsalServer(plan) as server:
        url = f"{server.base_url}/v1/messages"
        chunks: list[bytes] = []

        def read() -> None:
            with http.stream(
                "POST", url, json=first_turn(), headers={"x-api-key": "k"}, timeout=0.5
            ) as response:
                assert response.status_code == 200
                chunks.extend(response.iter_raw())

        with pytest.raises(httpx.ReadTimeout):
            read()
        head = b"".join(chunks)
        after = post(http, server, first_turn())  # the client gave up: the next is served
        state = server.state()
    assert events(head.decode())[0][0] == "message_start"
    assert "message_stop" not in [name for name, _ in events(head.decode())]
    assert after.status_code == 200
    assert [(r["gate"], r["status"], r["answered"]) for r in state["requests"]] == [
        ("hang", 200, False),
        (None, 200, True),
    ]


def test_a_lift_closes_a_hang_in_flight(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "hang"\nat_turn = 1\nuntil_lift = true\n'))
    with RehearsalServer(plan) as server:
        threading.Timer(0.3, server.lift).start()
        received = read_until_cut(http, server, first_turn())
    assert events(received.decode())[0][0] == "message_start"


def test_no_first_byte_sends_nothing_until_the_client_gives_up(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "no_first_byte"\nat_turn = 1\nfor_requests = 1\n'))
    with RehearsalServer(plan) as server:
        with pytest.raises(httpx.ReadTimeout):  # not even the status line came
            http.post(f"{server.base_url}/v1/messages", json=first_turn(), timeout=0.5)
        after = post(http, server, first_turn())
        state = server.state()
    assert after.status_code == 200
    assert [(r["gate"], r["status"], r["answered"]) for r in state["requests"]] == [
        ("no_first_byte", 0, False),
        (None, 200, True),
    ]


def test_a_lift_ends_a_request_given_no_first_byte_with_a_500(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "no_first_byte"\nat_turn = 1\nuntil_lift = true\n'))
    with RehearsalServer(plan) as server:
        threading.Timer(0.3, server.lift).start()
        response = post(http, server, first_turn())
    assert response.status_code == 500


def test_a_malformed_stream_carries_a_data_line_that_is_not_json(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "malformed"\nat_turn = 1\nfor_seconds = 9\n'))
    with RehearsalServer(plan) as server:
        response = post(http, server, first_turn())
    assert response.status_code == 200
    data = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert json.loads(data[0])["type"] == "message_start"
    broken = []
    for line in data:
        try:
            json.loads(line)
        except json.JSONDecodeError:
            broken.append(line)
    assert len(broken) == 1
    assert json.loads(data[-1])["type"] == "message_stop"


def test_a_malformed_non_streaming_answer_is_not_json(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "malformed"\nat_turn = 1\nfor_seconds = 9\n'))
    with RehearsalServer(plan) as server:
        response = post(http, server, body([prompt("go")], stream=False))
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.text)


def test_lift_ends_an_until_lift_gate_and_marks_the_first_request_after_it(
    http: httpx.Client,
) -> None:
    plan = scenario(gated('kind = "auth"\nat_turn = 1\nuntil_lift = true\n'))
    with RehearsalServer(plan) as server:
        refused = [post(http, server, first_turn()).status_code for _ in range(3)]
        assert server.state()["first_request_after_lift"] is None
        lifted = http.post(f"{server.base_url}/_rehearsal/lift").json()
        accepted = post(http, server, first_turn())
        state = server.state()
    assert refused == [401, 401, 401]
    assert lifted["lifted"] == 1
    assert accepted.status_code == 200
    assert state["lifted_at"] == lifted["lifted_at"]
    assert state["first_request_after_lift"] == state["requests"][-1]["at"]
    assert state["gates"][0]["ended_at"] == lifted["lifted_at"]


def test_lift_also_ends_a_gate_on_a_clock(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "overloaded"\nat_turn = 1\nfor_seconds = 600\n'))
    with RehearsalServer(plan) as server:
        before = post(http, server, first_turn()).status_code
        assert server.lift()["lifted"] == 1
        after = post(http, server, first_turn()).status_code
        nothing = server.lift()["lifted"]
    assert (before, after, nothing) == (529, 200, 0)


def test_a_gate_after_seconds_starts_on_the_clock_not_a_turn() -> None:
    # The server's clock, faked: a loaded machine cannot make the early request late.
    from claudeloop.rehearsal.gates import GateSchedule, Timeline

    plan = scenario(gated('kind = "overloaded"\nafter_seconds = 0.3\nfor_seconds = 60\n'))
    clock = [1000.0]
    timeline = Timeline(monotonic=lambda: clock[0], wall=lambda: 1_800_000_000.0)
    gates = GateSchedule(list(plan.gates), timeline)
    assert gates.answering("probe", None, now=1000.29) is None  # no turn starts it either
    clock[0] = 1000.29
    [pending] = gates.snapshot()
    answered = gates.answering("probe", None, now=1000.35)
    [started] = gates.snapshot()
    assert answered is not None
    assert answered.gate.kind == "overloaded"
    assert (pending["active"], pending["started_at"]) == (False, None)
    assert started["active"] is True
    assert started["started_at"] == timeline.iso(1000.3)  # its instant, not the request's


def test_for_seconds_zero_fails_exactly_the_request_that_started_it(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "overloaded"\nat_turn = 1\nfor_seconds = 0\n'))
    with RehearsalServer(plan) as server:
        statuses = [post(http, server, first_turn()).status_code for _ in range(3)]
    assert statuses == [529, 200, 200]


def test_for_requests_fails_that_many_matching_requests(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "local_busy"\nat_turn = 1\nfor_requests = 2\n'))
    with RehearsalServer(plan) as server:
        statuses = [post(http, server, first_turn()).status_code for _ in range(3)]
        [gate] = server.state()["gates"]
    assert statuses == [503, 503, 200]
    assert (gate["answered"], gate["active"]) == (2, False)


def test_match_limits_a_gate_to_turns_or_to_probes(http: httpx.Client) -> None:
    turns_only = scenario(
        gated('kind = "window"\nat_turn = 1\nuntil_lift = true\nmatch = "turns"\n')
    )
    probes_only = scenario(
        gated('kind = "window"\nafter_seconds = 0\nuntil_lift = true\nmatch = "probes"\n')
    )
    with RehearsalServer(turns_only) as server:
        turn_only = (
            post(http, server, first_turn()).status_code,
            post(http, server, PROBE).status_code,
        )
    with RehearsalServer(probes_only) as server:
        probe_only = (
            post(http, server, first_turn()).status_code,
            post(http, server, PROBE).status_code,
        )
    assert turn_only == (429, 200)
    assert probe_only == (200, 429)


def test_the_first_active_gate_in_scenario_order_answers(http: httpx.Client) -> None:
    plan = scenario(
        gated('kind = "overloaded"\nat_turn = 1\nfor_seconds = 60\n')
        + '[[gates]]\nkind = "auth"\nafter_seconds = 0\nuntil_lift = true\n'
    )
    with RehearsalServer(plan) as server:
        first = post(http, server, first_turn()).status_code
        probe = post(http, server, PROBE).status_code
    assert (first, probe) == (529, 529)


def test_count_tokens_is_never_gated(http: httpx.Client) -> None:
    plan = scenario(gated('kind = "window"\nafter_seconds = 0\nuntil_lift = true\n'))
    with RehearsalServer(plan) as server:
        response = http.post(f"{server.base_url}/v1/messages/count_tokens", json=first_turn())
    assert response.status_code == 200


def test_a_gate_at_a_step_lets_the_turns_first_request_through_and_answers_the_next(
    http: httpx.Client,
) -> None:
    # A turn killed mid-way needs a request of the turn answered before the one that
    # fails (or stalls): at_step = 1 is the request after the turn's first tool call.
    turn = (
        '[[turns]]\n[[turns.steps]]\nkind = "tool"\nname = "Write"\n'
        '[[turns.steps]]\nkind = "verdict"\nsummary = "ok"\n'
    )
    plan = scenario(
        turn + '[[gates]]\nkind = "model_missing"\nat_turn = 1\nat_step = 1\nfor_requests = 1\n'
    )
    with RehearsalServer(plan) as server:
        assert post(http, server, first_turn()).status_code == 200
        second = body([prompt("do the plan"), ENVIRONMENT, tool_call(), tool_result()])
        assert post(http, server, second).status_code == 404
        assert post(http, server, second).status_code == 200


def test_at_step_without_at_turn_is_refused() -> None:
    with pytest.raises(ScenarioError, match="at_step needs at_turn"):
        scenario('[[gates]]\nkind = "stall"\nafter_seconds = 1\nat_step = 1\nfor_requests = 1\n')


def test_a_scenario_can_name_every_overage_refusal_reason_the_domain_decides() -> None:
    # The rehearsal keeps its own list (it imports no rules of the loop); a reason the
    # domain learns must become playable, and the rehearsal plays none the domain lacks.
    from typing import get_args

    from claudeloop.domain.overage import OVERAGE_DISABLED_REASONS
    from claudeloop.rehearsal.scenario import OverageReason

    assert set(get_args(OverageReason)) == set(OVERAGE_DISABLED_REASONS)


def test_a_model_weekly_gate_can_reject_every_window_of_one_model_the_domain_knows() -> None:
    # The rehearsal names the windows it plays itself (it imports no rules of the loop):
    # a model's weekly window the domain learns must become playable, and no other.
    from typing import get_args

    from claudeloop.domain.capacity import WINDOW_KINDS
    from claudeloop.rehearsal.scenario import RateLimitGate

    played = set(get_args(RateLimitGate.model_fields["window"].annotation))
    assert played == set(WINDOW_KINDS) - {"five_hour", "seven_day"}


def test_answers_announce_a_shortened_five_hour_window_and_until_reset_ends_there() -> None:
    # The server's clock, faked: the window's reset is 30 s after the server started.
    from claudeloop.rehearsal.failures import Windows
    from claudeloop.rehearsal.gates import GateSchedule, Timeline

    plan = scenario(
        "five_hour_window_seconds = 30\n"
        + gated('kind = "window_silent"\nat_turn = 2\nuntil_reset = true\n')
    )
    clock = [1000.0]
    timeline = Timeline(monotonic=lambda: clock[0], wall=lambda: 1_800_000_000.25)
    windows = Windows(timeline, five_hour_seconds=plan.five_hour_window_seconds)
    gates = GateSchedule(list(plan.gates), timeline, window_reset_seconds=30)
    announced = int(windows.allowed_headers()[UNIFIED + "5h-reset"])
    assert announced == 1_800_000_031  # 30 s on, rounded up to the second
    assert gates.answering("turn", 1, now=1005.0) is None
    refused = gates.answering("turn", 2, now=1010.0)
    assert refused is not None
    assert refused.gate.kind == "window_silent"
    assert gates.answering("probe", None, now=1030.5) is not None  # before the reset
    assert gates.answering("probe", None, now=1030.75) is None  # the announced reset
    [gate] = gates.snapshot()
    assert gate["ended_at"] == timeline.iso(1030.75)
    assert timeline.epoch(1030.75) == announced


def test_an_until_reset_gate_started_after_the_reset_fails_just_its_first_request() -> None:
    from claudeloop.rehearsal.gates import GateSchedule, Timeline

    plan = scenario(gated('kind = "window"\nat_turn = 1\nuntil_reset = true\n'))
    timeline = Timeline(monotonic=lambda: 1000.0, wall=lambda: 1_800_000_000.0)
    gates = GateSchedule(list(plan.gates), timeline, window_reset_seconds=5)
    refused = gates.answering("turn", 1, now=1010.0)
    assert refused is not None
    # A window gate ended by the reset announces that reset.
    assert refused.reset_epoch == 1_800_000_005
    assert gates.answering("turn", 1, now=1010.0) is None


def test_a_gate_is_given_one_end_of_four() -> None:
    with pytest.raises(ScenarioError, match="until_reset"):
        scenario(gated('kind = "window"\nat_turn = 1\nuntil_reset = true\nuntil_lift = true\n'))
