"""What the watchdog (domain.watchdog) hears in the CLI's messages, and how long it waits.

Every message the SDK yields is something the CLI said; what it says of tools and
retries changes what the CLI awaits, so how long it may then be silent. With partial
messages on (options.py), each event of the model's stream is a message too: a long
answer that keeps streaming is never taken for a silent one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from claude_agent_sdk import (
    AssistantMessage,
    Message,
    StreamEvent,
    SystemMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from claudeloop.adapters.claude_code.options import GatewaySettings
from claudeloop.adapters.claude_code.startup_watch import StartupWatch
from claudeloop.application.events import TurnRetrying
from claudeloop.application.ports import EventSink
from claudeloop.domain.loop import Interrupt
from claudeloop.domain.watchdog import (
    BASH,
    CalledTools,
    RetryAnnounced,
    Said,
    SilentTurn,
    Spoke,
    ToolCall,
    ToolsReturned,
    Watch,
    WatchdogSettings,
    silence_for,
)

# The tool a verdict is given by: the turn ends with it, nothing runs.
VERDICT_TOOL = "StructuredOutput"
# Claude Code's own limits on a Bash call, which these variables change (its docs).
BASH_DEFAULT = "BASH_DEFAULT_TIMEOUT_MS"
BASH_CEILING = "BASH_MAX_TIMEOUT_MS"


@dataclass
class Watched:
    """The watch over one turn or probe: what the CLI awaits and since when, what it is
    retrying now (None once it moves on), and what ended it early: a stop while it
    retried (why), the watchdog, a signal."""

    watch: Watch
    now: str | None = None
    stopped: str | None = None
    silent: SilentTurn | None = None
    interrupted: Interrupt | None = None
    # Each message but the stream's events, as they come.
    heard: Callable[[Message], None] = field(default=lambda _message: None)
    # The stream's events, as they come (a turn's: their usage is kept, responses.py).
    streamed: Callable[[StreamEvent], None] = field(default=lambda _event: None)
    # The CLI's process, ended at once when the watch ends the reading for silence or
    # a signal; and whether its retries are told as events (a turn's, not a probe's).
    transport: StartupWatch | None = None
    tells_retries: bool = True


def retry_of(message: Message, events: EventSink | None) -> str | None:
    """What the CLI is retrying, told to `events`; None for any other message."""
    if not isinstance(message, SystemMessage) or message.subtype != "api_retry":
        return None
    data = message.data
    status, error = data.get("error_status"), data.get("error")
    if events is not None:
        events.emit(
            TurnRetrying(
                attempt=data.get("attempt"),
                max_retries=data.get("max_retries"),
                error_status=status,
                error=error,
                retry_delay_ms=data.get("retry_delay_ms"),
            )
        )
    said = " ".join(str(part) for part in (status, error) if part)
    return (
        f"Claude Code was retrying a failed request (attempt {data.get('attempt')} of "
        f"{data.get('max_retries')}{': ' + said if said else ''})"
    )


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
