"""The composition root's two backend decorations: a free backend's costs count nothing,
and a misconfigured backend's final reason gains its fix."""

from __future__ import annotations

from typing import Any

import anyio

from claudeloop.adapters.config.profiles import BackendProfile
from claudeloop.application.ports import ProbeOutcome, TurnOutcome
from claudeloop.cli.bootstrap import Advised, Unbilled, backend_for
from claudeloop.domain.signals import TurnSignals


class PricedGateway:
    """Reports what the CLI would: Anthropic prices for every answer."""

    def __init__(self) -> None:
        self.closed = False

    async def run_turn(self, prompt: str, *, session_id: str | None) -> TurnOutcome:
        return TurnOutcome(
            signals=TurnSignals(),
            structured=None,
            final_text="ok",
            cost_usd=0.25,
            session_id="s",
            session_cost_usd=0.75,
        )

    async def probe(self) -> ProbeOutcome:
        return ProbeOutcome(signals=TurnSignals(), cost_usd=0.01)

    async def close(self) -> None:
        self.closed = True


def test_an_unbilled_gateway_reports_no_cost() -> None:
    inner = PricedGateway()
    gateway = Unbilled(inner)

    async def use() -> tuple[TurnOutcome, ProbeOutcome]:
        turn = await gateway.run_turn("go", session_id=None)
        probe = await gateway.probe()
        await gateway.close()
        return turn, probe

    turn, probe = anyio.run(use)
    assert (turn.cost_usd, probe.cost_usd) == (0.0, 0.0)
    assert turn.billed is False  # its running total moves, unbilled
    assert turn.final_text == "ok"
    assert inner.closed


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, event_type: str, **fields: Any) -> None:
        self.events.append((event_type, fields))


def test_only_a_misconfigured_backends_reason_is_advised() -> None:
    sink = Recorder()
    advised = Advised(sink, lambda reason: f"{reason}: do this")
    advised.emit("turn.finished", reason="the model was not found")
    advised.emit("run.finished", outcome="done", reason="all done")
    assert advised.reason is None
    advised.emit("run.finished", outcome="backend_misconfigured", reason="the model was not found")
    assert advised.reason == "the model was not found: do this"
    assert [fields["reason"] for _, fields in sink.events] == [
        "the model was not found",
        "all done",
        "the model was not found: do this",
    ]


def test_refused_credentials_are_advised_only_when_the_profile_has_a_fix() -> None:
    sink = Recorder()
    advised = Advised(sink, lambda reason: reason, lambda reason: f"{reason}: replace $KEY")
    advised.emit("run.finished", outcome="auth_failed", reason="authentication failed")
    assert advised.reason == "authentication failed: replace $KEY"
    plain = Advised(Recorder(), lambda reason: f"{reason}: do this")
    plain.emit("run.finished", outcome="auth_failed", reason="authentication failed")
    assert plain.reason is None


def test_a_backend_carries_its_profiles_choices() -> None:
    profile = BackendProfile(
        name="local",
        base_url="http://127.0.0.1:1",
        env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"},
        marker_fallback=False,
        zero_cost=True,
    )
    backend = backend_for(profile)
    assert backend.local
    assert not backend.marker_fallback
    assert backend.zero_cost
    assert backend.env == {"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}
    assert backend.profile is profile
