"""Every fact about one turn that the classifier reads, already normalised."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from claudeloop.domain.capacity import NamedWindow

# Epoch values above this are milliseconds: as seconds it would be the year 5138.
_MILLISECONDS_THRESHOLD = 100_000_000_000


def instant_from_epoch(value: float) -> datetime:
    """An aware UTC instant from an epoch in seconds or in milliseconds.

    The CLI reports resets in seconds in some places and milliseconds in others; the
    domain only ever sees the instant.
    """
    seconds = value / 1000 if abs(value) >= _MILLISECONDS_THRESHOLD else value
    return datetime.fromtimestamp(seconds, tz=UTC)


@dataclass(frozen=True, slots=True)
class WindowUsage:
    """One usage window as the rate-limit event reports it (`unifiedWindows`)."""

    window: NamedWindow  # five_hour, seven_day, seven_day_opus, ...
    utilization: float | None = None  # 0..1
    resets_at: datetime | None = None
    status: str | None = None

    def __post_init__(self) -> None:
        if self.resets_at is not None and self.resets_at.utcoffset() is None:
            raise ValueError("resets_at must be an aware datetime (normalise at the edge)")


@dataclass(frozen=True, slots=True)
class TurnSignals:
    """The typed signals of one turn, from all three SDK sources.

    - the rate-limit event: `rate_limit_status`, `rate_limit_type`, `resets_at`,
      `utilization`, `overage_status`, `overage_disabled_reason`, `overage_resets_at`,
      `overage_in_use` (the CLI's `overageInUse`: the answer spent paid extra usage),
      `grace_active` (the CLI's `rateLimitGraceActive`: the answer was served past a
      window's limit, in the service's grace period), `daily_cap_paused` (the CLI's
      `dailyCapPaused`: the organization's usage is paused for the day);
    - the assistant message: `assistant_error`;
    - the result message: `api_error_status`, `result_text`, `is_error`,
      `terminal_reason` (why the CLI ended the turn: domain.turn_end);
    - the error body, when one was seen: `error_code`;
    - the profile: `local_backend` (a profile with a `base_url`), `custom_address` (the
      server the user named: a profile's `base_url` or ANTHROPIC_BASE_URL; None:
      Anthropic's API).
    """

    rate_limit_status: str | None = None
    # The window the service named, read once where it came in (domain.capacity
    # `window_named`): a name this claudeloop does not know is an UnknownWindow.
    rate_limit_type: NamedWindow | None = None
    resets_at: datetime | None = None
    utilization: float | None = None
    overage_status: str | None = None
    overage_disabled_reason: str | None = None
    overage_resets_at: datetime | None = None
    overage_in_use: bool = False
    grace_active: bool = False
    daily_cap_paused: bool = False
    error_code: str | None = None
    api_error_status: int | None = None
    assistant_error: str | None = None
    result_text: str = ""
    local_backend: bool = False
    custom_address: str | None = None
    # The result said the turn ended in an error, whatever the classifier makes of it.
    is_error: bool = False
    terminal_reason: str | None = None
    # Every window the rate-limit events reported, for pause thresholds.
    windows: tuple[WindowUsage, ...] = ()

    def __post_init__(self) -> None:
        if self.resets_at is not None and self.resets_at.utcoffset() is None:
            raise ValueError("resets_at must be an aware datetime (normalise at the edge)")
