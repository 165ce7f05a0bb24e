"""Caps on what a run may spend, and the ledger of what it spent."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


def money(dollars: float) -> str:
    """Spend as every place says it: cents from a dollar up; below that cents when it
    is whole cents, else four decimals ($0.42, $0.0048, $0.0040: never three, so
    amounts side by side compare at a glance), so a night of cheap turns never reads
    as $0.00."""
    if dollars >= 1:
        return f"${dollars:,.2f}"
    if round(dollars, 4) == round(dollars, 2):
        return f"${dollars:.2f}"
    return f"${dollars:.4f}"


@dataclass(frozen=True, slots=True)
class Budget:
    """Caps; `None` means no cap. Zero or negative caps are refused: they mean nothing."""

    max_turns: int | None = None
    max_dollars: float | None = None
    max_attempts: int | None = None

    def __post_init__(self) -> None:
        for name, cap in (
            ("max_turns", self.max_turns),
            ("max_dollars", self.max_dollars),
            ("max_attempts", self.max_attempts),
        ):
            if cap is not None and (not math.isfinite(cap) or cap <= 0):
                raise ValueError(f"{name} must be a positive number or unset, not {cap!r}")


@dataclass(frozen=True, slots=True)
class ReachedCap:
    """A cap the ledger reached: its flag's name (`max-turns`), the cap, and what was
    spent against it (turns, dollars or attempts), at or above the cap."""

    flag: str
    cap: float
    spent: float

    @property
    def once_more(self) -> float:
        """The cap that allows as much again as was allowed: what was spent plus the cap."""
        return self.spent + self.cap


@dataclass(frozen=True, slots=True)
class BudgetLedger:
    """What a run has spent. Immutable: spending returns a new ledger.

    A turn is a prompt the model answered; an attempt is every prompt sent, including the
    ones a limit refused. Every cost counts, refused or not: the service bills it.
    `estimated_dollars` is the part of `dollars` that is an estimate (`in_flight_estimate`):
    counted against the cap like the rest, and said apart. `probe_dollars` is the part of
    `dollars` that probes cost (a probe is no turn, but the service bills it): what the
    turns cost is the rest, so the two always add up to the total said.
    """

    budget: Budget = Budget()
    turns: int = 0
    attempts: int = 0
    dollars: float = 0.0
    estimated_dollars: float = 0.0
    probe_dollars: float = 0.0

    def __post_init__(self) -> None:
        if self.turns < 0 or self.attempts < 0 or math.isnan(self.dollars) or self.dollars < 0:
            raise ValueError("a ledger never holds negative spend")
        if not 0 <= self.estimated_dollars <= self.dollars:
            raise ValueError("a ledger's estimated spend is a part of its spend")
        if not 0 <= self.probe_dollars <= self.dollars:
            raise ValueError("a ledger's spend on probes is a part of its spend")

    @property
    def turn_dollars(self) -> float:
        """What the prompts sent cost (answered or refused, reviews too): all but the
        probes. Never below zero, whatever the floats' rounding."""
        return max(self.dollars - self.probe_dollars, 0.0)

    def spend_turn(self, cost_usd: float = 0.0, estimated_usd: float = 0.0) -> BudgetLedger:
        """A prompt the model answered; `estimated_usd` of its cost an estimate."""
        return replace(
            self,
            turns=self.turns + 1,
            attempts=self.attempts + 1,
            dollars=self.dollars + _cost(cost_usd),
            estimated_dollars=self.estimated_dollars + _part(estimated_usd, of=cost_usd),
        )

    def spend_attempt(self, cost_usd: float = 0.0, estimated_usd: float = 0.0) -> BudgetLedger:
        """A prompt sent that a limit or an error refused."""
        return replace(
            self,
            attempts=self.attempts + 1,
            dollars=self.dollars + _cost(cost_usd),
            estimated_dollars=self.estimated_dollars + _part(estimated_usd, of=cost_usd),
        )

    def spend_probe(self, cost_usd: float = 0.0, estimated_usd: float = 0.0) -> BudgetLedger:
        """A probe: not a turn nor an attempt, but its cost is real."""
        return replace(
            self,
            dollars=self.dollars + _cost(cost_usd),
            probe_dollars=self.probe_dollars + _cost(cost_usd),
            estimated_dollars=self.estimated_dollars + _part(estimated_usd, of=cost_usd),
        )

    def is_ahead_of(self, other: BudgetLedger) -> bool:
        """Whether this ledger is later in a run's life than `other`: no count lower,
        one higher. No spend ever lowers a count, so of two records of one run, the one
        whose ledger is ahead is the newer (the caps are not counts)."""
        mine = (self.turns, self.attempts, self.dollars, self.probe_dollars)
        theirs = (other.turns, other.attempts, other.dollars, other.probe_dollars)
        return mine != theirs and all(a >= b for a, b in zip(mine, theirs, strict=True))

    @property
    def turns_exhausted(self) -> bool:
        cap = self.budget.max_turns
        return cap is not None and self.turns >= cap

    @property
    def dollars_exhausted(self) -> bool:
        cap = self.budget.max_dollars
        return cap is not None and self.dollars >= cap

    @property
    def attempts_exhausted(self) -> bool:
        cap = self.budget.max_attempts
        return cap is not None and self.attempts >= cap

    @property
    def any_exhausted(self) -> bool:
        return self.turns_exhausted | self.dollars_exhausted | self.attempts_exhausted

    def exhausted_caps(self) -> tuple[str, ...]:
        """The caps reached, in the words of their flags."""
        return tuple(reached.flag for reached in self.reached_caps())

    def reached_caps(self) -> tuple[ReachedCap, ...]:
        """Each cap reached, with its value and what was spent against it: a run at one
        can send no turn until it is raised above what was spent."""
        caps = (
            ("max-turns", self.budget.max_turns, self.turns),
            ("max-dollars", self.budget.max_dollars, self.dollars),
            ("max-attempts", self.budget.max_attempts, self.attempts),
        )
        return tuple(
            ReachedCap(flag, cap, spent)
            for flag, cap, spent in caps
            if cap is not None and spent >= cap
        )


def _cost(cost_usd: float) -> float:
    # Negative and NaN costs count as nothing; a NaN would poison the ledger for good
    # (NaN >= cap is never true, so the dollar cap could never trip).
    return cost_usd if cost_usd > 0 else 0.0


def _part(part_usd: float, *, of: float) -> float:
    # The estimated part of a cost is never more than the cost the ledger counts.
    return min(_cost(part_usd), _cost(of))


def in_flight_estimate(in_flight: int, *, before: float | None, after: float | None) -> float:
    """What `in_flight` requests cost that the service was serving when the driver died,
    whose answers nobody recorded: the service bills them all the same, and leaving them
    out lets --max-dollars under-count. Each is priced like its neighbour in the session:
    the last request answered `before` it (a conversation only grows, so the next request
    is at least about as big), else the first answered `after` it (it was the session's
    first); with neither, nothing to go by."""
    price = before if before is not None else after
    if in_flight <= 0 or price is None:
        return 0.0
    return in_flight * _cost(price)
