"""Every request the server saw, and the counts a test asserts on.

Tests ask questions like "how many probes did the wait cost" and "when did the first
request after the lift arrive"; the ledger answers them without the test parsing logs.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any, Literal

from claudeloop.rehearsal.conversation import Credentials
from claudeloop.rehearsal.gates import Timeline

RecordKind = Literal["turn", "probe", "count_tokens", "invalid"]


@dataclass(frozen=True, slots=True)
class RequestRecord:
    at: str
    monotonic: float
    elapsed: float
    path: str
    kind: RecordKind
    turn: int | None
    step: int | None
    model: str | None
    stream: bool
    credentials: Credentials
    gate: str | None
    gate_index: int | None
    # The status answered (0: none, a `no_first_byte` gate's request).
    status: int
    # True when the played model's answer was delivered (a normal or warned 200).
    answered: bool
    verdict: bool
    request_id: str
    # The directory of the CLI that sent a turn, which tells concurrent loops apart.
    cwd: str | None = None
    # The turn's last prompt, its end (rehearsal.conversation.last_prompt).
    prompt: str | None = None


class Ledger:
    def __init__(self, timeline: Timeline) -> None:
        self._timeline = timeline
        self._records: list[RequestRecord] = []
        self._lifted_at: float | None = None
        self._first_after_lift: float | None = None
        self._lock = threading.Lock()

    def now(self) -> float:
        return self._timeline.now()

    def record(
        self,
        *,
        received: float,
        path: str,
        kind: RecordKind,
        credentials: Credentials,
        status: int,
        request_id: str,
        turn: int | None = None,
        step: int | None = None,
        model: str | None = None,
        stream: bool = False,
        gate: str | None = None,
        gate_index: int | None = None,
        answered: bool = False,
        verdict: bool = False,
        cwd: str | None = None,
        prompt: str | None = None,
    ) -> None:
        """Record a request by the instant it arrived (not when its answer ended)."""
        record = RequestRecord(
            at=self._timeline.iso(received),
            monotonic=received,
            elapsed=round(received - self._timeline.started, 6),
            path=path,
            kind=kind,
            turn=turn,
            step=step,
            model=model,
            stream=stream,
            credentials=credentials,
            gate=gate,
            gate_index=gate_index,
            status=status,
            answered=answered,
            verdict=verdict,
            request_id=request_id,
            cwd=cwd,
            prompt=prompt,
        )
        with self._lock:
            self._records.append(record)
            if (
                self._lifted_at is not None
                and self._first_after_lift is None
                and received >= self._lifted_at
            ):
                self._first_after_lift = received

    def lifted(self, at: float) -> None:
        with self._lock:
            self._lifted_at = at
            self._first_after_lift = None

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            records = list(self._records)
            lifted_at = self._lifted_at
            first_after = self._first_after_lift
        turns = [r for r in records if r.kind == "turn"]
        return {
            "turns": sum(1 for r in turns if r.answered),
            "turn_requests": len(turns),
            "verdicts": sum(1 for r in turns if r.answered and r.verdict),
            "probes": sum(1 for r in records if r.kind == "probe"),
            "count_tokens": sum(1 for r in records if r.kind == "count_tokens"),
            "requests": [asdict(r) for r in records],
            "lifted_at": None if lifted_at is None else self._timeline.iso(lifted_at),
            "first_request_after_lift": (
                None if first_after is None else self._timeline.iso(first_after)
            ),
        }
