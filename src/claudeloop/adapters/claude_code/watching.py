"""What the watchdog (domain.watchdog) hears in the CLI's messages, and how long it waits.

Every message the SDK yields is something the CLI said; what it says of tools and
retries changes what the CLI awaits, so how long it may then be silent. With partial
messages on (options.py), each event of the model's stream is a message too: a long
answer that keeps streaming is never taken for a silent one.
"""

from __future__ import annotations

from collections.abc import Mapping

from claude_agent_sdk import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from claudeloop.adapters.claude_code.options import GatewaySettings
from claudeloop.domain.watchdog import (
    BASH,
    CalledTools,
    RetryAnnounced,
    Said,
    Spoke,
    ToolCall,
    ToolsReturned,
    WatchdogSettings,
    silence_for,
)

# The tool a verdict is given by: the turn ends with it, nothing runs.
VERDICT_TOOL = "StructuredOutput"
# Claude Code's own limits on a Bash call, which these variables change (its docs).
BASH_DEFAULT = "BASH_DEFAULT_TIMEOUT_MS"
BASH_CEILING = "BASH_MAX_TIMEOUT_MS"


def said_in(message: Message) -> Said:
    """What `message` tells the watch: tools called or returned, a retry announced, or
    only that the CLI spoke."""
    if isinstance(message, SystemMessage) and message.subtype == "api_retry":
        delay = _number(message.data.get("retry_delay_ms"))
        return RetryAnnounced((delay or 0.0) / 1000)
    if isinstance(message, AssistantMessage):
        calls = tuple(
            (block.id, ToolCall(block.name, _asked_seconds(block)))
            for block in message.content
            if isinstance(block, ToolUseBlock) and block.name != VERDICT_TOOL
        )
        if calls:
            return CalledTools(calls)
    if isinstance(message, UserMessage) and isinstance(message.content, list):
        ids = tuple(b.tool_use_id for b in message.content if isinstance(b, ToolResultBlock))
        if ids:
            return ToolsReturned(ids)
    return Spoke()


def watchdog_settings(settings: GatewaySettings, environ: Mapping[str, str]) -> WatchdogSettings:
    """How long the gateway's CLI may be silent: the run's silence (the default for its
    backend when unset) and Claude Code's own Bash limits as the CLI's environment sets
    them (settings.env over `environ`)."""
    env = {**environ, **settings.env}
    default = WatchdogSettings()
    return WatchdogSettings(
        silence=silence_for(settings.silence_seconds, local_backend=settings.local_backend),
        bash_default=_seconds(env.get(BASH_DEFAULT)) or default.bash_default,
        bash_ceiling=_seconds(env.get(BASH_CEILING)) or default.bash_ceiling,
    )


def _asked_seconds(block: ToolUseBlock) -> float | None:
    """The timeout a Bash call asked for (milliseconds on the wire), if any."""
    if block.name != BASH:
        return None
    asked = _number(block.input.get("timeout"))
    return asked / 1000 if asked is not None and asked > 0 else None


def _seconds(milliseconds: str | None) -> float | None:
    try:
        value = float(milliseconds) if milliseconds else None
    except ValueError:
        return None
    return value / 1000 if value is not None and value > 0 else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
