"""The stagnation brake: a loop whose turns show no evidence of progress stops."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import assert_never

from claudeloop.domain.plan import normalise
from claudeloop.domain.verification import FailureSignature, Verification

DEFAULT_STALL_TURNS = 3
DEFAULT_SAME_FAILURE = 3


@dataclass(frozen=True, slots=True)
class StagnationSettings:
    """`stall_turns` turns in a row without evidence, or the same verification failure
    `same_failure` rounds in a row, stop the run; 0 turns either brake off."""

    stall_turns: int = DEFAULT_STALL_TURNS
    same_failure: int = DEFAULT_SAME_FAILURE

    def __post_init__(self) -> None:
        for name, value in (("stall_turns", self.stall_turns), ("same_failure", self.same_failure)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"{name} must be a whole number of turns, 0 for off, not {value!r}"
                )


@dataclass(frozen=True, slots=True)
class Answered:
    """What a counted turn left behind, as the runner observed it after the turn."""

    checked_items: frozenset[str] = frozenset()  # keys of the plan's checked items
    tree: str | None = None  # a fingerprint of the working tree; None when unknown
    remaining_work: tuple[str, ...] = ()
    verification: Verification | None = None  # None when no checks ran this turn


@dataclass(frozen=True, slots=True)
class Refused:
    """A turn a limit refused: no turn for the brake."""


TurnSeen = Answered | Refused


@dataclass(frozen=True, slots=True)
class Stagnation:
    """The brake's count and what it compares the next turn with.

    `start` records the state before the first turn, so the first turn is compared with
    where the run began. A verification result is compared with the last round that ran,
    however many turns ago.
    """

    turns_without_progress: int = 0
    same_failure_rounds: int = 0
    checked_items: frozenset[str] = frozenset()
    tree: str | None = None
    # The fingerprints of the last remaining work's entries (`_work_keys`).
    remaining_work: frozenset[str] = frozenset()
    verification: Verification | None = None

    def __post_init__(self) -> None:
        if self.turns_without_progress < 0 or self.same_failure_rounds < 0:
            raise ValueError("a stagnation count is never negative")
        if self.same_failure_rounds and not isinstance(self.verification, FailureSignature):
            raise ValueError("a repeated failure needs the failure it repeats")

    @classmethod
    def start(
        cls,
        *,
        checked_items: frozenset[str] = frozenset(),
        tree: str | None = None,
        remaining_work: tuple[str, ...] = (),
    ) -> Stagnation:
        return cls(
            checked_items=checked_items, tree=tree, remaining_work=_work_keys(remaining_work)
        )

    def evidence(self, turn: Answered) -> bool:
        """Whether the turn shows progress: plan items newly checked, a changed working
        tree, changed remaining work (ignoring order and wording details), or a
        verification result other than the last round's."""
        newly_checked = bool(turn.checked_items - self.checked_items)
        tree_changed = turn.tree is not None and self.tree is not None and turn.tree != self.tree
        work_changed = _work_keys(turn.remaining_work) != self.remaining_work
        verification_changed = (
            turn.verification is not None
            and self.verification is not None
            and turn.verification != self.verification
        )
        return newly_checked or tree_changed or work_changed or verification_changed

    def observe(self, turn: TurnSeen) -> Stagnation:
        """The count after one more turn."""
        match turn:
            case Refused():
                return self
            case Answered():
                progressed = self.evidence(turn)
                return replace(
                    self,
                    turns_without_progress=0 if progressed else self.turns_without_progress + 1,
                    same_failure_rounds=self._same_failure_rounds_after(turn.verification),
                    checked_items=turn.checked_items,
                    tree=turn.tree if turn.tree is not None else self.tree,
                    remaining_work=_work_keys(turn.remaining_work),
                    verification=(
                        turn.verification if turn.verification is not None else self.verification
                    ),
                )
            case _:
                assert_never(turn)

    def rebased(self, tree: str | None) -> Stagnation:
        """The count once the turn's changes were committed (a commit per turn): the
        commit that changed files was the turn's evidence already (its tree changed), and
        the next turn is compared with the tree as committed, whose fingerprint differs
        though nothing changed since. None: the tree cannot be read, the last one kept."""
        return replace(self, tree=tree if tree is not None else self.tree)

    def _same_failure_rounds_after(self, verification: Verification | None) -> int:
        # A turn that ran no checks neither counts nor breaks the row of rounds.
        if verification is None:
            return self.same_failure_rounds
        if not isinstance(verification, FailureSignature):
            return 0
        if verification == self.verification:
            return self.same_failure_rounds + 1
        return 1

    def brake(self, settings: StagnationSettings) -> Brake:
        """Whether the run stops now; a repeated failure is named before a plain stall."""
        if settings.same_failure and self.same_failure_rounds >= settings.same_failure:
            assert isinstance(self.verification, FailureSignature)  # see __post_init__
            return SameFailure(self.verification, self.same_failure_rounds)
        if settings.stall_turns and self.turns_without_progress >= settings.stall_turns:
            return Stalled(self.turns_without_progress)
        return NoBrake()


@dataclass(frozen=True, slots=True)
class NoBrake:
    pass


@dataclass(frozen=True, slots=True)
class Stalled:
    """No evidence of progress in `turns` turns in a row."""

    turns: int


@dataclass(frozen=True, slots=True)
class SameFailure:
    """The same verification failure `rounds` rounds in a row."""

    failure: FailureSignature
    rounds: int


Brake = NoBrake | Stalled | SameFailure


def _work_keys(remaining_work: tuple[str, ...]) -> frozenset[str]:
    """A fingerprint of each entry's comparable form: what the brake compares, never the
    model's words (which may hold a secret it copied, and state.json keeps this)."""
    return frozenset(
        hashlib.sha256(key.encode()).hexdigest()[:16]
        for key in (normalise(entry) for entry in remaining_work)
        if key
    )
