"""A commit per answered turn, exact across crashes: which turn to commit now, told from
what the run's record and its branch say.

The runner commits a turn's changes after the record holding the turn's result is saved,
then saves the record again saying the turn is checkpointed. A kill can fall between any
two of those steps, so before it commits it reconciles: the record's last checkpointed
turn, the turn the branch's last commit of this run names (its `Claudeloop-Turn`
trailer), and the last answered turn. A turn is committed at most once, and a turn
answered but not yet committed is committed before any other turn is sent.
"""

from __future__ import annotations

from dataclasses import dataclass

from claudeloop.domain.text import first_line

# The trailers of a turn's commit: which run, which turn, what it cost, each check.
RUN_TRAILER = "Claudeloop-Run"
TURN_TRAILER = "Claudeloop-Turn"
COST_TRAILER = "Claudeloop-Cost"
CHECK_TRAILER = "Claudeloop-Check"


@dataclass(frozen=True, slots=True)
class Reconciled:
    """What to do now: `settled` is the last turn the record must say is checkpointed
    before anything is committed; `commit` the turn whose changes to commit (None:
    nothing to commit)."""

    settled: int
    commit: int | None

    def __post_init__(self) -> None:
        if self.settled < 0:
            raise ValueError("a turn number is never negative")
        if self.commit is not None and self.commit <= self.settled:
            raise ValueError("a turn already checkpointed is never committed again")


def reconcile(*, recorded: int, on_branch: int, answered: int) -> Reconciled:
    """`recorded`: the last turn the record says is checkpointed (committed, or found
    with nothing to commit); `on_branch`: the turn the branch's last commit of this run
    names (0: none); `answered`: the last answered turn (0: none yet).

    A commit on the branch the record does not know of was made just before a crash: it
    is adopted, not made again. A branch behind the record (turns that changed nothing
    leave no commit, a person reset it) takes nothing back from the record: what was
    checkpointed stays so. A turn answered after both is committed now."""
    if min(recorded, on_branch, answered) < 0:
        raise ValueError("a turn number is never negative")
    settled = max(recorded, on_branch)
    return Reconciled(settled=settled, commit=answered if answered > settled else None)


def trailers(
    run_id: str, turn: int, cost_usd: float, checks: tuple[tuple[str, bool], ...] = ()
) -> tuple[tuple[str, str], ...]:
    """A turn's commit trailers, in order: the run, the turn, its cost, then each check
    of the verification round that followed it (`passed` or `failed`, then the command)."""
    said = [
        (RUN_TRAILER, run_id),
        (TURN_TRAILER, str(turn)),
        (COST_TRAILER, f"${cost_usd:.4f}"),
    ]
    said += [(CHECK_TRAILER, f"{'passed' if ok else 'failed'} {command}") for command, ok in checks]
    return tuple(said)


def turn_of(trailer_value: str) -> int:
    """The turn a `Claudeloop-Turn` trailer names (0: not a turn number)."""
    value = trailer_value.strip()
    return int(value) if value.isdigit() else 0


def commit_message(summary: str, turn: int, said: tuple[tuple[str, str], ...]) -> str:
    """A turn's commit message: the verdict's summary (its first line the subject, the
    whole of it the body when longer), then the trailers."""
    subject = first_line(summary, longest=72, empty=f"claudeloop turn {turn}")
    body = summary.strip()
    lines = [subject]
    if body and body != subject:
        lines += ["", body]
    lines += ["", *(f"{key}: {' '.join(value.split())}" for key, value in said)]
    return "\n".join(lines) + "\n"
