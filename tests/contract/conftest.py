"""The real bundled Claude Code CLI, driven through the gateway, against the rehearsal API.

Every CLI run gets a throwaway HOME and config dir, the rehearsal's base URL, no retries
of its own (a failing turn would otherwise back off for minutes), and dummy credentials
of one kind, with every inherited ANTHROPIC_* / CLAUDE_* variable blanked so a real
login on the machine can neither leak into a request nor change what the CLI reports.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal, TypeVar

import anyio

from claudeloop.adapters.claude_code import ClaudeCodeGateway, GatewaySettings
from claudeloop.rehearsal import RehearsalServer, Scenario, parse_scenario

SCENARIOS = Path(__file__).parent / "scenarios"

# subscription login | API-key account | a local server behind ANTHROPIC_AUTH_TOKEN
Credentials = Literal["oauth", "api_key", "local"]

# Credential and routing variables the CLI reads, blanked even when not inherited.
_ALWAYS_BLANK = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
)

T = TypeVar("T")


def cli_env(base_url: str, home: Path, credentials: Credentials) -> dict[str, str]:
    """The environment for the CLI, merged by the SDK over this process's own."""
    env = {name: "" for name in os.environ if name.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(dict.fromkeys(_ALWAYS_BLANK, ""))
    env.update(
        {
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_BASE_URL": base_url,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
    )
    match credentials:
        case "oauth":
            env["CLAUDE_CODE_OAUTH_TOKEN"] = "contract-oauth-token-not-real"
        case "api_key":
            env["ANTHROPIC_API_KEY"] = "contract-api-key-not-real"
        case "local":
            env["ANTHROPIC_AUTH_TOKEN"] = "contract-local-token-not-real"
    return env


def gateway_for(
    server: RehearsalServer,
    root: Path,
    credentials: Credentials,
    *,
    cwd: Path | None = None,
    **settings: object,
) -> ClaudeCodeGateway:
    """A gateway on `server`, with HOME, the project and the debug log under `root`."""
    project = cwd or root / "project"
    project.mkdir(parents=True, exist_ok=True)
    return ClaudeCodeGateway(
        GatewaySettings(
            cwd=project,
            env=cli_env(server.base_url, root / "home", credentials),
            local_backend=credentials == "local",
            # The user's settings are not this test's business.
            setting_sources=(),
            stderr_log=root / "debug.log",
            **settings,  # type: ignore[arg-type]
        )
    )


def gate_at_first_turn(kind: str, **extra: float | str) -> Scenario:
    """One turn that ends in a verdict, failed from its first request by one gate.

    The gate ends on a clock (ten minutes) rather than a lift, so the reset a rate-limit
    gate announces is the gate's own end and can be asserted.
    """
    options = "".join(f"{key} = {value!r}\n" for key, value in extra.items())
    return parse_scenario(
        f"""
[[turns]]
[[turns.steps]]
kind = "verdict"
complete = false
remaining_work = ["the rest"]
summary = "Did a part."

[[gates]]
kind = "{kind}"
at_turn = 1
for_seconds = 600
{options}""",
        source=f"contract:{kind}",
        fmt="toml",
        default_name=kind,
    )


def run(step: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(step)
