"""Done means verified: the checks a Done must pass, their results, and its acceptance."""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import assert_never

from claudeloop.domain.completion import Blocked, CompletionVerdict, Continue, Done

# How long one verification command may run, by default: ten minutes.
DEFAULT_VERIFY_TIMEOUT_SECONDS = 600.0


@dataclass(frozen=True, slots=True)
class CheckCommand:
    """A verification command: the text as the user wrote it and the argv it runs as."""

    text: str
    argv: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.argv:
            raise ValueError(f"verification command {self.text!r} is empty")

    @classmethod
    def parse(cls, text: str) -> CheckCommand:
        """Split like a POSIX shell does, without running one (no pipes, no `&&`)."""
        try:
            argv = tuple(shlex.split(text))
        except ValueError as error:
            raise ValueError(
                f"verification command {text!r} cannot be split into words ({error}); "
                "quote it as a shell would"
            ) from None
        if not argv:
            raise ValueError(
                f"verification command {text!r} is empty; give a command such as 'make test'"
            )
        return cls(text=text, argv=argv)


def parse_checks(texts: Iterable[str]) -> tuple[CheckCommand, ...]:
    """The configured checks, in the order they run; the first bad one raises ValueError."""
    return tuple(CheckCommand.parse(text) for text in texts)


def how_it_ended(*, exit_code: int | None, timed_out: bool, start_error: str | None) -> str:
    """How a check ended, in the words every view of it uses (the live line, `status`,
    the summary): passed, or failed and how."""
    if exit_code == 0:
        return "passed"
    if timed_out:
        return "failed: timed out"
    if exit_code is None:
        return f"failed: could not start ({start_error})"
    return f"failed: exit {exit_code}"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """How one run of a check ended.

    Exactly one ending holds: an exit code, a timeout (the whole process group was killed),
    or a command that could not start (`start_error`). `output_tail` is the redacted end of
    the output, bounded; `output_bytes` is the size of the whole output, which is in
    `output_path`.
    """

    command: CheckCommand
    exit_code: int | None
    seconds: float
    output_tail: str = ""
    output_bytes: int = 0
    output_path: PurePath | None = None
    timed_out: bool = False
    start_error: str | None = None

    def __post_init__(self) -> None:
        endings = (self.exit_code is not None) + self.timed_out + (self.start_error is not None)
        if endings != 1:
            raise ValueError("a check ends in exactly one way: an exit code, a timeout or no start")

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    @property
    def ended(self) -> str:
        """How it ended, in words (`how_it_ended`)."""
        return how_it_ended(
            exit_code=self.exit_code, timed_out=self.timed_out, start_error=self.start_error
        )

    @property
    def tail_is_partial(self) -> bool:
        """Whether the tail is only the end of a longer output."""
        return self.output_bytes > len(self.output_tail.encode())

    def failure_signature(self) -> FailureSignature | None:
        """What identifies this failure across turns; None when the check passed."""
        if self.passed:
            return None
        text = self.start_error if self.start_error is not None else self.output_tail
        lines = text.splitlines()
        if self.start_error is None and self.tail_is_partial and lines:
            # The tail starts wherever the byte bound fell, likely mid-line.
            lines = lines[1:]
        return FailureSignature(
            command=self.command.text,
            exit_code=self.exit_code,
            timed_out=self.timed_out,
            output=normalise_output("\n".join(lines)),
        )


@dataclass(frozen=True, slots=True)
class FailureSignature:
    """The same command failing the same way: equal signatures are the same failure."""

    command: str
    exit_code: int | None
    timed_out: bool
    output: str  # normalised, see `normalise_output`

    @property
    def digest(self) -> str:
        """A short stable name for the signature, for events and the state file."""
        whole = f"{self.command}\0{self.exit_code}\0{self.timed_out}\0{self.output}"
        return hashlib.sha256(whole.encode()).hexdigest()[:16]


# What differs between two runs of the same failure, replaced by a placeholder, in order:
# temporary paths (pytest's tmp_path, mkdtemp), timestamps and clock times, durations
# ("0.42s", "12 ms", "1.5 seconds"), process ids ("pid 4242", "pid=4242"), hex ids
# (0x addresses, uuids, hashes of 8 or more hex digits with a letter and a digit).
# Counts ("3 failed") and ordinary numbers are kept: a different count is a different
# failure.
_VOLATILE = (
    (re.compile(r"(?:/private)?/(?:tmp|var/tmp|var/folders)/[^\s'\":,)\]]*"), "<tmp>"),
    (
        re.compile(
            r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
            r"(?:Z|[+-]\d{2}:?\d{2})?)?"
        ),
        "<time>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
    (
        re.compile(
            r"\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|secs?|seconds?|m|mins?|minutes?|h)\b",
            re.IGNORECASE,
        ),
        "<duration>",
    ),
    (re.compile(r"\bpid\b\W{0,3}\d+", re.IGNORECASE), "pid <pid>"),
    (re.compile(r"\b0x[0-9a-f]+\b", re.IGNORECASE), "<hex>"),
    (
        re.compile(
            r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE
        ),
        "<hex>",
    ),
    (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}\b", re.IGNORECASE), "<hex>"),
)
_SIGNATURE_LINES = 40


def normalise_output(text: str) -> str:
    """The last lines of an output with its volatile parts replaced (see `_VOLATILE`),
    each stripped, blank lines dropped."""
    for pattern, placeholder in _VOLATILE:
        text = pattern.sub(placeholder, text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-_SIGNATURE_LINES:])


@dataclass(frozen=True, slots=True)
class ChecksPassed:
    """A verification round in which every check passed."""


Verification = ChecksPassed | FailureSignature


def verification_of(results: Iterable[CheckResult]) -> Verification:
    """A round's result, for comparing rounds: its first failure, or that all passed."""
    for result in results:
        signature = result.failure_signature()
        if signature is not None:
            return signature
    return ChecksPassed()


# What to do with a Done, step by step ------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunCheck:
    """Run this check next."""

    check: CheckCommand


@dataclass(frozen=True, slots=True)
class AskReview:
    """Every check passed; the independent review decides now."""


@dataclass(frozen=True, slots=True)
class Accepted:
    """The Done stands: every check passed and, if one was asked for, the review agreed."""

    results: tuple[CheckResult, ...] = ()


@dataclass(frozen=True, slots=True)
class CheckFailed:
    """The Done is rejected: this check failed (the checks after it were not run)."""

    result: CheckResult


@dataclass(frozen=True, slots=True)
class ReviewDisagreed:
    """The Done is rejected: the reviewer found it unfinished or blocked."""

    remaining_work: tuple[str, ...] = ()
    blocked_on: str | None = None
    summary: str = ""


Rejected = CheckFailed | ReviewDisagreed
DoneJudgement = RunCheck | AskReview | Accepted | Rejected


def judge_done(
    checks: tuple[CheckCommand, ...],
    results: tuple[CheckResult, ...],
    *,
    review_asked: bool,
    review: CompletionVerdict | None = None,
) -> DoneJudgement:
    """The next step with a turn's Done, given the checks run so far and the review's verdict.

    Checks run in their configured order and the first failure rejects the Done; the review
    runs only after every check passed, and only its Done agrees (`Continue` and `Blocked`
    are disagreement). Without checks or a review, a Done is accepted as it is.
    """
    if len(results) > len(checks) or any(
        result.command != check for check, result in zip(checks, results, strict=False)
    ):
        raise ValueError("check results must follow the configured checks, in order")
    for result in results:
        if not result.passed:
            return CheckFailed(result)
    if len(results) < len(checks):
        return RunCheck(checks[len(results)])
    if not review_asked:
        return Accepted(results)
    match review:
        case None:
            return AskReview()
        case Done():
            return Accepted(results)
        case Continue(remaining_work=remaining, summary=summary):
            return ReviewDisagreed(remaining_work=remaining, summary=summary)
        case Blocked(reason=reason, summary=summary):
            return ReviewDisagreed(blocked_on=reason, summary=summary)
        case _:
            assert_never(review)
