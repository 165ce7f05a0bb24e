"""A turn's price from what the turn itself reported, on the figures measured with the
bundled CLI (see pricing.py): 200 input and 40 output tokens per answer, two answers a
turn, $0.0016 a turn at the CLI's list price."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.adapters.claude_code.pricing import (
    ModelSpend,
    TurnPrice,
    model_spends,
    turn_price,
)

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


# The CLI as measured, played: running totals per model, restored by a new process from
# the last process that exited cleanly; a kill -9 saves nothing.

RATES = {"claude-sonnet-5-5": 2e-6, "claude-haiku-5": 0.8e-6}  # $ per input token
Tokens = tuple[int, int, int]  # input, output, cache reads


def served_cost(model: str, tokens: Tokens) -> float:
    return RATES[model] * (tokens[0] + 5 * tokens[1] + 0.1 * tokens[2])


@dataclass
class PlayedCli:
    saved: dict[str, list[float]] = field(default_factory=dict)  # at the last clean exit
    live: dict[str, list[float]] | None = None
    previous: tuple[ModelSpend, ...] | None = None
    previous_total: float = 0.0

    def start(self) -> None:
        self.live = {model: list(totals) for model, totals in self.saved.items()}
        self.previous, self.previous_total = None, 0.0

    def turn(self, model: str, tokens: Tokens) -> TurnPrice:
        if self.live is None:
            self.start()
        assert self.live is not None
        totals = self.live.setdefault(model, [0.0, 0.0, 0.0, 0.0])
        for index, count in enumerate(tokens):
            totals[index] += count
        totals[3] += served_cost(model, tokens)
        spends = model_spends(
            {
                name: {
                    "inputTokens": t[0],
                    "outputTokens": t[1],
                    "cacheReadInputTokens": t[2],
                    "costUSD": t[3],
                    "costBasis": "list",
                }
                for name, t in self.live.items()
            }
        )
        total = sum(t[3] for t in self.live.values())
        usage = {
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "cache_read_input_tokens": tokens[2],
        }
        price = turn_price(
            total_usd=total,
            usage=usage,
            spends=spends,
            previous=self.previous,
            previous_total_usd=self.previous_total,
            served_by=(model,),
        )
        self.previous, self.previous_total = spends, total
        return price

    def exit_cleanly(self) -> None:
        if self.live is not None:
            self.saved = self.live
        self.live = None

    def killed(self) -> None:
        self.live = None


tokens = st.tuples(st.integers(0, 50_000), st.integers(0, 8_000), st.integers(0, 200_000))
steps = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.sampled_from(sorted(RATES)), tokens),
        st.tuples(st.just("exit"), st.none(), st.none()),
        st.tuples(st.just("kill"), st.none(), st.none()),
    ),
    max_size=30,
)


@given(steps=steps)
def test_the_sum_of_turn_prices_is_what_was_served_across_restarts_and_kills(
    steps: list[tuple[str, str | None, Tokens | None]],
) -> None:
    # A second model stands for a detour's (or a side request's) turns on the session.
    cli = PlayedCli()
    billed = served = 0.0
    for kind, model, used in steps:
        if kind == "turn":
            assert model is not None
            assert used is not None
            billed += cli.turn(model, used).listed_usd
            served += served_cost(model, used)
        elif kind == "exit":
            cli.exit_cleanly()
        else:
            cli.killed()
    assert billed == pytest.approx(served, rel=1e-6, abs=1e-8)


def test_a_previous_result_without_per_model_figures_is_no_baseline() -> None:
    # E.g. an error result in a kept process: the next turn's total is not all its own.
    priced = turn_price(
        total_usd=0.0048,
        usage=TURN_USAGE,
        spends=model_spends(model_usage(3)),
        previous=(),
        previous_total_usd=0.0032,
    )
    assert priced.listed_usd == pytest.approx(0.0016)
