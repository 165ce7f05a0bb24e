"""What a turn cut off (by a kill -9, a signal, the watchdog) is billed, and when.

A cut-off turn's cost never reaches claudeloop with a result. The turn sent again after
it bills what is knowable of it, in this order (the rule and why:
docs/architecture/decisions/0010-the-ledger-under-kill-9.md):

1. each answer the session's transcript keeps (transcript.py), at its usage;
2. each answer whose stream claudeloop heard to its end but the transcript lacks
   (responses.py), at the usage the stream reported;
3. estimated: each answer whose stream began and was cut, at the price of its
   neighbour in the session, never below what its stream showed; and each request the
   transcript says was sent and no stream answered, at its neighbour's price
   (domain.budget.in_flight_estimate); a prompt handed to the CLI of which nothing at
   all was kept counts as one such request.

Priced at the rates the resent turn's result shows. A result that prices nothing (a
refusal's) leaves the cut-off turn owed to the next turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from claudeloop.adapters.claude_code.pricing import ModelSpend, TurnPrice, added, lost_price
from claudeloop.adapters.claude_code.reading import TurnReading
from claudeloop.adapters.claude_code.responses import ResponseLog, StreamedTurn
from claudeloop.adapters.claude_code.transcript import (
    CutOff,
    ServedRequest,
    cut_off_turn,
    served_since,
    session_written,
)
from claudeloop.domain.budget import in_flight_estimate

# A turn no crash cut off.
NOTHING_LOST = CutOff()


def with_streamed(lost: CutOff, streamed: StreamedTurn) -> CutOff:
    """`lost` (the transcript's account) with what the stream delivered that the
    transcript lacks: answers heard to their end are served; answers cut mid-stream are
    partial; each answers one of the requests the transcript counted in flight."""
    kept = {request.message_id for request in lost.served if request.message_id}
    new = [answer for answer in streamed.responses if answer.message_id not in kept]
    as_served = [
        ServedRequest(answer.message_id, answer.model, answer.usage, answer.message_id)
        for answer in new
    ]
    served = tuple(s for s, answer in zip(as_served, new, strict=True) if answer.complete)
    partial = tuple(s for s, answer in zip(as_served, new, strict=True) if not answer.complete)
    in_flight = max(lost.in_flight - len(served), len(partial))
    if streamed.prompted and not (lost.served or lost.in_flight or new):
        in_flight = 1  # the prompt went out, and nothing of it was kept: its request was
    return replace(lost, served=(*lost.served, *served), in_flight=in_flight, partial=partial)


def unpriced(lost: CutOff, spends: tuple[ModelSpend, ...]) -> bool:
    """Whether a cut-off turn is owed and this result priced no request at all (a
    refusal's): then this turn itself was served nothing, so the next one can bill the
    cut-off turn without billing anything twice."""
    owed = bool(lost.served) or lost.in_flight > 0
    return owed and not any(spend.weighted_tokens > 0 for spend in spends)


def request_price(request: ServedRequest, spends: tuple[ModelSpend, ...]) -> float | None:
    """One answered request at the rate this result shows for its model (None: none)."""
    if not any(spend.model == request.model and spend.weighted_tokens > 0 for spend in spends):
        return None
    return lost_price([(request.model, request.usage)], spends).listed_usd


@dataclass(frozen=True, slots=True)
class Settled:
    """A turn's price with what a cut-off turn before it left to bill."""

    price: TurnPrice
    # The part of the price that is an estimate.
    estimated_usd: float
    # True when this turn could not bill it (it priced nothing): the next one does.
    owed: bool


class CutOffBilling:
    """Reads, keeps and bills what a cut-off turn left, for one gateway."""

    def __init__(
        self,
        *,
        config_directory: Callable[[], Path],
        responses: ResponseLog,
        note: Callable[[str], None],
    ) -> None:
        self._config_directory = config_directory
        self._responses = responses
        self._note = note
        # What a cut-off turn left to bill, as read before the first turn that tried to
        # bill it, and since when: kept until a turn bills it, because the transcript
        # read again after a refused try takes its answer for the cut-off request's.
        self._owed: tuple[CutOff, datetime | None] | None = None

    def owed(
        self, session_id: str | None, interrupted_at: datetime | None
    ) -> tuple[str | None, CutOff, datetime | None]:
        """The session to send on, and what a turn cut off that began at
        `interrupted_at` left to bill, and since when."""
        lost: CutOff = NOTHING_LOST
        since: datetime | None = None
        if interrupted_at is None:
            self._owed = None  # nothing of a cut-off turn is owed any more
        elif self._owed is not None:
            lost, since = self._owed
        elif session_id is not None and not session_written(self._config_directory(), session_id):
            # Killed between the CLI naming the session and writing it (a tenth of a
            # second): no CLI can resume it, and its first request, which goes out as the
            # session is named, was answered or in flight with nothing recorded. The turn
            # starts the session afresh and bills that request at an estimate.
            self._note(
                f"session {session_id} was never written; starting a new one, its first "
                "request billed at an estimate"
            )
            session_id = None
            lost, since = CutOff(in_flight=1), interrupted_at
        else:
            # Read before this turn is sent, so that only the cut-off turn's answers count.
            lost = self._served_before(session_id, interrupted_at)
            since = interrupted_at if session_id is not None else None
        if interrupted_at is not None:
            self._owed = (lost, since)
        return session_id, lost, since

    def settle(
        self, price: TurnPrice, reading: TurnReading, *, lost: CutOff, since: datetime | None
    ) -> Settled:
        """`price` with the cut-off turn's cost added, unless this result prices
        nothing (then it stays owed)."""
        owed = unpriced(lost, reading.spends)
        if owed:
            return Settled(price, 0.0, owed=True)
        self._owed = None
        if lost.served:
            served = ((request.model, request.usage) for request in lost.served)
            price = added(price, lost_price(served, reading.spends))
        estimated = self._estimate(lost, reading, since=since)
        return Settled(added(price, TurnPrice(listed_usd=estimated)), estimated, owed=False)

    def _served_before(self, session_id: str | None, interrupted_at: datetime) -> CutOff:
        """What the service answered of a turn a crash cut off, and what it was still
        answering (transcript.py, responses.py)."""
        if session_id is None:
            return CutOff()
        lost = cut_off_turn(self._config_directory(), session_id, interrupted_at)
        lost = with_streamed(lost, self._responses.since(session_id, interrupted_at))
        if lost.served:
            self._note(
                f"the turn cut off by a crash was served {len(lost.served)} request(s) "
                "before it; they are billed with this turn"
            )
        if lost.in_flight:
            self._note(
                f"{lost.in_flight} request(s) of the turn cut off by a crash were in flight, "
                "their answers never recorded; they are billed at an estimate"
            )
        return lost

    def _estimate(self, lost: CutOff, reading: TurnReading, *, since: datetime | None) -> float:
        """The requests in flight at the crash, priced like their neighbours (see
        domain.budget.in_flight_estimate) at the rates this result shows, an answer cut
        mid-stream never below what its stream showed."""
        if not lost.in_flight:
            return 0.0
        before = after = None
        session_id = reading.session_id
        if lost.last_answered is not None:
            before = request_price(lost.last_answered, reading.spends)
        elif session_id is not None and since is not None:
            # The session's first request was the one in flight: the next answered goes.
            known = {request.request_id for request in lost.served}
            now = served_since(self._config_directory(), session_id, since)
            later = [request for request in now if request.request_id not in known]
            after = request_price(later[0], reading.spends) if later else None
        estimate = in_flight_estimate(lost.in_flight, before=before, after=after)
        shown = sum(request_price(answer, reading.spends) or 0.0 for answer in lost.partial)
        return max(estimate, shown)
