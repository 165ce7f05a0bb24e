"""What one turn cost, from what the turn itself reports.

Measured with the bundled CLI 2.1.332 against the rehearsal API (200 input and 40 output
tokens per answer, two answers per turn):

- `usage` on a result counts this turn's requests only (400/80 on every turn, in a kept
  process, in a resumed one and after a kill -9).
- `total_cost_usd` and `modelUsage` are the session's running totals, and a process
  resuming the session restores them from what the last process that *exited cleanly*
  saved: after a clean exit the next process goes on from 0.0032 to 0.0048; after a
  kill -9 it goes on from that older figure (0.0048 -> 0.0056 for a turn of 0.0008, the
  killed process's own 0.0032 forgotten). A total is never compared across processes.
- `modelUsage[model].costBasis` is "list" for a model in the CLI's price table and
  "unknown" for one it prices at a guess (a local model's name).

So within one kept process a turn costs the growth of each model's `costUSD` since the
previous result of the same process (exact, every model). The first turn of a process
has no previous result: its `usage` is priced at the rate the CLI applied to that model's
running total. Every Anthropic price has output at 5x input, cache reads at 0.1x and
cache writes at 1.25x (5 minutes) or 2x (1 hour), so one rate per model says it all.
The model is the one the turn's assistant messages name: a resumed session's total may
hold others (after a switch-profile detour, the local model's). With several models
answering one turn the rate is their average (`usage` does not split by model).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Prices relative to an input token (see above).
_OUTPUT = 5.0
_CACHE_READ = 0.1
_CACHE_WRITE_5M = 1.25
_CACHE_WRITE_1H = 2.0
# What the CLI says of a model missing from its price table.
_GUESSED_BASIS = "unknown"


@dataclass(frozen=True, slots=True)
class ModelSpend:
    """One model's running total in a result's `modelUsage`."""

    model: str
    cost_usd: float
    # Tokens weighted by their price relative to an input token.
    weighted_tokens: float
    guessed: bool


@dataclass(frozen=True, slots=True)
class TurnPrice:
    """A turn's cost: what the CLI priced from its table, and what it guessed."""

    listed_usd: float = 0.0
    guessed_usd: float = 0.0
    guessed_models: tuple[str, ...] = ()


def model_spends(model_usage: object) -> tuple[ModelSpend, ...]:
    """`ResultMessage.model_usage` (the CLI's `modelUsage`), read defensively."""
    if not isinstance(model_usage, Mapping):
        return ()
    spends = []
    for model, detail in model_usage.items():
        if not isinstance(model, str) or not isinstance(detail, Mapping):
            continue
        spends.append(
            ModelSpend(
                model=model,
                cost_usd=_number(detail.get("costUSD")),
                weighted_tokens=_weighted_model_tokens(detail),
                guessed=detail.get("costBasis") == _GUESSED_BASIS,
            )
        )
    return tuple(spends)


def turn_price(
    *,
    total_usd: float,
    usage: Mapping[str, Any],
    spends: tuple[ModelSpend, ...],
    previous: tuple[ModelSpend, ...] | None,
    previous_total_usd: float,
    served_by: tuple[str, ...] = (),
) -> TurnPrice:
    """The turn's price. `previous` is the last result of the same process (None for a
    process's first turn); `previous_total_usd` its `total_cost_usd`; `served_by` the
    models that answered the turn."""
    if not spends:
        # No per-model figures (an older CLI): the process's own growth, as before.
        growth = total_usd - previous_total_usd if previous is not None else total_usd
        return TurnPrice(listed_usd=_rounded(growth))
    if previous:
        # (A previous result without per-model figures is no baseline: priced as a first.)
        before = {spend.model: spend.cost_usd for spend in previous}
        grown = [(spend, spend.cost_usd - before.get(spend.model, 0.0)) for spend in spends]
    else:
        answering = [spend for spend in spends if spend.model in served_by] or list(spends)
        total_weight = sum(spend.weighted_tokens for spend in answering)
        total_cost = sum(spend.cost_usd for spend in answering)
        rate = total_cost / total_weight if total_weight > 0 else 0.0
        turn_cost = _weighted_turn_tokens(usage) * rate
        # The turn's cost shared out like the answering models' running total.
        grown = [
            (spend, turn_cost * spend.cost_usd / total_cost if total_cost > 0 else 0.0)
            for spend in answering
        ]
    listed = sum(cost for spend, cost in grown if not spend.guessed)
    guessed = sum(cost for spend, cost in grown if spend.guessed)
    return TurnPrice(
        listed_usd=_rounded(listed),
        guessed_usd=_rounded(guessed),
        guessed_models=tuple(spend.model for spend, cost in grown if spend.guessed and cost > 0),
    )


def lost_price(
    lost: Iterable[tuple[str, Mapping[str, Any]]], spends: tuple[ModelSpend, ...]
) -> TurnPrice:
    """What requests served before a crash cost: each `(model, usage)` (read from the
    session's transcript, see transcript.py) at the rate this result's running total
    shows for its model. A model the result does not price at all is left out."""
    rates = {
        spend.model: (spend.cost_usd / spend.weighted_tokens, spend.guessed)
        for spend in spends
        if spend.weighted_tokens > 0
    }
    listed = guessed = 0.0
    guessed_models: dict[str, None] = {}
    for model, usage in lost:
        if model not in rates:
            continue
        rate, is_guess = rates[model]
        cost = _weighted_turn_tokens(usage) * rate
        if is_guess:
            guessed += cost
            guessed_models[model] = None
        else:
            listed += cost
    return TurnPrice(
        listed_usd=_rounded(listed),
        guessed_usd=_rounded(guessed),
        guessed_models=tuple(guessed_models),
    )


def added(one: TurnPrice, other: TurnPrice) -> TurnPrice:
    return TurnPrice(
        listed_usd=_rounded(one.listed_usd + other.listed_usd),
        guessed_usd=_rounded(one.guessed_usd + other.guessed_usd),
        guessed_models=tuple(dict.fromkeys((*one.guessed_models, *other.guessed_models))),
    )


def _weighted_turn_tokens(usage: Mapping[str, Any]) -> float:
    split = usage.get("cache_creation")
    split = split if isinstance(split, Mapping) else {}
    return (
        _number(usage.get("input_tokens"))
        + _OUTPUT * _number(usage.get("output_tokens"))
        + _CACHE_READ * _number(usage.get("cache_read_input_tokens"))
        + _cache_writes(
            _number(usage.get("cache_creation_input_tokens")),
            _number(split.get("ephemeral_5m_input_tokens")),
            _number(split.get("ephemeral_1h_input_tokens")),
        )
    )


def _weighted_model_tokens(detail: Mapping[str, Any]) -> float:
    return (
        _number(detail.get("inputTokens"))
        + _OUTPUT * _number(detail.get("outputTokens"))
        + _CACHE_READ * _number(detail.get("cacheReadInputTokens"))
        + _cache_writes(
            _number(detail.get("cacheCreationInputTokens")),
            _number(detail.get("cacheCreationEphemeral5mInputTokens")),
            _number(detail.get("cacheCreationEphemeral1hInputTokens")),
        )
    )


def _cache_writes(total: float, five_minutes: float, one_hour: float) -> float:
    # The split by lifetime when the CLI gives one, else every write at the 5-minute price.
    if five_minutes + one_hour > 0:
        return _CACHE_WRITE_5M * five_minutes + _CACHE_WRITE_1H * one_hour
    return _CACHE_WRITE_5M * total


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if value > 0 else 0.0


def _rounded(cost: float) -> float:
    # A difference of two running totals reads as the price it is, never below zero.
    return round(max(cost, 0.0), 9)
