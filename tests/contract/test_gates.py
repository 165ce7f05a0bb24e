"""Every failure of the service, as the real CLI reports it, read by the gateway.

The alarm for SDK and CLI upgrades: each case pins the signals the gateway extracts from
what CLI 2.1.332 emitted (see ../shared/reference/claude-code-facts.md) and the capacity
`classify` makes of them, for a subscription login, an API key and, where the gate is a
local server's failure, a local backend profile.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from claudeloop.adapters.claude_code import ClaudeCodeGateway, GatewaySettings
from claudeloop.application.ports import ProbeOutcome, TurnOutcome
from claudeloop.domain.capacity import (
    AuthenticationFailed,
    Available,
    BackendMisconfigured,
    CapacityState,
    CreditsExhausted,
    WindowExhausted,
)
from claudeloop.domain.classify import classify
from claudeloop.rehearsal import RehearsalServer
from tests.contract.conftest import Credentials, cli_env, gate_at_first_turn, gateway_for, run

pytestmark = pytest.mark.e2e

# Stands for the instant the gate ends (its start plus ten minutes), known only once
# the server has seen the request.
GATE_END = object()


@dataclass(frozen=True)
class Case:
    gate: str
    credentials: Credentials
    signals: dict[str, Any]
    # A value to compare, or a capacity type when its detail is the CLI's own wording.
    capacity: CapacityState | type[CapacityState]
    extra: dict[str, float | str] = field(default_factory=dict)
    # What a probe sent after the failed turn, by the same gateway, reads (None: no probe).
    probe: type[CapacityState] | None = None
    # Whether the turn is read again with UNSEEN_HEADERS added, to the same reading.
    unseen_headers: bool = False

    @property
    def id(self) -> str:
        return f"{self.gate}-{self.credentials}"


def window(rate_limit_type: str, resets_at: object) -> dict[str, Any]:
    return {
        "rate_limit_status": "rejected",
        "rate_limit_type": rate_limit_type,
        "resets_at": resets_at,
        "assistant_error": "rate_limit",
        "api_error_status": 429,
    }


API_KEY_429 = {
    "rate_limit_status": None,
    "resets_at": None,
    "assistant_error": "rate_limit",
    "api_error_status": 429,
}
UNKNOWN_WINDOW = WindowExhausted("unknown", resets_at=None)
OVERLOADED = WindowExhausted("overloaded", resets_at=None)


def server_error(status: int | None) -> dict[str, Any]:
    return {"assistant_error": "server_error", "api_error_status": status}


CASES = [
    Case(
        "window",
        "oauth",
        window("five_hour", GATE_END),
        WindowExhausted,
        probe=WindowExhausted,
        unseen_headers=True,
    ),
    Case("window", "api_key", API_KEY_429, UNKNOWN_WINDOW),
    Case(
        "window_silent",
        "oauth",
        window("five_hour", None),
        WindowExhausted("five_hour", resets_at=None),
    ),
    Case("window_silent", "api_key", API_KEY_429, UNKNOWN_WINDOW),
    Case("weekly", "oauth", window("seven_day", GATE_END), WindowExhausted),
    Case("weekly", "api_key", API_KEY_429, UNKNOWN_WINDOW),
    Case(
        "warning",
        "oauth",
        {
            # The CLI says "allowed" at the top; the warning is in unifiedWindows.
            "rate_limit_status": "allowed_warning",
            "rate_limit_type": "five_hour",
            "utilization": 0.92,
            "overage_status": "rejected",
            "overage_disabled_reason": "out_of_credits",
            "assistant_error": None,
            "api_error_status": None,
        },
        Available(),
        {"overage_disabled_reason": "out_of_credits"},
        unseen_headers=True,
    ),
    Case(
        "warning",
        "api_key",
        {"rate_limit_status": None, "assistant_error": None, "api_error_status": None},
        Available(),
    ),
    # A grace period (docs/architecture/claude-code-signals.md): the 5-hour window past
    # its limit, called rejected in unifiedWindows, the answer served all the same.
    Case(
        "grace",
        "oauth",
        {
            "rate_limit_status": "rejected",
            "rate_limit_type": "five_hour",
            "utilization": 1.1,
            "grace_active": True,
            "assistant_error": None,
            "api_error_status": None,
            "is_error": False,
        },
        Available(),
    ),
    Case(
        "grace",
        "api_key",
        {"rate_limit_status": None, "grace_active": False, "api_error_status": None},
        Available(),
    ),
    # The organization's usage paused for the day: the overage claim refused with the
    # monthly cap's reason, and the flag; no reset of the day's announced.
    Case(
        "daily_cap",
        "oauth",
        {
            "rate_limit_status": "rejected",
            "rate_limit_type": "overage",
            "assistant_error": "rate_limit",
            "api_error_status": 429,
            "overage_status": "rejected",
            "overage_disabled_reason": "org_level_disabled",
            "overage_resets_at": None,
            "daily_cap_paused": True,
        },
        WindowExhausted("daily_cap", resets_at=None),
    ),
    Case("daily_cap", "api_key", API_KEY_429, UNKNOWN_WINDOW),
    Case(
        "credits",
        "oauth",
        {"assistant_error": "billing_error", "api_error_status": 400},
        CreditsExhausted("Credit balance is too low"),
        probe=CreditsExhausted,
    ),
    Case(
        "credits",
        "api_key",
        {"assistant_error": "billing_error", "api_error_status": 400},
        CreditsExhausted("Credit balance is too low"),
    ),
    Case(
        "credits_overage",
        "oauth",
        {
            **window("five_hour", GATE_END),
            "overage_status": "rejected",
            "overage_disabled_reason": "out_of_credits",
        },
        CreditsExhausted,
    ),
    # An API key never sees the subscription's overage headers: only a 429.
    Case("credits_overage", "api_key", API_KEY_429, UNKNOWN_WINDOW),
    Case(
        "auth",
        "oauth",
        {
            "assistant_error": "authentication_failed",
            "api_error_status": 401,
            # Only this path reaches the SDK's api_retry message, even with no retries.
            "error_code": "authentication_failed",
        },
        AuthenticationFailed("Not logged in · Please run /login"),
        probe=AuthenticationFailed,
    ),
    Case(
        "auth",
        "api_key",
        {"assistant_error": "authentication_failed", "api_error_status": 401},
        AuthenticationFailed("Invalid API key · Fix external API key"),
    ),
    Case(
        "model_missing",
        "oauth",
        {"assistant_error": "model_not_found", "api_error_status": 404},
        BackendMisconfigured,
    ),
    Case(
        "model_missing",
        "api_key",
        {"assistant_error": "model_not_found", "api_error_status": 404},
        BackendMisconfigured,
    ),
    Case(
        "model_missing",
        "local",
        {"assistant_error": "model_not_found", "api_error_status": 404, "local_backend": True},
        BackendMisconfigured,
    ),
    Case("local_load_failed", "oauth", server_error(500), OVERLOADED),
    Case("local_load_failed", "api_key", server_error(500), OVERLOADED),
    Case("local_load_failed", "local", server_error(500), BackendMisconfigured),
    Case("local_busy", "oauth", server_error(503), OVERLOADED),
    Case("local_busy", "api_key", server_error(503), OVERLOADED),
    Case("local_busy", "local", server_error(503), WindowExhausted("local", resets_at=None)),
    Case("overloaded", "oauth", server_error(529), OVERLOADED, probe=WindowExhausted),
    Case("overloaded", "api_key", server_error(529), OVERLOADED),
    # A too-long prompt ends the run on any backend: the CLI has already tried to
    # compact, and the same prompt fails the same way however often it is sent.
    Case(
        "prompt_too_long",
        "oauth",
        {"assistant_error": "invalid_request", "api_error_status": 400},
        BackendMisconfigured,
    ),
    Case(
        "prompt_too_long",
        "api_key",
        {
            "assistant_error": "invalid_request",
            "api_error_status": 400,
            "terminal_reason": "prompt_too_long",
        },
        BackendMisconfigured,
    ),
    Case(
        "prompt_too_long",
        "local",
        {"assistant_error": "invalid_request", "api_error_status": 400},
        BackendMisconfigured,
    ),
    # A stream cut or stalled mid-answer: the CLI reports a lost connection, no status.
    Case("drop", "oauth", server_error(None), OVERLOADED),
    Case("drop", "api_key", server_error(None), OVERLOADED),
    Case("stall", "oauth", server_error(None), OVERLOADED, {"stall_seconds": 0.5}),
    Case("stall", "api_key", server_error(None), OVERLOADED, {"stall_seconds": 0.5}),
    # A LiteLLM proxy's own answers (measured with 1.108): the CLI calls both 400s
    # "unknown"; only the status and the proxy's words tell them apart.
    Case(
        "litellm_unknown_model",
        "local",
        {"assistant_error": "unknown", "api_error_status": 400, "local_backend": True},
        BackendMisconfigured,
    ),
    Case(
        "litellm_no_db",
        "local",
        {"assistant_error": "unknown", "api_error_status": 400, "local_backend": True},
        AuthenticationFailed,
    ),
    Case("litellm_upstream_error", "local", server_error(500), OVERLOADED),
    Case(
        "litellm_cooldown",
        "local",
        {"assistant_error": "rate_limit", "api_error_status": 429, "local_backend": True},
        WindowExhausted("cooldown", resets_at=None),
    ),
    # Today's CLI (2.1.332): an account the service will not serve, each its own kind.
    Case(
        "org_not_allowed",
        "oauth",
        {
            "assistant_error": "oauth_org_not_allowed",
            "api_error_status": 403,
            "terminal_reason": "api_error",
        },
        AuthenticationFailed(
            detail="Your organization has disabled Claude subscription access for Claude "
            "Code \u00b7 Use an Anthropic API key instead, or ask your admin to enable access",
            kind="org_not_allowed",
        ),
    ),
    Case(
        "verification_required",
        "oauth",
        {
            "assistant_error": "verification_required",
            "api_error_status": 403,
            "terminal_reason": "api_error",
        },
        AuthenticationFailed(
            detail="API Error: Verify your account to keep using Claude Code: "
            "https://claude.ai/verify",
            kind="verification_required",
        ),
    ),
    # Every answer cut at the output cap: the CLI resumes three times, then gives up.
    Case(
        "max_tokens",
        "oauth",
        {
            "assistant_error": "max_output_tokens",
            "api_error_status": None,
            "is_error": True,
            "terminal_reason": "api_error",
        },
        Available(),
    ),
    # A body that is not the Messages API: the CLI's catch-all error, nothing to wait on.
    Case(
        "malformed",
        "oauth",
        {"assistant_error": "unknown", "api_error_status": None},
        Available(),
    ),
    Case(
        "malformed",
        "api_key",
        {"assistant_error": "unknown", "api_error_status": None},
        Available(),
    ),
]


# Headers CLI 2.1.332 reads and never lets reach the stream (docs/architecture/
# claude-code-signals.md): a slow lane's offer and state, a fallback, the upgrade paths.
# The alarm for an upgrade that starts to: they must leave the turn read as without them.
UNSEEN_HEADERS = {
    "slow_offer": {
        "anthropic-ratelimit-unified-slow-offer": "treatment",
        "anthropic-ratelimit-unified-slow-max-wait": "900",
        "anthropic-ratelimit-unified-slow-retry-after": "30",
    },
    "slow_status": {
        "anthropic-ratelimit-unified-slow-status": "slot_busy",
        "anthropic-ratelimit-unified-slow-budget-utilization": "0.25",
        "anthropic-ratelimit-unified-slow-budget-reset": "1796226180",
    },
    "fallback": {"anthropic-ratelimit-unified-fallback": "available"},
    "upgrade_paths": {"anthropic-ratelimit-unified-upgrade-paths": "max_5x,max_20x"},
}


@dataclass(frozen=True)
class Read:
    """A fresh CLI's first turn against one gate, and what the server saw."""

    outcome: TurnOutcome
    probe: ProbeOutcome | None
    state: dict[str, Any]

    @property
    def kinds(self) -> list[str]:
        return [request["kind"] for request in self.state["requests"]]


def read(
    case: Case, root: Path, *, headers: dict[str, str] | None = None, probe: bool = False
) -> Read:
    """`case`'s turn through a gateway of its own on a server of its own (the gate
    answering with `headers` too), then a probe by the same gateway when asked."""
    scenario = gate_at_first_turn(case.gate, **case.extra)
    if headers:
        scenario = scenario.model_copy(
            update={"gates": [scenario.gates[0].model_copy(update={"headers": headers})]}
        )
    with RehearsalServer(scenario) as server:
        gateway = gateway_for(server, root, case.credentials)

        async def turn() -> tuple[TurnOutcome, ProbeOutcome | None]:
            try:
                outcome = await gateway.run_turn("Start the task.", session_id=None)
                return outcome, await gateway.probe() if probe else None
            finally:
                await gateway.close()

        outcome, probed = run(turn)
        return Read(outcome, probed, server.state())


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_gate_reads_as_the_classifier_expects(case: Case, tmp_path: Path) -> None:
    """Each case's signals and capacity; for some, what a probe after it meets (the same
    gate), and that the headers the stream never shows change nothing."""
    plain = read(case, tmp_path / "plain", probe=case.probe is not None)
    outcome, state = plain.outcome, plain.state

    (request, *_) = state["requests"]
    assert request["kind"] == "turn"
    assert request["gate"] == case.gate
    assert request["credentials"] == ("api_key" if case.credentials == "api_key" else "oauth")
    assert outcome.failure is None, outcome.failure
    assert outcome.session_id

    gate_end = _instant(state["gates"][0]["started_at"]) + timedelta(seconds=600)
    expected = {
        name: gate_end if value is GATE_END else value for name, value in case.signals.items()
    }
    actual = {name: getattr(outcome.signals, name) for name in expected}
    if expected.get("resets_at") is not None:
        # The headers carry whole epoch seconds, rounded up.
        assert abs(actual.pop("resets_at") - expected.pop("resets_at")) <= timedelta(seconds=2)
    assert actual == expected
    assert outcome.signals.local_backend == (case.credentials == "local")
    assert outcome.signals.result_text

    capacity = classify(outcome.signals)
    if isinstance(case.capacity, type):
        assert isinstance(capacity, case.capacity)
    else:
        assert capacity == case.capacity
    if isinstance(capacity, WindowExhausted) and capacity.resets_at is not None:
        assert capacity.resets_at == outcome.signals.resets_at

    if case.gate == "warning":
        # A warned turn still brings its verdict, and is billed.
        assert outcome.structured is not None
        assert outcome.structured.remaining_work == ("the rest",)
        assert outcome.cost_usd > 0

    if case.probe is not None:
        # A probe meets the same gate as the turn. A subscription's 401 is tried twice
        # by the CLI (it refreshes the login in between).
        assert plain.probe is not None
        turns = plain.kinds.count("turn")
        assert turns >= 1
        assert plain.kinds == ["turn"] * turns + ["probe"] * (len(plain.kinds) - turns)
        assert len(plain.kinds) > turns
        assert isinstance(classify(plain.probe.signals), case.probe)
        assert classify(plain.probe.signals) == capacity

    if case.unseen_headers:
        # Every header the stream never shows, on one answer of the same gate: each is
        # read on its own by the CLI, so one that starts to count changes this reading.
        every = {
            name: value for headers in UNSEEN_HEADERS.values() for name, value in headers.items()
        }
        offered = read(case, tmp_path / "offered", headers=every)
        # The same reading, and no retry a header would have caused.
        assert offered.kinds == ["turn"] * plain.kinds.count("turn")
        # Each server announces its own gate's end: compare the readings without it.
        assert _without_reset(classify(offered.outcome.signals)) == _without_reset(capacity)
        same = ("rate_limit_status", "rate_limit_type", "grace_active", "daily_cap_paused")
        assert {n: getattr(offered.outcome.signals, n) for n in same} == {
            n: getattr(outcome.signals, n) for n in same
        }


def _instant(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


@pytest.mark.parametrize("credentials", ["oauth", "api_key", "local"])
def test_nothing_listening_is_misconfigured_on_every_profile_like_doctor_says(
    credentials: Credentials, tmp_path: Path
) -> None:
    # Doctor calls an ANTHROPIC_BASE_URL where nothing listens 78; so must a run, on
    # Anthropic's profile too (it used to wait on it as an "overloaded" service).
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{taken.getsockname()[1]}"
    project = tmp_path / "project"
    project.mkdir()
    gateway = ClaudeCodeGateway(
        GatewaySettings(
            cwd=project,
            env=cli_env(dead, tmp_path / "home", credentials),
            local_backend=credentials == "local",
            setting_sources=(),
            stderr_log=tmp_path / "debug.log",
        )
    )

    async def probe() -> ProbeOutcome:
        try:
            return await gateway.probe()
        finally:
            await gateway.close()

    signals = run(probe).signals
    assert signals.api_error_status is None
    assert signals.assistant_error == "server_error"
    capacity = classify(signals)
    assert isinstance(capacity, BackendMisconfigured)
    assert capacity.reason.startswith("the server is unreachable (")


def _without_reset(capacity: CapacityState) -> CapacityState:
    return replace(capacity, resets_at=None) if isinstance(capacity, WindowExhausted) else capacity
