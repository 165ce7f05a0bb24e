"""The composition root's two backend decorations: a free backend's costs count nothing,
and a misconfigured backend's final reason gains its fix."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import anyio

from claudeloop.adapters.backend_advice import ProfileAdvisor, profile_in_use
from claudeloop.adapters.claude_code.backend import backend_for
from claudeloop.adapters.config.profiles import DEFAULT_BACKEND, BackendProfile
from claudeloop.adapters.run_directory.starting import create as create_directory
from claudeloop.adapters.run_directory.starting import new_record
from claudeloop.application.billing import UnbilledGateway
from claudeloop.application.driving import drive_run
from claudeloop.application.fleet_seat import NO_SEAT
from claudeloop.application.ports import ProbeOutcome, TurnOutcome
from claudeloop.application.records import RunSpec
from claudeloop.application.summary import result_object
from claudeloop.cli.bootstrap.runs import wire_run
from claudeloop.domain.capacity import AuthenticationFailed, BackendMisconfigured
from claudeloop.domain.loop import Outcome
from claudeloop.domain.signals import TurnSignals


class PricedGateway:
    """Reports what the CLI would: Anthropic prices for every answer."""

    def __init__(self) -> None:
        self.closed = False
        self.readied: list[str | None] = []
        self.stood_down = 0

    async def run_turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        return TurnOutcome(
            signals=TurnSignals(),
            structured=None,
            final_text="ok",
            cost_usd=0.25,
            session_id="s",
            guessed_cost_usd=0.5,
            guessed_models=("qwen3-coder:30b",),
        )

    async def probe(self) -> ProbeOutcome:
        return ProbeOutcome(signals=TurnSignals(), cost_usd=0.01)

    async def get_ready(self, session_id: str | None) -> None:
        self.readied.append(session_id)

    async def stand_down(self) -> None:
        self.stood_down += 1

    async def close(self) -> tuple[str, ...]:
        self.closed = True
        return ()


def test_an_unbilled_gateway_reports_no_cost() -> None:
    inner = PricedGateway()
    gateway = UnbilledGateway(inner)

    async def use() -> tuple[TurnOutcome, ProbeOutcome]:
        await gateway.get_ready("s")
        turn = await gateway.run_turn("go", session_id=None)
        probe = await gateway.probe()
        await gateway.stand_down()
        await gateway.close()
        return turn, probe

    turn, probe = anyio.run(use)
    assert (turn.cost_usd, probe.cost_usd) == (0.0, 0.0)
    assert turn.billed is False
    assert (turn.guessed_cost_usd, turn.guessed_models) == (0.0, ())  # no guess to warn of
    assert turn.final_text == "ok"
    assert (inner.readied, inner.stood_down) == (["s"], 1)  # passed through
    assert inner.closed


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


class RefusingGateway(PricedGateway):
    """Every request answered 401, as Claude Code reports refused credentials."""

    async def run_turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        return TurnOutcome(
            signals=TurnSignals(
                assistant_error="authentication_failed",
                api_error_status=401,
                is_error=True,
                result_text="Invalid API key · Fix external API key",
            ),
            structured=None,
            final_text="",
            cost_usd=0.0,
            session_id="s",
        )


def refused_run(tmp_path: Path, profile: BackendProfile) -> tuple[str, str, str]:
    """(the final screen line, the --json reason, summary.md) of a run whose credentials
    are refused."""
    record = new_record(RunSpec(cwd=tmp_path, task="Write hello.txt"), "refused")
    directory = create_directory(record)
    screen = io.StringIO()
    with contextlib.redirect_stderr(screen):
        ended = drive_run(
            wire_run(
                directory,
                record,
                backend=backend_for(profile),
                quiet=False,
                gateway=RefusingGateway(),
                seat=NO_SEAT,
            ),
            record,
            resumed=False,
        )
    assert ended.state.outcome is Outcome.AUTH_FAILED
    final = screen.getvalue().strip().splitlines()[-1]
    return final, str(result_object(ended)["reason"]), directory.summary_path.read_text()


def test_refused_credentials_end_in_a_line_that_names_the_fix(tmp_path: Path) -> None:
    final, reason, summary = refused_run(tmp_path, DEFAULT_BACKEND)
    fix = "log in again with `claudeloop login`, or replace CLAUDE_CODE_OAUTH_TOKEN"
    assert final.startswith("claudeloop: auth_failed (exit 77): authentication failed")
    assert fix in final
    assert fix in reason
    assert fix in summary


def test_refused_credentials_of_a_profile_name_its_token_variable(tmp_path: Path) -> None:
    profile = BackendProfile(
        name="proxy",
        base_url="http://127.0.0.1:1",
        credentials="auth token from $PROXY_TOKEN",
    )
    final, _, _ = refused_run(tmp_path, profile)
    assert final.endswith("replace the token in $PROXY_TOKEN, which [profiles.proxy] reads")


LOCAL = BackendProfile(
    name="local",
    base_url="http://127.0.0.1:11434",
    preset="ollama",
    model="qwen3",
    env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:11434"},
)


def test_a_detour_profiles_misconfiguration_is_advised_for_that_profile() -> None:
    in_use = profile_in_use(backend_for(DEFAULT_BACKEND), lambda name: backend_for(LOCAL))
    reason = "the model failed to load (API Error: 500 model failed to load)"
    advised = ProfileAdvisor(in_use).advised(reason, BackendMisconfigured(reason), detour="local")
    # Not the run's own (Anthropic) profile's advice: the local server's.
    assert advised == (
        "the model 'qwen3' failed to load on http://127.0.0.1:11434 (model failed to load): "
        "check the server's log and free memory, or pick a smaller `model` in [profiles.local]"
    )


def test_back_on_the_runs_own_profile_the_advice_is_its_own_again() -> None:
    in_use = profile_in_use(backend_for(DEFAULT_BACKEND), lambda name: backend_for(LOCAL))
    advised = ProfileAdvisor(in_use).advised(
        "authentication failed", AuthenticationFailed(), detour=None
    )
    assert "log in again with `claudeloop login`" in advised
