"""How claudeloop asks the SDK for a turn and for a probe: `ClaudeAgentOptions` builders."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast, get_args

from claude_agent_sdk import (
    ClaudeAgentOptions,
    HookContext,
    HookInput,
    HookJSONOutput,
    HookMatcher,
    PermissionMode,
    SettingSource,
)

from claudeloop.adapters.claude_code.blocked import Lines
from claudeloop.adapters.claude_code.startup_watch import STARTUP_RESULTS
from claudeloop.adapters.claude_code.verdict import VERDICT_SCHEMA
from claudeloop.adapters.redaction import Redactor
from claudeloop.domain.completion import DEFAULT_DONE_MARKER
from claudeloop.domain.watchdog import silence_for

PERMISSION_MODES: tuple[str, ...] = get_args(PermissionMode)
SETTING_SOURCES: tuple[str, ...] = get_args(SettingSource)

# Large tool outputs (a long file read, a verbose test run) arrive as one stdout line;
# the SDK's 1 MiB default ends the turn with a decode error on them.
DEFAULT_MAX_BUFFER_SIZE = 16 * 1024 * 1024

UNATTENDED_NOTE = (
    "This session runs unattended under claudeloop: no human is watching and no one will "
    "answer questions. Do not ask for confirmation or choices. Decide yourself, state any "
    "assumption in your summary, and keep working through the task and its plan until it "
    "is done or truly blocked by something outside your reach."
)
QUESTION_DENIED = (
    "No one is here to answer: decide yourself, state the assumption in your summary, and continue."
)
PROBE_PROMPT = "Reply with: ok"
# A probe is one short request: the CLI's own retries (ten by default, with backoff up
# to ~32 s each) would make one probe minutes long, past any --max-wait, while the wait
# policy already decides when to ask again.
PROBE_RETRIES = "0"
# The independent reviewer's tools: it reads the work, it never changes it (no edits, no
# shell), in plan mode besides.
REVIEW_TOOLS = ("Read", "Grep", "Glob")
REVIEW_PERMISSION_MODE: PermissionMode = "plan"
_RETRIES = "CLAUDE_CODE_MAX_RETRIES"
# The CLI's own watchdogs over a model's stream (its strings and runs, 2.1.337): it gives
# up on a stream silent for CLAUDE_STREAM_IDLE_TIMEOUT_MS, never less than 300 s
# whatever the variable says, or for CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS (at least 10 s),
# which a stalled answer from any base URL obeys: it drops the stream and sends the
# request again itself, within the turn. CLAUDE_STREAM_FIRST_BYTE_TIMEOUT_MS, measured
# against a loopback server, changed nothing: an answer whose headers never come is
# given up after 300 s, so the turn's own watchdog (domain.watchdog) ends it sooner.
BYTE_IDLE = "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS"
STREAM_WATCHDOG_VARIABLES = (
    "CLAUDE_STREAM_IDLE_TIMEOUT_MS",
    BYTE_IDLE,
    "CLAUDE_STREAM_FIRST_BYTE_TIMEOUT_MS",
    "CLAUDE_ENABLE_STREAM_WATCHDOG",
    "CLAUDE_ENABLE_BYTE_WATCHDOG",
    "API_FORCE_IDLE_TIMEOUT",
)
# The CLI's idle timeout as a part of the run's silence: the CLI's cheaper retry comes
# first, the turn's watchdog only if that retry is silent too. The CLI's own floor.
CLI_IDLE_SHARE = 2 / 3
CLI_IDLE_FLOOR_MS = 10_000


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    """Everything the gateway needs to reach Claude Code the way the user configured it.

    `permission_mode` defaults to `acceptEdits`: edits inside `cwd` go through, shell
    commands and everything else that would prompt are refused (and reported), so an
    unattended run never silently gets every permission. `env` is merged over the
    process environment for the CLI; blank a variable there to hide an inherited one.
    `setting_sources` None loads the user's, project and local settings like `claude`
    does (their permission rules then apply); an empty tuple isolates the run.
    """

    cwd: Path
    model: str | None = None
    permission_mode: str = "acceptEdits"
    env: dict[str, str] = field(default_factory=dict)
    local_backend: bool = False
    structured_output: bool = True
    done_marker: str = DEFAULT_DONE_MARKER
    cli_path: Path | None = None
    stderr_log: Path | None = None
    # Where the usage of each answer is kept as it streams in (responses.py; None:
    # nowhere, as for a review or doctor).
    responses_log: Path | None = None
    # What the debug log masks: the run's redactor (None: the secrets of both
    # environments the CLI sees).
    redactor: Redactor | None = field(default=None, compare=False)
    max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE
    setting_sources: tuple[str, ...] | None = None
    append_system_prompt: str = ""
    # The reviewer's sessions: read-only tools, plan mode, and none kept on disk (each
    # review is a fresh session nobody resumes).
    read_only: bool = False
    # Claude Code's settings for the boundary (adapters/sandbox.py), as the JSON of
    # `--settings`, over the user's own (None: none of ours); and where its lines run,
    # to read what it stopped (None: nothing is read as blocked).
    sandbox_settings: str | None = None
    lines: Lines | None = None
    # The server the user named (a profile's base_url, ANTHROPIC_BASE_URL; None:
    # Anthropic's API): whether an unreachable one is misconfigured or offline.
    address: str | None = None
    # How long the model's answer may be silent before the turn is ended and sent
    # again (domain.watchdog; None: its default for the backend).
    silence_seconds: float | None = None

    def __post_init__(self) -> None:
        if self.permission_mode not in PERMISSION_MODES:
            raise ValueError(
                f"permission mode {self.permission_mode!r} is not one of "
                f"{', '.join(PERMISSION_MODES)}"
            )
        unknown = set(self.setting_sources or ()) - set(SETTING_SOURCES)
        if unknown:
            raise ValueError(
                f"setting sources {', '.join(sorted(unknown))} are not among "
                f"{', '.join(SETTING_SOURCES)}"
            )
        if self.max_buffer_size < 1:
            raise ValueError("max_buffer_size must be at least 1 byte")
        if self.silence_seconds is not None and not self.silence_seconds > 0:
            raise ValueError("silence_seconds must be above 0")


def turn_options(
    settings: GatewaySettings, *, resume: str | None, stderr: Callable[[str], None]
) -> ClaudeAgentOptions:
    """Options for the long-lived process that answers the turns of one session."""
    options = replace(
        _base(settings, stderr),
        resume=resume,
        system_prompt={
            "type": "preset",
            "preset": "claude_code",
            "append": system_note(settings),
        },
        output_format=(
            {"type": "json_schema", "schema": VERDICT_SCHEMA}
            if settings.structured_output
            else None
        ),
        hooks={"PreToolUse": [HookMatcher(matcher="AskUserQuestion", hooks=[deny_question])]},
        # Every event of the model's stream, so a long answer still streaming is never
        # taken for a silent one (adapters/claude_code/watching.py).
        include_partial_messages=True,
    )
    if not settings.read_only:
        return options
    return replace(
        options,
        tools=list(REVIEW_TOOLS),
        allowed_tools=list(REVIEW_TOOLS),
        permission_mode=REVIEW_PERMISSION_MODE,
        extra_args={**options.extra_args, "no-session-persistence": None},
    )


def probe_options(
    settings: GatewaySettings,
    *,
    stderr: Callable[[str], None],
    environ: Mapping[str, str] = os.environ,
) -> ClaudeAgentOptions:
    """Options for the cheapest request that still meets the same backend and model.

    No tools (the request carries no tool definitions), the SDK's minimal system prompt
    instead of Claude Code's, one inner turn, no structured output,
    `--no-session-persistence` so a probe leaves no session behind to be confused with
    the run's, and no retries of the CLI's own unless the user set CLAUDE_CODE_MAX_RETRIES.
    """
    base = _base(settings, stderr, environ)
    env = dict(base.env)
    if _RETRIES not in environ and _RETRIES not in env:
        env[_RETRIES] = PROBE_RETRIES
    return replace(
        base,
        env=env,
        tools=[],
        max_turns=1,
        extra_args={"no-session-persistence": None},
    )


def system_note(settings: GatewaySettings) -> str:
    parts = [UNATTENDED_NOTE]
    if not settings.structured_output:
        parts.append(
            f"When, and only when, the whole task is complete, write {settings.done_marker} "
            "on a line of its own at the end of your answer."
        )
    if settings.append_system_prompt.strip():
        parts.append(settings.append_system_prompt.strip())
    return "\n\n".join(parts)


async def deny_question(
    _input: HookInput, _tool_use_id: str | None, _context: HookContext
) -> HookJSONOutput:
    """Refuse AskUserQuestion: an unattended run would wait forever for the answer."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": QUESTION_DENIED,
        }
    }


def stream_timeouts(
    settings: GatewaySettings, environ: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """The CLI's own stream watchdog set for an unattended run: a stalled answer given up
    after two thirds of the run's silence (50 s by default) instead of five minutes, and
    sent again by the CLI itself. Nothing when the user set any of its variables (theirs
    stand) or on a local backend, whose first byte may take minutes to come."""
    if settings.local_backend:
        return {}
    if any(name in environ or name in settings.env for name in STREAM_WATCHDOG_VARIABLES):
        return {}
    silence = silence_for(settings.silence_seconds, local_backend=False)
    idle_ms = max(round(silence * CLI_IDLE_SHARE * 1000), CLI_IDLE_FLOOR_MS)
    return {
        BYTE_IDLE: str(idle_ms),
        "CLAUDE_ENABLE_BYTE_WATCHDOG": "1",
        "CLAUDE_ENABLE_STREAM_WATCHDOG": "1",
    }


def _base(
    settings: GatewaySettings,
    stderr: Callable[[str], None],
    environ: Mapping[str, str] = os.environ,
) -> ClaudeAgentOptions:
    sources = settings.setting_sources
    return ClaudeAgentOptions(
        cwd=settings.cwd,
        model=settings.model,
        # Validated against the same literal in GatewaySettings.__post_init__.
        permission_mode=cast(PermissionMode, settings.permission_mode),
        # A CLI that refuses to start says why on a result (startup_watch.py).
        env={STARTUP_RESULTS: "1", **stream_timeouts(settings, environ), **settings.env},
        cli_path=settings.cli_path,
        # Without a callback the SDK lets the CLI write to our terminal.
        stderr=stderr,
        max_buffer_size=settings.max_buffer_size,
        setting_sources=(
            [cast(SettingSource, source) for source in sources] if sources is not None else None
        ),
        settings=settings.sandbox_settings,
    )
