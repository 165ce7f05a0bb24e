"""evaluate: the structured verdict first, the marker only as a guarded fallback."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.capacity import WindowExhausted
from claudeloop.domain.completion import (
    DEFAULT_DONE_MARKER,
    Blocked,
    Continue,
    Done,
    StructuredVerdict,
    evaluate,
    marker_in,
)
from claudeloop.domain.loop import (
    Finish,
    Phase,
    RunState,
    ScheduleProbe,
    decide_after_turn,
)
from claudeloop.domain.waiting import WaitPolicyConfig
from tests.examples import examples

MARKER = DEFAULT_DONE_MARKER
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
PROMPT = f"Work through PLAN.md. When every item is done, print {MARKER} on its own line."


# The structured verdict ---------------------------------------------------------------


def test_blocked_outranks_complete() -> None:
    verdict = StructuredVerdict(
        complete=True, blocked_on="  the API key for staging  ", summary="did a, b"
    )
    assert evaluate(verdict, final_text=MARKER) == Blocked(
        reason="the API key for staging", summary="did a, b"
    )


def test_blocked_without_complete_is_blocked() -> None:
    verdict = StructuredVerdict(complete=False, remaining_work=("c",), blocked_on="approval")
    assert evaluate(verdict, final_text="") == Blocked(reason="approval")


def test_a_blank_blocker_is_no_blocker() -> None:
    verdict = StructuredVerdict(complete=True, blocked_on=" \n ", summary="all done")
    assert evaluate(verdict, final_text="") == Done(summary="all done")


def test_complete_without_a_blocker_is_done() -> None:
    verdict = StructuredVerdict(complete=True, summary="shipped")
    assert evaluate(verdict, final_text="") == Done(summary="shipped")


def test_incomplete_is_continue_with_the_remaining_work() -> None:
    verdict = StructuredVerdict(
        complete=False, remaining_work=("write tests", "update docs"), summary="half way"
    )
    assert evaluate(verdict, final_text="") == Continue(
        remaining_work=("write tests", "update docs"), summary="half way"
    )


def test_a_structured_verdict_decides_alone_and_the_marker_is_ignored() -> None:
    not_done = StructuredVerdict(complete=False, remaining_work=("b",))
    assert evaluate(not_done, final_text=f"All done!\n{MARKER}") == Continue(remaining_work=("b",))


# The marker fallback ------------------------------------------------------------------


def test_marker_fallback_applies_only_when_structured_is_none() -> None:
    text = f"Everything is finished.\n{MARKER}\n"
    assert evaluate(None, final_text=text) == Done(summary="Everything is finished.")


def test_without_a_marker_the_fallback_continues_with_the_text_as_summary() -> None:
    assert evaluate(None, final_text="  did item 1  ") == Continue(summary="did item 1")


def test_marker_fallback_can_be_switched_off() -> None:
    text = f"Everything is finished.\n{MARKER}"
    assert evaluate(None, final_text=text, marker_fallback=False) == Continue(summary=text)


def test_a_configured_marker_replaces_the_default() -> None:
    assert evaluate(None, final_text="ALL_DONE_42", marker="ALL_DONE_42") == Done(summary="")
    assert isinstance(evaluate(None, final_text=MARKER, marker="ALL_DONE_42"), Continue)


def test_an_empty_marker_never_matches() -> None:
    assert not marker_in("anything at all", marker="")
    assert isinstance(evaluate(None, final_text="anything", marker=""), Continue)


def test_collision_marker_in_the_prompt_echo_does_not_count() -> None:
    echoed = f"You asked:\n{PROMPT}\n\nI finished item 1; item 2 is next."
    assert not marker_in(echoed, marker=MARKER, prompt=PROMPT)
    assert isinstance(evaluate(None, final_text=echoed, prompt=PROMPT), Continue)


def test_collision_marker_after_the_prompt_echo_still_counts() -> None:
    answer = f"You asked:\n{PROMPT}\n\nEverything is done.\n{MARKER}"
    assert marker_in(answer, marker=MARKER, prompt=PROMPT)
    assert isinstance(evaluate(None, final_text=answer, prompt=PROMPT), Done)


def test_a_blank_prompt_removes_nothing() -> None:
    assert marker_in(f"done {MARKER}", marker=MARKER, prompt="   ")


@pytest.mark.parametrize(
    "quoted",
    [
        f"The instructions say to print it:\n```\necho {MARKER}\n```\nNot yet though.",
        f"~~~text\n{MARKER}\n~~~",
        f"I will print `{MARKER}` once item 3 is done.",
        f"Your prompt said:\n> print {MARKER} when finished\nItem 2 remains.",
        f'The prompt asks for "{MARKER}" at the very end.',
        f"The prompt asks for “{MARKER}” at the very end.",
    ],
    ids=["code-fence", "tilde-fence", "inline-code", "block-quote", "double-quotes", "curly"],
)
def test_collision_marker_in_quoted_text_does_not_count(quoted: str) -> None:
    assert not marker_in(quoted, marker=MARKER)
    assert isinstance(evaluate(None, final_text=quoted), Continue)


def test_the_marker_outside_a_quote_still_counts() -> None:
    answer = f'You said "print the marker when done". All items are done.\n{MARKER}'
    assert marker_in(answer, marker=MARKER)


def test_truncation_a_cut_off_marker_does_not_count() -> None:
    cut = f"Finished item 4, now writing the summary. {MARKER[:-5]}"
    assert not marker_in(cut, marker=MARKER)
    assert isinstance(evaluate(None, final_text=cut), Continue)


def test_truncation_a_marker_inside_a_limit_message_is_discarded_by_the_limit() -> None:
    # The marker did appear, so the fallback reads Done; the limit on the same turn wins.
    text = f"Working on it... {MARKER}\nYou've hit your limit · resets 5pm"
    verdict = evaluate(None, final_text=text)
    assert isinstance(verdict, Done)
    after = decide_after_turn(
        RunState(phase=Phase.RUNNING, ledger=BudgetLedger()),
        capacity=WindowExhausted("five_hour", None),
        verdict=verdict,
        now=NOW,
        config=WaitPolicyConfig(),
    )
    assert isinstance(after.decision, ScheduleProbe)
    assert not isinstance(after.decision, Finish)
    assert after.state.phase is Phase.WAITING


@settings(max_examples=examples(200))
@given(text=st.text(), prompt=st.text())
def test_text_without_the_marker_is_never_done(text: str, prompt: str) -> None:
    if MARKER in text:
        return
    assert isinstance(evaluate(None, final_text=text, prompt=prompt), Continue)


# Words around the echo that cannot spell the marker (it is upper case and underscores).
plain_words = st.text(alphabet='abcdefg .,:\n\t"`>', max_size=40)


@settings(max_examples=examples(200))
@given(before=plain_words, after=plain_words, lead=plain_words, tail=plain_words)
def test_an_echo_of_a_marker_bearing_prompt_is_never_done(
    before: str, after: str, lead: str, tail: str
) -> None:
    prompt = f"{before} print {MARKER} {after}"
    answer = f"{lead}{prompt}{tail}"
    assert not marker_in(answer, marker=MARKER, prompt=prompt)
    assert isinstance(evaluate(None, final_text=answer, prompt=prompt), Continue)


@settings(max_examples=examples(200))
@given(
    complete=st.booleans(),
    remaining=st.lists(st.text(max_size=10), max_size=3).map(tuple),
    blocked_on=st.none() | st.text(max_size=10),
    summary=st.text(max_size=10),
    text=st.text(max_size=20),
)
def test_the_structured_verdict_alone_decides(
    complete: bool,
    remaining: tuple[str, ...],
    blocked_on: str | None,
    summary: str,
    text: str,
) -> None:
    structured = StructuredVerdict(complete, remaining, blocked_on, summary)
    verdict = evaluate(structured, final_text=text + MARKER)
    if blocked_on is not None and blocked_on.strip():
        assert verdict == Blocked(reason=blocked_on.strip(), summary=summary)
    elif complete:
        assert verdict == Done(summary=summary)
    else:
        assert verdict == Continue(remaining_work=remaining, summary=summary)


def test_a_hook_that_stopped_claude_code_outranks_every_verdict() -> None:
    done = StructuredVerdict(complete=True, summary="all done")
    for structured in (done, None):
        verdict = evaluate(structured, final_text="", stopped_by_hook="the build is red")
        assert verdict == Blocked(
            reason="a hook stopped Claude Code: the build is red", by_claude_code=True
        )


@given(
    structured=st.none()
    | st.builds(
        StructuredVerdict,
        complete=st.booleans(),
        blocked_on=st.none() | st.text(max_size=20),
        summary=st.text(max_size=20),
    ),
    final_text=st.text(max_size=60) | st.just(DEFAULT_DONE_MARKER),
    reason=st.text(min_size=1, max_size=40),
)
def test_whatever_the_turn_said_a_hook_stop_is_blocked_on_the_hook(
    structured: StructuredVerdict | None, final_text: str, reason: str
) -> None:
    """Invariant: a turn a hook stopped never ends the run done nor sends another turn."""
    verdict = evaluate(structured, final_text=final_text, stopped_by_hook=reason)
    assert verdict == Blocked(reason=f"a hook stopped Claude Code: {reason}", by_claude_code=True)


def test_a_refusal_of_the_model_is_blocked_on_it_and_a_hook_stop_outranks_it() -> None:
    done = StructuredVerdict(complete=True, summary="all done")
    for structured in (done, None):
        verdict = evaluate(structured, final_text="", refused_by_model="cyber")
        assert verdict == Blocked(reason="the model refused to answer: cyber", by_claude_code=True)
    both = evaluate(done, final_text="", stopped_by_hook="red", refused_by_model="cyber")
    assert both == Blocked(reason="a hook stopped Claude Code: red", by_claude_code=True)


@given(
    structured=st.none()
    | st.builds(
        StructuredVerdict,
        complete=st.booleans(),
        blocked_on=st.none() | st.text(max_size=20),
        summary=st.text(max_size=20),
    ),
    final_text=st.text(max_size=60) | st.just(DEFAULT_DONE_MARKER),
    reason=st.text(min_size=1, max_size=40),
)
def test_whatever_the_turn_said_a_refused_turn_is_never_done(
    structured: StructuredVerdict | None, final_text: str, reason: str
) -> None:
    """Invariant: a refusal is not a verdict; the run never ends done on one."""
    verdict = evaluate(structured, final_text=final_text, refused_by_model=reason)
    assert verdict == Blocked(reason=f"the model refused to answer: {reason}", by_claude_code=True)
