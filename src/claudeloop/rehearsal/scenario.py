"""What the rehearsal plays: the model's steps per turn and the gates that make it fail.

A scenario is data (TOML or JSON), validated strictly so a typo in a user's rehearsal
plan fails loudly instead of silently rehearsing something else.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

DEFAULT_DONE_MARKER = "CLAUDELOOP_TASK_FULLY_COMPLETE"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TextStep(_Strict):
    """Plain text. It rides in the same message as the tool call that follows it."""

    kind: Literal["text"]
    text: str


class ToolStep(_Strict):
    """A call of any Claude Code tool (Write, Edit, Bash, ...); `{cwd}` in strings is
    replaced with the working directory the CLI reports."""

    kind: Literal["tool"]
    name: str = Field(min_length=1)
    input: dict[str, JsonValue] = Field(default_factory=dict)


class VerdictStep(_Strict):
    """The StructuredOutput call that ends a turn (plain text without structured output)."""

    kind: Literal["verdict"]
    complete: bool = False
    remaining_work: list[str] = Field(default_factory=list)
    blocked_on: str = ""
    summary: str = ""


class MarkerStep(_Strict):
    """Plain text carrying the done marker, for the marker fallback path."""

    kind: Literal["marker"]
    text: str = "All done."


Step = Annotated[TextStep | ToolStep | VerdictStep | MarkerStep, Field(discriminator="kind")]


class Turn(_Strict):
    steps: list[Step] = Field(default_factory=list)


Match = Literal["all", "turns", "probes"]


class _GateBase(_Strict):
    """When a gate starts and ends; what it answers is up to its kind.

    Start: `at_turn` (the first turn request numbered N or later; with `at_step`, the
    first of that turn's requests at that step or later: 0 is the turn's first request,
    1 the one after its first tool call) or `after_seconds`
    (since the server started). End: `for_seconds`, `for_requests`, `until_lift` or
    `until_reset` (the reset of the 5-hour window the allowed answers announce:
    `five_hour_window_seconds`).
    A gate started by a request always answers that request, so `for_seconds = 0`
    fails exactly one.
    """

    at_turn: int | None = Field(default=None, ge=1)
    at_step: int | None = Field(default=None, ge=0)
    after_seconds: float | None = Field(default=None, ge=0)
    for_seconds: float | None = Field(default=None, ge=0)
    for_requests: int | None = Field(default=None, ge=1)
    until_lift: bool = False
    until_reset: bool = False
    match: Match = "all"
    message: str | None = None
    # Only requests for a model whose name contains this (a model's own window).
    for_model: str | None = None
    # Response headers added to what the gate answers (a 429's, or a served answer's),
    # over its own: the service's other headers, e.g. a slow lane's offer.
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_start_one_end(self) -> _GateBase:
        if self.at_step is not None and self.at_turn is None:
            raise ValueError("at_step needs at_turn: the step of which turn")
        starts = [self.at_turn is not None, self.after_seconds is not None]
        if sum(starts) != 1:
            raise ValueError("give exactly one start: at_turn (>= 1) or after_seconds (>= 0)")
        ends = [
            self.for_seconds is not None,
            self.for_requests is not None,
            self.until_lift,
            self.until_reset,
        ]
        if sum(ends) != 1:
            raise ValueError(
                "give exactly one end: for_seconds (>= 0), for_requests (>= 1), "
                "until_lift = true or until_reset = true"
            )
        return self


OverageReason = Literal[
    "overage_not_provisioned",
    "org_level_disabled",
    "org_level_disabled_until",
    "out_of_credits",
    "seat_tier_level_disabled",
    "member_level_disabled",
    "seat_tier_zero_credit_limit",
    "group_zero_credit_limit",
    "member_zero_credit_limit",
    "org_service_level_disabled",
    "no_limits_configured",
    "fetch_error",
    "unknown",
]


class RateLimitGate(_GateBase):
    """429 with the subscription's `anthropic-ratelimit-unified-*` headers.

    `announce_reset_seconds` is the reset the headers announce, from the gate's start;
    by default the gate's own end, or a full window when the end is not a clock. A
    `daily_cap` (the organization's usage paused for the day) announces the day's reset
    as the overage reset only when `announce_reset_seconds` is given.
    """

    kind: Literal[
        "window",
        "window_silent",
        "weekly",
        "credits_overage",
        "model_weekly",
        "overage_rejected",
        "daily_cap",
    ]
    announce_reset_seconds: float | None = Field(default=None, ge=0)
    # model_weekly: the model's own weekly window the rejection claims.
    window: Literal["seven_day_opus", "seven_day_sonnet", "seven_day_overage_included"] = (
        "seven_day_opus"
    )
    # overage_rejected: why the service refuses extra usage (any the CLI can name).
    overage_disabled_reason: OverageReason = "out_of_credits"


class WarningGate(_GateBase):
    """A normal answer whose headers say the window is nearly used up."""

    kind: Literal["warning"]
    utilization: float = Field(default=0.92, ge=0, le=1)
    announce_reset_seconds: float | None = Field(default=None, ge=0)
    overage_disabled_reason: str | None = None


class OverageGate(_GateBase):
    """A normal answer on paid overage: the 5-hour window used up, extra usage paying.

    `shape` is how the service says so: `in_use` (status allowed with the overage-in-use
    header, which the CLI reports as `overageInUse`) or `rejected_window` (status
    rejected with overage allowed, which it reports as `isUsingOverage`).
    """

    kind: Literal["overage_in_use"]
    shape: Literal["in_use", "rejected_window"] = "in_use"
    announce_reset_seconds: float | None = Field(default=None, ge=0)


class GraceGate(_GateBase):
    """A normal answer in the service's grace period: the 5-hour window past its limit
    (`utilization` above 1, its status rejected) and the grace headers, which the CLI
    reports as `rateLimitGraceActive`."""

    kind: Literal["grace"]
    utilization: float = Field(default=1.1, ge=0)
    announce_reset_seconds: float | None = Field(default=None, ge=0)


class StallGate(_GateBase):
    """The stream starts, then nothing for `stall_seconds`, then the connection closes."""

    kind: Literal["stall"]
    stall_seconds: float = Field(default=60.0, ge=0)


class ErrorGate(_GateBase):
    """A plain HTTP failure, or a broken stream (drop, malformed), or an answer held
    back with the connection open until the client gives up: `hang` after the stream
    started, `no_first_byte` before even the status line."""

    kind: Literal[
        "credits",
        "auth",
        "model_missing",
        "local_load_failed",
        "local_busy",
        "overloaded",
        "prompt_too_long",
        "litellm_unknown_model",
        "litellm_no_db",
        "litellm_upstream_error",
        "litellm_cooldown",
        "org_not_allowed",
        "verification_required",
        "rate_limit_transient",
        "max_tokens",
        "model_refusal",
        "drop",
        "malformed",
        "hang",
        "no_first_byte",
    ]


Gate = Annotated[
    RateLimitGate | WarningGate | OverageGate | GraceGate | StallGate | ErrorGate,
    Field(discriminator="kind"),
]

GATE_KINDS: tuple[str, ...] = (
    "window",
    "window_silent",
    "weekly",
    "model_weekly",
    "warning",
    "grace",
    "overage_in_use",
    "credits",
    "credits_overage",
    "overage_rejected",
    "daily_cap",
    "auth",
    "model_missing",
    "local_load_failed",
    "local_busy",
    "overloaded",
    "prompt_too_long",
    "litellm_unknown_model",
    "litellm_no_db",
    "litellm_upstream_error",
    "litellm_cooldown",
    "org_not_allowed",
    "verification_required",
    "rate_limit_transient",
    "max_tokens",
    "model_refusal",
    "drop",
    "stall",
    "hang",
    "no_first_byte",
    "malformed",
)


class Usage(_Strict):
    """Tokens reported per answer: small and fixed, so a run's cost is predictable."""

    input_tokens: int = Field(default=200, ge=1)
    output_tokens: int = Field(default=40, ge=1)


class Scenario(_Strict):
    name: str = ""
    description: str = ""
    # False plays the done-marker fallback: every request with tools is then a turn.
    structured_output: bool = True
    done_marker: str = Field(default=DEFAULT_DONE_MARKER, min_length=1)
    usage: Usage = Field(default_factory=Usage)
    # The 5-hour window every allowed answer announces the reset of, from the server's
    # start (scenario time): shorter, it resets within a test (a gate's `until_reset`).
    five_hour_window_seconds: float = Field(default=5 * 3600, gt=0)
    turns: list[Turn] = Field(default_factory=list)
    # What claudeloop's independent reviewer answers, review by review (the last is
    # repeated; none: every review agrees).
    reviews: list[Turn] = Field(default_factory=list)
    gates: list[Gate] = Field(default_factory=list)
