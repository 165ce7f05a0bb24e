"""turn_end: every terminal_reason the CLI names has one meaning for the loop."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.turn_end import (
    CONTEXT_STOPS,
    TERMINAL_REASONS,
    ApiRefused,
    CliStopped,
    ContextFull,
    Errored,
    TurnEnded,
    UnknownEnd,
    context_full_reason,
    is_error_turn,
    turn_end,
)


def test_the_clis_nineteen_reasons_are_all_known() -> None:
    # Read from the CLI 2.1.332 binary: its query loop's 15 and the 4 around it.
    assert len(TERMINAL_REASONS) == len(set(TERMINAL_REASONS)) == 19


@pytest.mark.parametrize(
    ("reason", "end"),
    [
        ("completed", TurnEnded("completed")),
        ("background_requested", TurnEnded("background_requested")),
        ("max_turns", TurnEnded("max_turns", early=True)),
        ("aborted_streaming", TurnEnded("aborted_streaming", early=True)),
        ("hook_stopped", TurnEnded("hook_stopped", early=True)),
        ("structured_output_retry_exhausted", TurnEnded("structured_output_retry_exhausted", True)),
        ("model_error", Errored("model_error")),
        ("malformed_tool_use_exhausted", Errored("malformed_tool_use_exhausted")),
        ("prompt_too_long", ContextFull("prompt_too_long")),
        ("blocking_limit", ContextFull("blocking_limit")),
        ("rapid_refill_breaker", ContextFull("rapid_refill_breaker")),
        ("api_error", ApiRefused()),
        ("budget_exhausted", CliStopped("budget_exhausted")),
        ("turn_setup_failed", CliStopped("turn_setup_failed")),
        ("a_later_reason", UnknownEnd("a_later_reason")),
        (None, UnknownEnd(None)),
    ],
)
def test_each_reason_means_one_thing(reason: str | None, end: object) -> None:
    assert turn_end(reason) == end


@given(reason=st.sampled_from(TERMINAL_REASONS))
def test_every_known_reason_has_a_meaning_other_than_unknown(reason: str) -> None:
    assert not isinstance(turn_end(reason), UnknownEnd)


@given(reason=st.text(max_size=30).filter(lambda text: text not in TERMINAL_REASONS))
def test_an_unknown_reason_is_read_as_unknown_never_as_an_end(reason: str) -> None:
    assert turn_end(reason) == UnknownEnd(reason)


def test_every_context_stop_is_said_as_a_prompt_too_long() -> None:
    # backend_advice reads the kind from these words in records written before kinds.
    for stop in CONTEXT_STOPS:
        assert context_full_reason(stop).startswith("the prompt is too long")


@pytest.mark.parametrize(
    ("signals", "error_turn"),
    [
        (TurnSignals(), False),
        (TurnSignals(is_error=True), True),
        (TurnSignals(is_error=True, terminal_reason="max_turns"), False),
        (TurnSignals(is_error=True, terminal_reason="completed"), False),
        (TurnSignals(is_error=True, terminal_reason="model_error"), True),
        (TurnSignals(is_error=True, terminal_reason="api_error"), True),
        (TurnSignals(is_error=True, terminal_reason="prompt_too_long"), True),
        (TurnSignals(is_error=True, terminal_reason="turn_setup_failed"), True),
        (TurnSignals(is_error=True, terminal_reason="a_later_reason"), True),
        (
            TurnSignals(
                is_error=True, terminal_reason="api_error", assistant_error="max_output_tokens"
            ),
            False,
        ),
    ],
)
def test_which_turns_ended_in_an_error(signals: TurnSignals, error_turn: bool) -> None:
    assert is_error_turn(signals) is error_turn


@given(reason=st.none() | st.sampled_from(TERMINAL_REASONS) | st.text(max_size=20))
def test_a_turn_the_result_does_not_call_failed_is_never_an_error_turn(
    reason: str | None,
) -> None:
    assert not is_error_turn(TurnSignals(terminal_reason=reason))
