"""How long Claude Code may say nothing in a turn, and which silence ends it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.watchdog import (
    DEFAULT_SILENCE,
    LOCAL_SILENCE,
    Activity,
    AwaitingAnswer,
    AwaitingExit,
    AwaitingRetry,
    CalledTools,
    InputClosed,
    RetryAnnounced,
    RunningTools,
    Said,
    SilentTurn,
    Spoke,
    ToolCall,
    ToolsReturned,
    Watch,
    WatchdogSettings,
    awaited,
    patience,
    silence_for,
    tool_patience,
)

SETTINGS = WatchdogSettings(
    silence=90, tool_grace=30, tool_seconds=600, bash_default=120, bash_ceiling=600, exit_grace=10
)
BASH = ToolCall("Bash")


# What the CLI awaits, and for how long ------------------------------------------------


def test_the_models_answer_may_be_silent_for_the_silence() -> None:
    assert patience(AwaitingAnswer(), SETTINGS) == 90


def test_a_retry_announced_adds_its_delay() -> None:
    assert patience(AwaitingRetry(delay_seconds=32), SETTINGS) == 122
    assert patience(AwaitingRetry(delay_seconds=-1), SETTINGS) == 90  # no delay is no wait


def test_bash_may_run_its_own_timeout_then_the_grace() -> None:
    assert tool_patience(ToolCall("Bash", timeout_seconds=300), SETTINGS) == 330


def test_bash_without_a_timeout_runs_claude_codes_default() -> None:
    assert tool_patience(BASH, SETTINGS) == 150


def test_bash_never_runs_past_claude_codes_ceiling() -> None:
    assert tool_patience(ToolCall("Bash", timeout_seconds=3600), SETTINGS) == 630


def test_a_tool_with_no_timeout_of_its_own_may_run_the_longest_a_tool_may() -> None:
    assert tool_patience(ToolCall("WebFetch"), SETTINGS) == 630


def test_tools_running_together_may_be_silent_as_long_as_the_longest() -> None:
    tools = RunningTools((ToolCall("Bash", 10), ToolCall("Bash", 200), ToolCall("Read", None)))
    assert patience(tools, SETTINGS) == 630
    assert patience(RunningTools((ToolCall("Bash", 10), ToolCall("Bash", 200))), SETTINGS) == 230


def test_no_tools_running_is_the_models_answer() -> None:
    assert patience(RunningTools(()), SETTINGS) == 90


def test_a_cli_that_wrote_its_result_has_the_exit_grace() -> None:
    assert patience(AwaitingExit(), SETTINGS) == 10


@pytest.mark.parametrize(
    ("activity", "words"),
    [
        (AwaitingAnswer(), "the model's answer"),
        (AwaitingRetry(3), "its retry of a failed request"),
        (RunningTools((BASH, ToolCall("Read"), BASH)), "tools to return (Bash, Read)"),
        (AwaitingExit(), "its own exit after its result"),
    ],
)
def test_what_was_awaited_in_words(activity: Activity, words: str) -> None:
    assert awaited(activity) == words


def test_a_silent_turn_says_how_long_and_what_it_awaited() -> None:
    silent = SilentTurn(seconds=91.6, activity=AwaitingAnswer())
    assert silent.reason == "Claude Code said nothing for 92 s while awaiting the model's answer"
    lingering = SilentTurn(seconds=10.2, activity=AwaitingExit())
    assert lingering.reason == "Claude Code had not exited 10 s after its result"


# The settings ----------------------------------------------------------------------------


def test_the_default_silence_is_75_seconds_and_six_minutes_on_a_local_backend() -> None:
    assert WatchdogSettings().silence == DEFAULT_SILENCE == 75
    assert silence_for(None, local_backend=False) == DEFAULT_SILENCE
    assert silence_for(None, local_backend=True) == LOCAL_SILENCE == 360


def test_the_users_silence_is_kept_on_any_backend() -> None:
    assert silence_for(5, local_backend=False) == 5
    assert silence_for(5, local_backend=True) == 5


@pytest.mark.parametrize("value", [0.0, -1.0, math.inf, math.nan])
@pytest.mark.parametrize(
    "name", ["silence", "tool_grace", "tool_seconds", "bash_default", "bash_ceiling", "exit_grace"]
)
def test_every_setting_is_a_number_of_seconds_above_zero(name: str, value: float) -> None:
    with pytest.raises(ValueError, match=name):
        WatchdogSettings(**{name: value})


# The watch -------------------------------------------------------------------------------


def test_a_watch_begins_awaiting_the_models_answer() -> None:
    watch = Watch(since=100.0)
    assert watch.activity == AwaitingAnswer()
    assert watch.left(150.0, SETTINGS) == 40
    assert watch.overdue(189.9, SETTINGS) is None
    assert watch.overdue(190.0, SETTINGS) == SilentTurn(90.0, AwaitingAnswer())


def test_anything_the_cli_says_starts_the_clock_again() -> None:
    watch = Watch(since=0.0).heard(Spoke(), at=80.0)
    assert watch.overdue(169.0, SETTINGS) is None
    assert watch.overdue(171.0, SETTINGS) == SilentTurn(91.0, AwaitingAnswer())


def test_a_tool_called_is_waited_for_until_it_returns() -> None:
    called = Watch(since=0.0).heard(CalledTools((("t1", ToolCall("Bash", 300)),)), at=10.0)
    assert called.activity == RunningTools((ToolCall("Bash", 300),))
    assert called.overdue(339.0, SETTINGS) is None  # the command's own five minutes
    # Stream events of the same answer come after the call: the tool still runs.
    streaming = called.heard(Spoke(), at=11.0)
    assert streaming.activity == called.activity
    returned = streaming.heard(ToolsReturned(("t1",)), at=200.0)
    assert returned.activity == AwaitingAnswer()
    assert returned.overdue(291.0, SETTINGS) == SilentTurn(91.0, AwaitingAnswer())


def test_only_the_tools_that_returned_are_let_go_of() -> None:
    calls = (("a", ToolCall("Bash", 20)), ("b", ToolCall("Read")))
    watch = Watch(since=0.0).heard(CalledTools(calls), at=0.0).heard(ToolsReturned(("b",)), at=5.0)
    assert watch.activity == RunningTools((ToolCall("Bash", 20),))


def test_a_retry_announced_is_waited_for_until_the_cli_speaks_again() -> None:
    retrying = Watch(since=0.0).heard(RetryAnnounced(30.0), at=5.0)
    assert retrying.activity == AwaitingRetry(30.0)
    assert retrying.overdue(124.0, SETTINGS) is None
    assert retrying.heard(Spoke(), at=36.0).activity == AwaitingAnswer()
    assert retrying.heard(CalledTools(()), at=36.0).activity == AwaitingAnswer()
    assert retrying.heard(ToolsReturned(()), at=36.0).activity == AwaitingAnswer()


def test_a_closed_input_awaits_the_exit_whatever_ran() -> None:
    running = Watch(since=0.0).heard(CalledTools((("t", BASH),)), at=0.0)
    exiting = running.heard(InputClosed(), at=50.0)
    assert exiting.activity == AwaitingExit()
    assert exiting.overdue(59.0, SETTINGS) is None
    assert exiting.overdue(61.0, SETTINGS) == SilentTurn(11.0, AwaitingExit())


SAID = st.one_of(
    st.just(Spoke()),
    st.just(InputClosed()),
    st.builds(RetryAnnounced, st.floats(min_value=0, max_value=100)),
    st.builds(
        CalledTools,
        st.lists(
            st.tuples(
                st.sampled_from(["a", "b", "c"]),
                st.builds(ToolCall, st.sampled_from(["Bash", "Read"]), st.none()),
            ),
            max_size=3,
        ).map(tuple),
    ),
    st.builds(ToolsReturned, st.lists(st.sampled_from(["a", "b", "c"]), max_size=3).map(tuple)),
)


@given(st.lists(st.tuples(SAID, st.floats(min_value=0, max_value=1000)), max_size=20))
def test_no_watch_is_overdue_before_the_longest_patience_has_passed_since_the_cli_spoke(
    heard: list[tuple[Said, float]],
) -> None:
    watch = Watch(since=0.0)
    at = 0.0
    for said, later in heard:
        at += later
        watch = watch.heard(said, at=at)
    assert watch.since == at
    longest = patience(watch.activity, SETTINGS)
    assert watch.overdue(at + longest - 0.001, SETTINGS) is None
    silent = watch.overdue(at + longest, SETTINGS)
    assert silent is not None
    assert silent.activity == watch.activity
