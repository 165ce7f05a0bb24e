"""Verification: checks parsed once, failures recognised across turns, a Done accepted on
evidence only."""

from __future__ import annotations

from pathlib import PurePath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.domain.completion import Blocked, CompletionVerdict, Continue, Done
from claudeloop.domain.verification import (
    Accepted,
    AskReview,
    CheckCommand,
    CheckFailed,
    CheckResult,
    ChecksPassed,
    DoneJudgement,
    ReviewDisagreed,
    RunCheck,
    judge_done,
    normalise_output,
    parse_checks,
    verification_of,
)

MAKE_TEST = CheckCommand.parse("make test")
RUFF = CheckCommand.parse("ruff check .")


def passed(check: CheckCommand) -> CheckResult:
    return CheckResult(command=check, exit_code=0, seconds=1.0)


def failed(check: CheckCommand, tail: str = "1 failed", code: int = 1) -> CheckResult:
    return CheckResult(
        command=check, exit_code=code, seconds=1.0, output_tail=tail, output_bytes=len(tail)
    )


# Parsing the configured checks ---------------------------------------------------------


def test_a_command_is_split_like_a_shell_without_one() -> None:
    (check,) = parse_checks(["pytest -k 'not slow' tests/"])
    assert check.text == "pytest -k 'not slow' tests/"
    assert check.argv == ("pytest", "-k", "not slow", "tests/")


def test_checks_keep_their_order() -> None:
    assert [c.text for c in parse_checks(["make test", "ruff check ."])] == [
        "make test",
        "ruff check .",
    ]


@pytest.mark.parametrize("text", ["", "   ", "\t\n"])
def test_an_empty_command_is_refused_in_one_line_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match="is empty") as error:
        parse_checks(["make test", text])
    assert "\n" not in str(error.value)
    assert repr(text) in str(error.value)


def test_unbalanced_quoting_is_refused_in_one_line_naming_the_command() -> None:
    with pytest.raises(ValueError, match="cannot be split") as error:
        parse_checks(["pytest -k 'not slow"])
    message = str(error.value)
    assert "\n" not in message
    assert "pytest -k 'not slow" in message
    assert "No closing quotation" in message


def test_a_command_without_words_cannot_be_built() -> None:
    with pytest.raises(ValueError, match="empty"):
        CheckCommand(text="", argv=())


# Results -------------------------------------------------------------------------------


def test_only_exit_code_zero_passes() -> None:
    assert passed(MAKE_TEST).passed
    assert not failed(MAKE_TEST, code=2).passed
    assert not CheckResult(command=MAKE_TEST, exit_code=None, seconds=600, timed_out=True).passed
    assert not CheckResult(
        command=MAKE_TEST, exit_code=None, seconds=0, start_error="No such file: make"
    ).passed


def test_how_a_check_ended_is_said_in_one_wording() -> None:
    assert passed(MAKE_TEST).ended == "passed"
    assert failed(MAKE_TEST, code=2).ended == "failed: exit 2"
    timed_out = CheckResult(command=MAKE_TEST, exit_code=None, seconds=600, timed_out=True)
    assert timed_out.ended == "failed: timed out"
    no_start = CheckResult(
        command=MAKE_TEST, exit_code=None, seconds=0, start_error="No such file: make"
    )
    assert no_start.ended == "failed: could not start (No such file: make)"


@pytest.mark.parametrize(
    ("exit_code", "timed_out", "start_error"),
    [(None, False, None), (0, True, None), (1, False, "x"), (None, True, "x")],
)
def test_a_result_ends_in_exactly_one_way(
    exit_code: int | None, timed_out: bool, start_error: str | None
) -> None:
    with pytest.raises(ValueError, match="exactly one way"):
        CheckResult(
            command=MAKE_TEST,
            exit_code=exit_code,
            seconds=1,
            timed_out=timed_out,
            start_error=start_error,
        )


def test_a_result_says_where_the_whole_output_is() -> None:
    result = CheckResult(
        command=MAKE_TEST,
        exit_code=1,
        seconds=3.5,
        output_tail="end",
        output_bytes=10_000,
        output_path=PurePath("/runs/r1/verify/turn-3-1.log"),
    )
    assert result.tail_is_partial
    assert result.output_path == PurePath("/runs/r1/verify/turn-3-1.log")


# Failure signatures --------------------------------------------------------------------

PYTEST_FAILURE = """\
============================= test session starts ==============================
platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0
rootdir: {tmp}
collected 12 items

tests/test_parser.py ..F.........                                        [100%]

=================================== FAILURES ===================================
___________________________________ test_eof ___________________________________
    def test_eof():
>       assert parse("") == []
E       AssertionError: assert <Node object at {hex}> == []
started at {stamp}, worker pid {pid}, run id {run_id}
=========================== short test summary info ============================
FAILED tests/test_parser.py::test_eof - AssertionError
========================= 1 failed, 11 passed in {duration} =========================
"""


def pytest_output(
    *, tmp: str, hex_id: str, stamp: str, pid: int, run_id: str, duration: str
) -> str:
    return PYTEST_FAILURE.format(
        tmp=tmp, hex=hex_id, stamp=stamp, pid=pid, run_id=run_id, duration=duration
    )


def test_volatile_parts_do_not_change_a_signature() -> None:
    first = pytest_output(
        tmp="/tmp/pytest-of-ci/pytest-12/test_eof0",
        hex_id="0x7f3a2b1c9d40",
        stamp="2026-12-01T11:20:03.114Z",
        pid=4242,
        run_id="9f8e7d6c5b4a3210",
        duration="0.42s",
    )
    second = pytest_output(
        tmp="/private/var/folders/xy/T/pytest-13/test_eof1",
        hex_id="0x55d1e0a4b7f0",
        stamp="2026-12-01 11:24:59+01:00",
        pid=977,
        run_id="0123abcd4567ef89",
        duration="1.07s",
    )
    assert first != second
    assert (
        failed(MAKE_TEST, first).failure_signature()
        == failed(MAKE_TEST, second).failure_signature()
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("took 0.42s", "took 12 ms"),
        ("at 11:20:03", "at 09:01:59.5"),
        ("on 2026-12-01", "on 2027-01-31"),
        ("pid=12", "PID: 40001"),
        ("id 123e4567-e89b-12d3-a456-426614174000", "id 00000000-aaaa-bbbb-cccc-000000000000"),
        ("commit 3f2a9c1d8e", "commit 77ab01cd99"),
        ("wrote /tmp/tmpa1b2c3/out.txt", "wrote /var/tmp/tmpzz9/out.txt"),
    ],
)
def test_each_volatile_kind_is_normalised(a: str, b: str) -> None:
    assert normalise_output(a) == normalise_output(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("3 failed, 9 passed", "2 failed, 10 passed"),
        ("FAILED tests/test_a.py::test_one", "FAILED tests/test_a.py::test_two"),
        ("expected 12345678", "expected 12345679"),
        ("line 41", "line 42"),
    ],
)
def test_what_the_failure_is_still_tells_signatures_apart(a: str, b: str) -> None:
    assert normalise_output(a) != normalise_output(b)


def test_different_commands_have_different_signatures() -> None:
    assert failed(MAKE_TEST, "boom").failure_signature() != failed(RUFF, "boom").failure_signature()


def test_a_different_exit_code_or_ending_is_a_different_failure() -> None:
    exit_one = failed(MAKE_TEST, "boom", code=1).failure_signature()
    exit_two = failed(MAKE_TEST, "boom", code=2).failure_signature()
    timeout = CheckResult(
        command=MAKE_TEST, exit_code=None, seconds=600, output_tail="boom", timed_out=True
    ).failure_signature()
    assert len({exit_one, exit_two, timeout}) == 3


def test_a_passing_check_has_no_failure_signature() -> None:
    assert passed(MAKE_TEST).failure_signature() is None


def test_a_command_that_cannot_start_is_signed_by_its_error() -> None:
    def cannot_start(error: str) -> CheckResult:
        return CheckResult(command=MAKE_TEST, exit_code=None, seconds=0, start_error=error)

    one, same, other = (
        cannot_start("[Errno 2] No such file or directory: 'make'"),
        cannot_start("[Errno 2] No such file or directory: 'make'"),
        cannot_start("[Errno 13] Permission denied: 'make'"),
    )
    assert one.failure_signature() == same.failure_signature()
    assert one.failure_signature() != other.failure_signature()


def test_a_partial_tail_leaves_out_its_cut_first_line() -> None:
    # The byte bound fell at different places of the same first line.
    one = CheckResult(
        command=MAKE_TEST,
        exit_code=1,
        seconds=1,
        output_tail="ng line\nFAILED test_eof",
        output_bytes=1_000_000,
    )
    other = CheckResult(
        command=MAKE_TEST,
        exit_code=1,
        seconds=1,
        output_tail="ry long line\nFAILED test_eof",
        output_bytes=1_000_007,
    )
    assert one.failure_signature() == other.failure_signature()


def test_a_whole_tail_keeps_its_first_line() -> None:
    one = failed(MAKE_TEST, "error: a\nFAILED")
    other = failed(MAKE_TEST, "error: b\nFAILED")
    assert one.failure_signature() != other.failure_signature()


def test_a_signature_digest_is_short_and_stable() -> None:
    signature = failed(MAKE_TEST, "boom").failure_signature()
    assert signature is not None
    assert signature.digest == failed(MAKE_TEST, "boom").failure_signature().digest  # type: ignore[union-attr]
    assert len(signature.digest) == 16
    assert signature.digest != failed(RUFF, "boom").failure_signature().digest  # type: ignore[union-attr]


# Each kind of volatile bit, drawn twice with independent values.
_VOLATILE_KINDS = (
    lambda n: f"{n / 100:.2f}s",
    lambda n: f"{n} ms",
    lambda n: f"pid {n}",
    lambda n: f"0x{n:x}",
    lambda n: f"/tmp/pytest-{n}/test0",
    lambda n: f"2026-12-01T{n % 24:02}:{n % 60:02}:{n % 59:02}Z",
)
_VOLATILE_PAIRS = st.builds(
    lambda kind, a, b: (kind(a), kind(b)),
    st.sampled_from(_VOLATILE_KINDS),
    st.integers(0, 2**40),
    st.integers(0, 2**40),
)
_VOLATILE_BITS = _VOLATILE_PAIRS.map(lambda pair: pair[0])
_WORDS = st.lists(
    st.sampled_from(["FAILED", "test_eof", "AssertionError", "expected", "got", "=="]),
    min_size=1,
    max_size=6,
).map(" ".join)


@given(lines=st.lists(st.tuples(_WORDS, _VOLATILE_PAIRS), min_size=1, max_size=8))
def test_signatures_ignore_volatile_bits(lines: list[tuple[str, tuple[str, str]]]) -> None:
    one = "\n".join(f"{words} {bits[0]}" for words, bits in lines)
    other = "\n".join(f"{words} {bits[1]}" for words, bits in lines)
    assert (
        failed(MAKE_TEST, one).failure_signature() == failed(MAKE_TEST, other).failure_signature()
    )


@given(
    words=st.lists(_WORDS, min_size=1, max_size=5),
    extra=st.sampled_from(["test_parse", "KeyError", "3 failed", "line 7"]),
    bit=_VOLATILE_BITS,
)
def test_signatures_differ_for_different_failures(words: list[str], extra: str, bit: str) -> None:
    base = "\n".join(f"{w} {bit}" for w in words)
    assert (
        failed(MAKE_TEST, base).failure_signature()
        != failed(MAKE_TEST, f"{base}\n{extra}").failure_signature()
    )
    assert failed(MAKE_TEST, base).failure_signature() != failed(RUFF, base).failure_signature()


def test_a_round_is_its_first_failure_or_all_passed() -> None:
    assert verification_of([passed(MAKE_TEST), passed(RUFF)]) == ChecksPassed()
    assert verification_of([]) == ChecksPassed()
    assert (
        verification_of([passed(MAKE_TEST), failed(RUFF, "E501")])
        == failed(RUFF, "E501").failure_signature()
    )


# Accepting a Done ----------------------------------------------------------------------


def test_without_checks_or_review_a_done_stands() -> None:
    assert judge_done((), (), review_asked=False) == Accepted(())


def test_checks_run_in_order_and_the_first_failure_rejects() -> None:
    checks = (MAKE_TEST, RUFF)
    assert judge_done(checks, (), review_asked=False) == RunCheck(MAKE_TEST)
    assert judge_done(checks, (passed(MAKE_TEST),), review_asked=False) == RunCheck(RUFF)
    failure = failed(MAKE_TEST)
    assert judge_done(checks, (failure,), review_asked=False) == CheckFailed(failure)
    both = (passed(MAKE_TEST), passed(RUFF))
    assert judge_done(checks, both, review_asked=False) == Accepted(both)


def test_the_review_runs_only_after_every_check_passed() -> None:
    checks = (MAKE_TEST,)
    assert judge_done(checks, (), review_asked=True) == RunCheck(MAKE_TEST)
    assert judge_done(checks, (passed(MAKE_TEST),), review_asked=True) == AskReview()


def test_only_the_reviewers_done_agrees() -> None:
    results = (passed(MAKE_TEST),)
    agreed = judge_done((MAKE_TEST,), results, review_asked=True, review=Done("all good"))
    assert agreed == Accepted(results)
    unfinished = judge_done(
        (MAKE_TEST,),
        results,
        review_asked=True,
        review=Continue(remaining_work=("error handling in parse()",), summary="mostly there"),
    )
    assert unfinished == ReviewDisagreed(
        remaining_work=("error handling in parse()",), summary="mostly there"
    )
    blocked = judge_done(
        (MAKE_TEST,), results, review_asked=True, review=Blocked("cannot read the plan")
    )
    assert blocked == ReviewDisagreed(blocked_on="cannot read the plan")


def test_results_that_do_not_follow_the_checks_are_a_mistake() -> None:
    with pytest.raises(ValueError, match="in order"):
        judge_done((MAKE_TEST, RUFF), (passed(RUFF),), review_asked=False)
    with pytest.raises(ValueError, match="in order"):
        judge_done((MAKE_TEST,), (passed(MAKE_TEST), passed(MAKE_TEST)), review_asked=False)


_CHECKS = st.lists(
    st.sampled_from(["make test", "ruff check .", "mypy", "test -f step-3.txt", "npm test"]),
    unique=True,
    max_size=4,
).map(parse_checks)
_REVIEWS: st.SearchStrategy[CompletionVerdict] = st.one_of(
    st.builds(Done, st.text(max_size=10)),
    st.builds(Continue, st.lists(st.text(max_size=10), max_size=2).map(tuple)),
    st.builds(Blocked, st.text(min_size=1, max_size=10)),
)


@given(
    checks=_CHECKS,
    exit_codes=st.lists(st.sampled_from([0, 0, 0, 1, 2, None]), min_size=4, max_size=4),
    review_asked=st.booleans(),
    review=_REVIEWS,
)
def test_a_done_is_accepted_only_when_every_check_passed_and_the_review_agreed(
    checks: tuple[CheckCommand, ...],
    exit_codes: list[int | None],
    review_asked: bool,
    review: CompletionVerdict,
) -> None:
    """Drive the judgement as a runner does, to its end."""

    def run(check: CheckCommand, code: int | None) -> CheckResult:
        if code is None:
            return CheckResult(command=check, exit_code=None, seconds=9, timed_out=True)
        return CheckResult(command=check, exit_code=code, seconds=1)

    planned = {check: run(check, code) for check, code in zip(checks, exit_codes, strict=False)}
    results: tuple[CheckResult, ...] = ()
    reviewed: CompletionVerdict | None = None
    reviews = 0
    judgement: DoneJudgement = judge_done(checks, results, review_asked=review_asked)
    while isinstance(judgement, RunCheck | AskReview):
        if isinstance(judgement, RunCheck):
            results = (*results, planned[judgement.check])
        else:
            reviews += 1
            reviewed = review
        judgement = judge_done(checks, results, review_asked=review_asked, review=reviewed)

    every_check_passed = all(result.passed for result in planned.values())
    review_agreed = not review_asked or isinstance(review, Done)
    assert isinstance(judgement, Accepted) == (every_check_passed and review_agreed)
    # The review is asked at most once, and never before the checks all passed.
    assert reviews == (1 if review_asked and every_check_passed else 0)
    if isinstance(judgement, CheckFailed):
        assert not judgement.result.passed
        assert results[-1] == judgement.result  # nothing ran after the failure
