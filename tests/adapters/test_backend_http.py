"""Asking a server directly: reachable or not, and what its 404 means. Against the
rehearsal API on 127.0.0.1 (Ollama's wording) and a port nothing listens on."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from claudeloop.adapters.backend_http import reach, why_not_found
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
