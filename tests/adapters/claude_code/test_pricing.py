"""A turn's price from what the turn itself reported, on the figures measured with the
bundled CLI (see pricing.py): 200 input and 40 output tokens per answer, two answers a
turn, $0.0016 a turn at the CLI's list price."""

from __future__ import annotations

from typing import Any

import pytest

from claudeloop.adapters.claude_code.pricing import TurnPrice, model_spends, turn_price

TURN_USAGE = {"input_tokens": 400, "output_tokens": 80, "cache_read_input_tokens": 0}


def model_usage(
    turns: int, *, model: str = "claude-sonnet-5-5", basis: str = "list", per_turn: float = 0.0016
) -> dict[str, Any]:
    return {
        model: {
            "inputTokens": 400 * turns,
            "outputTokens": 80 * turns,
            "cacheReadInputTokens": 0,
            "cacheCreationInputTokens": 0,
            "cacheCreationEphemeral5mInputTokens": 0,
            "cacheCreationEphemeral1hInputTokens": 0,
            "costUSD": per_turn * turns,
            "costBasis": basis,
        }
    }


def price(
    turns: int, previous_turns: int | None, *, usage: dict[str, Any] = TURN_USAGE, **kw: Any
) -> TurnPrice:
    now = model_usage(turns, **kw)
    previous = model_spends(model_usage(previous_turns, **kw)) if previous_turns else None
    return turn_price(
        total_usd=sum(m["costUSD"] for m in now.values()),
        usage=usage,
        spends=model_spends(now),
        previous=previous,
        previous_total_usd=0.0016 * (previous_turns or 0),
    )


def test_a_kept_process_bills_the_growth_of_its_own_total() -> None:
    assert price(2, 1).listed_usd == pytest.approx(0.0016)


@pytest.mark.parametrize("restored_turns", [0, 2, 5])
def test_a_fresh_process_bills_the_turn_not_the_total_it_restored(restored_turns: int) -> None:
    # First turn of a process: after a clean exit the CLI restores the whole total, after
    # a kill -9 an older one; either way the turn costs what its own usage says.
    assert price(restored_turns + 1, None).listed_usd == pytest.approx(0.0016)


def test_a_fresh_process_prices_a_one_answer_turn_at_half() -> None:
    # Measured after a kill -9: total 0.0056 for 1400/280 tokens, a turn of 200/40.
    half = {"input_tokens": 200, "output_tokens": 40}
    assert price(3, None, usage=half).listed_usd == pytest.approx(0.0008)


def test_cache_tokens_are_priced_at_their_share_of_an_input_token() -> None:
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 1000}
    spends = model_spends(
        {"m": {"inputTokens": 1000, "outputTokens": 0, "costUSD": 0.003, "costBasis": "list"}}
    )
    priced = turn_price(
        total_usd=0.003, usage=usage, spends=spends, previous=None, previous_total_usd=0.0
    )
    assert priced.listed_usd == pytest.approx(0.0003)  # a read is a tenth of an input


def test_a_model_the_cli_does_not_know_is_a_guess_not_spend() -> None:
    priced = price(1, None, model="qwen3-coder:30b", basis="unknown", per_turn=0.0032)
    assert priced.listed_usd == 0.0
    assert priced.guessed_usd == pytest.approx(0.0032)
    assert priced.guessed_models == ("qwen3-coder:30b",)


def test_without_per_model_figures_the_process_total_is_used_as_before() -> None:
    priced = turn_price(
        total_usd=0.0048, usage=TURN_USAGE, spends=(), previous=(), previous_total_usd=0.0032
    )
    assert priced.listed_usd == pytest.approx(0.0016)
    assert (priced.guessed_usd, priced.guessed_models) == (0.0, ())
    first = turn_price(
        total_usd=0.0016, usage=TURN_USAGE, spends=(), previous=None, previous_total_usd=0.0
    )
    assert first.listed_usd == pytest.approx(0.0016)


@pytest.mark.parametrize("junk", [None, [], {"m": "x"}, {1: {}}])
def test_model_usage_of_an_unexpected_shape_is_no_figures(junk: object) -> None:
    assert model_spends(junk) == ()


def test_a_fresh_process_prices_the_turn_at_the_model_that_answered_it() -> None:
    # Measured after a switch-profile detour: the resumed session's total holds the
    # local model's turns too; the turn was answered by the run's own model alone.
    spends = model_spends(
        {
            **model_usage(1),
            **model_usage(2, model="qwen3", basis="unknown", per_turn=0.0032),
        }
    )
    priced = turn_price(
        total_usd=0.008,
        usage=TURN_USAGE,
        spends=spends,
        previous=None,
        previous_total_usd=0.0,
        served_by=("claude-sonnet-5-5",),
    )
    assert priced.listed_usd == pytest.approx(0.0016)
    assert (priced.guessed_usd, priced.guessed_models) == (0.0, ())
