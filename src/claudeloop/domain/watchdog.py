"""How long Claude Code may say nothing during a turn, and which silence ends the turn.

The CLI gives up on an answer whose stream goes quiet only after its own idle timeout,
five minutes whatever CLAUDE_STREAM_IDLE_TIMEOUT_MS says below that (measured on
2.1.337), and a CLI process can stop talking altogether: hung, it never writes its
result. So the turn is watched from outside. Every message the CLI writes (every event
of the model's stream too, with partial messages on) is heard, and resets a clock; the
turn is ended once the clock passes the patience of what the CLI awaits then:

- the model's answer (a request out, its stream): `silence`;
- a retry the CLI announced (`api_retry`): its delay, then `silence`;
- tools running: the longest any of them may take (Bash its `timeout`, else Claude
  Code's default of two minutes, never past its ten-minute ceiling; a tool with no
  timeout of its own, `tool_seconds`), then `tool_grace`;
- its exit, once its result is written and its input closed: `exit_grace`.

A verification check is no part of a turn: its own timeout (verify_timeout) ends it.
What an ended turn means for the loop is `domain.loop.decide_after_silent_turn`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import assert_never

# The tool whose calls say how long they may take (`timeout`, in milliseconds).
BASH = "Bash"
# How long the model's answer may be silent: past the CLI's own stream idle timeout as
# claudeloop sets it (50 s), far under the 300 s the CLI would wait by itself, and short
# enough that a silent answer costs at most 90 s with the turn sent again (a new CLI
# process resuming the session takes a few seconds). A local server may take minutes
# to read a long prompt before its first byte, and the CLI waits five minutes for one:
# its silence outlasts that, so the CLI retries first.
DEFAULT_SILENCE = 75.0
LOCAL_SILENCE = 360.0


def silence_for(configured: float | None, *, local_backend: bool) -> float:
    """The silence a run's answers may keep: the user's, else the backend's default."""
    if configured is not None:
        return configured
    return LOCAL_SILENCE if local_backend else DEFAULT_SILENCE


@dataclass(frozen=True, slots=True)
class WatchdogSettings:
    """How long each thing the CLI awaits may be silent, in seconds.

    `silence` outlasts the idle timeout claudeloop sets for the CLI's own stream
    watchdog (adapters/claude_code/options.py), so a stalled stream the CLI can retry
    by itself is retried by it, cheaply, before this ends the turn."""

    silence: float = DEFAULT_SILENCE
    tool_grace: float = 30.0
    tool_seconds: float = 600.0
    bash_default: float = 120.0
    bash_ceiling: float = 600.0
    exit_grace: float = 10.0

    def __post_init__(self) -> None:
        for each in fields(self):
            value = getattr(self, each.name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{each.name} must be a number of seconds above 0, not {value}")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool Claude Code runs, and the timeout the call asked for (None: none)."""

    name: str
    timeout_seconds: float | None = None


# What the CLI awaits while it is silent.


@dataclass(frozen=True, slots=True)
class AwaitingAnswer:
    """A request to the model is out, or about to go: its answer streams, or will."""


@dataclass(frozen=True, slots=True)
class AwaitingRetry:
    """The CLI announced it retries a failed request after `delay_seconds`."""

    delay_seconds: float


@dataclass(frozen=True, slots=True)
class RunningTools:
    """Tools run; the turn goes on once they return."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class AwaitingExit:
    """The CLI wrote its result and its input is closed: it exits now."""


Activity = AwaitingAnswer | AwaitingRetry | RunningTools | AwaitingExit


def tool_patience(call: ToolCall, settings: WatchdogSettings) -> float:
    """How long a tool may run before its silence is no longer its work."""
    if call.name == BASH:
        asked = call.timeout_seconds or settings.bash_default
        return min(asked, settings.bash_ceiling) + settings.tool_grace
    return settings.tool_seconds + settings.tool_grace


def patience(activity: Activity, settings: WatchdogSettings) -> float:
    """How long the CLI may be silent while it awaits `activity`, in seconds."""
    match activity:
        case AwaitingAnswer():
            return settings.silence
        case AwaitingRetry(delay_seconds=delay):
            return max(delay, 0.0) + settings.silence
        case RunningTools(calls=calls):
            return max((tool_patience(call, settings) for call in calls), default=settings.silence)
        case AwaitingExit():
            return settings.exit_grace
        case _:
            assert_never(activity)


def awaited(activity: Activity) -> str:
    """What the CLI awaited, in a person's words."""
    match activity:
        case AwaitingAnswer():
            return "the model's answer"
        case AwaitingRetry():
            return "its retry of a failed request"
        case RunningTools(calls=calls):
            names = ", ".join(dict.fromkeys(call.name for call in calls))
            return f"tools to return ({names})"
        case AwaitingExit():
            return "its own exit after its result"
        case _:
            assert_never(activity)


# What the CLI said, as the watch hears it.


@dataclass(frozen=True, slots=True)
class Spoke:
    """Any message, or an event of the model's stream."""


@dataclass(frozen=True, slots=True)
class CalledTools:
    """The model called tools, each by its tool-use id."""

    calls: tuple[tuple[str, ToolCall], ...]


@dataclass(frozen=True, slots=True)
class ToolsReturned:
    """The results of the tools with these tool-use ids came back."""

    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RetryAnnounced:
    """The CLI retries a failed request after `delay_seconds`."""

    delay_seconds: float


@dataclass(frozen=True, slots=True)
class InputClosed:
    """The CLI wrote its result and its input was closed."""


Said = Spoke | CalledTools | ToolsReturned | RetryAnnounced | InputClosed


@dataclass(frozen=True, slots=True)
class SilentTurn:
    """Claude Code said nothing for `seconds` while it awaited `activity`."""

    seconds: float
    activity: Activity

    @property
    def reason(self) -> str:
        if isinstance(self.activity, AwaitingExit):
            return f"Claude Code had not exited {self.seconds:.0f} s after its result"
        waited = awaited(self.activity)
        return f"Claude Code said nothing for {self.seconds:.0f} s while awaiting {waited}"


@dataclass(frozen=True, slots=True)
class Watch:
    """What a CLI is doing, as its messages said, and when it last said anything
    (`since`, seconds on a clock that never steps back, passed in)."""

    since: float
    tools: tuple[tuple[str, ToolCall], ...] = ()
    retry_delay: float | None = None
    exiting: bool = False

    @property
    def activity(self) -> Activity:
        if self.exiting:
            return AwaitingExit()
        if self.tools:
            return RunningTools(tuple(call for _, call in self.tools))
        if self.retry_delay is not None:
            return AwaitingRetry(self.retry_delay)
        return AwaitingAnswer()

    def heard(self, said: Said, *, at: float) -> Watch:
        """The watch once the CLI said `said` at `at`: its clock starts again."""
        match said:
            case Spoke():
                # Whatever comes after a retry's announcement is the retry under way.
                return replace(self, since=at, retry_delay=None)
            case CalledTools(calls=calls):
                return replace(self, since=at, tools=(*self.tools, *calls), retry_delay=None)
            case ToolsReturned(ids=ids):
                running = tuple(tool for tool in self.tools if tool[0] not in ids)
                return replace(self, since=at, tools=running, retry_delay=None)
            case RetryAnnounced(delay_seconds=delay):
                return replace(self, since=at, retry_delay=delay)
            case InputClosed():
                return replace(self, since=at, exiting=True)
            case _:
                assert_never(said)

    def left(self, now: float, settings: WatchdogSettings) -> float:
        """Seconds until the silence is too long (0 or less: it is)."""
        return self.since + patience(self.activity, settings) - now

    def overdue(self, now: float, settings: WatchdogSettings) -> SilentTurn | None:
        """The silent turn, once the silence outlasted its patience; None before."""
        if self.left(now, settings) > 0:
            return None
        return SilentTurn(seconds=max(now - self.since, 0.0), activity=self.activity)
