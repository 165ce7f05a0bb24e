"""Paid overage (extra usage): when an answer spends it, and what each refusal of it means.

A subscription past a usage window may go on "on overage": the service still answers,
and bills the account's extra usage. Claude Code says so on allowed answers (`overageInUse`,
from the `anthropic-ratelimit-unified-overage-in-use` header) and on a window it calls
rejected while overage is allowed (`isUsingOverage`). A night that quietly spends paid
extra usage is the worst surprise a subscriber can have, so such an answer is a limit of
its own, `overage_in_use`, which `--on-limit` decides (wait for the window's reset by
default, wind down, go on, or switch profile).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal, TypeGuard

from claudeloop.domain.capacity import CapacityState, WindowExhausted
from claudeloop.domain.signals import TurnSignals

# The limit kind of an answer served on paid overage.
PAID_OVERAGE: Final = "overage_in_use"

# What a refusal of overage means for the loop: `credits` (the money is out or the cap
# is zero: only a person refills it), `until` (a spend cap that lifts at an instant, the
# overage reset), `off` (overage is not available to this account: the window's own
# reset is what brings capacity back), `unknown` (the service could not say).
OverageRefusal = Literal["credits", "until", "off", "unknown"]

# Every `overageDisabledReason` the bundled CLI (2.1.332) can name, decided.
OVERAGE_DISABLED_REASONS: dict[str, OverageRefusal] = {
    "out_of_credits": "credits",
    "seat_tier_zero_credit_limit": "credits",
    "group_zero_credit_limit": "credits",
    "member_zero_credit_limit": "credits",
    "org_level_disabled_until": "until",
    "overage_not_provisioned": "off",
    "org_level_disabled": "off",
    "seat_tier_level_disabled": "off",
    "member_level_disabled": "off",
    "org_service_level_disabled": "off",
    "no_limits_configured": "off",
    "fetch_error": "unknown",
    "unknown": "unknown",
}


def overage_refusal(reason: str | None) -> OverageRefusal | None:
    """What a refusal of overage means; None when no reason came (a reason the CLI does
    not list yet is `unknown`)."""
    if reason is None:
        return None
    return OVERAGE_DISABLED_REASONS.get(reason, "unknown")


def on_paid_overage(signals: TurnSignals) -> bool:
    """Whether the turn was served on paid overage: the CLI said so, or a window it calls
    rejected answered anyway because overage is allowed (the CLI's own `isUsingOverage`)."""
    served = (
        signals.api_error_status is None
        and signals.assistant_error is None
        and not signals.is_error
    )
    rejected_window_served = signals.rate_limit_status == "rejected" and signals.overage_status in (
        "allowed",
        "allowed_warning",
    )
    return served and (signals.overage_in_use or rejected_window_served)


def overage_limit(signals: TurnSignals) -> WindowExhausted:
    """The limit an answer on paid overage is: the used-up window's reset ends it (the
    latest reset among the windows the event calls rejected, else the event's own)."""
    rejected = [
        usage.resets_at
        for usage in signals.windows
        if usage.status == "rejected" and usage.resets_at is not None
    ]
    resets_at = max(rejected) if rejected else signals.resets_at
    return WindowExhausted(PAID_OVERAGE, resets_at, paused_at=1.0)


def is_paid_overage(capacity: CapacityState) -> TypeGuard[WindowExhausted]:
    return isinstance(capacity, WindowExhausted) and capacity.rate_limit_type == PAID_OVERAGE


def overage_reset_of(signals: TurnSignals) -> datetime | None:
    """When a spend cap that lifts by the clock lifts: the overage reset, else the event's."""
    return signals.overage_resets_at or signals.resets_at
