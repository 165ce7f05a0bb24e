"""The ports the runner talks to the world through. Adapters implement them; tests fake them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from claudeloop.application.records import RunRecord
from claudeloop.domain.completion import StructuredVerdict
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.verification import CheckCommand, CheckResult


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """What one turn (one prompt answered by one result) brought back."""

    signals: TurnSignals
    structured: StructuredVerdict | None
    final_text: str
    cost_usd: float
    session_id: str | None
    usage: dict[str, Any] = field(default_factory=dict)
    # Tools the permission mode refused during the turn, so the user can be told how to
    # allow them.
    denied_tools: tuple[str, ...] = ()
    # What the turn cost at a price the CLI guessed (a model missing from its price
    # table, e.g. a local model's name): not money anyone was billed, so not in
    # `cost_usd` and never counted against --max-dollars.
    guessed_cost_usd: float = 0.0
    guessed_models: tuple[str, ...] = ()
    # False when the turn never reached the service (another loop had found its capacity
    # closed): it counts as no attempt.
    sent: bool = True
    # False for a backend that costs nothing (a local model): none of its cost is spend.
    billed: bool = True
    # A turn that ended in an error the classifier does not map to a capacity state
    # (e.g. the CLI itself crashed). The text says what happened.
    failure: str | None = None


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """What a throwaway probe learned about capacity."""

    signals: TurnSignals
    cost_usd: float = 0.0
    # As on TurnOutcome: a cost at a guessed price, never spend.
    guessed_cost_usd: float = 0.0
    guessed_models: tuple[str, ...] = ()


class Gateway(Protocol):
    """Claude Code, one turn at a time, on one session."""

    async def run_turn(self, prompt: str, *, session_id: str | None) -> TurnOutcome:
        """Send `prompt` on `session_id` (a new session when None) and wait for its result."""
        ...

    async def probe(self) -> ProbeOutcome:
        """A minimal request on the same backend and model; persists no session."""
        ...

    async def close(self) -> None: ...


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, aware, in UTC."""
        ...


class Sleeper(Protocol):
    async def sleep_until(
        self, instant: datetime, *, progress: Callable[[float], None] | None = None
    ) -> bool:
        """Wait until `instant`; return False when a control command woke it early.

        `progress` is called now and then (at least once a minute of waiting) with the
        seconds waited so far, so what a kill mid-wait loses is small."""
        ...


class EventSink(Protocol):
    def emit(self, event_type: str, **fields: Any) -> None:
        """Record that something happened, as it happens."""
        ...


class RunStore(Protocol):
    def save(self, record: RunRecord) -> None:
        """Persist the record so a crash at any moment can be resumed from it."""
        ...


class ControlInbox(Protocol):
    def pending(self) -> ControlCommand | None:
        """The command a person sent to this run, if any, without consuming it."""
        ...


class PlanFiles(Protocol):
    def read(self, path: Path) -> WorkPlan | None:
        """The plan in the file as it is now; None when it cannot be read."""
        ...

    def write(self, path: Path, plan: WorkPlan) -> None:
        """Write the plan's checkmarks back (only when the user asked for it)."""
        ...


class Checks(Protocol):
    """The verification commands a Done must pass, run one at a time."""

    async def run(self, check: CheckCommand, *, output: Path) -> CheckResult:
        """Run `check` in the run's cwd, its whole output into `output`; a command that
        times out or cannot start is a failed result, not an exception."""
        ...
