"""What a turn costs in money: nothing on a backend whose costs are not money."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from claudeloop.application.ports import Gateway, ProbeOutcome, TurnOutcome


class UnbilledGateway:
    """A gateway whose turns and probes cost nothing: the CLI prices a local model with
    Anthropic's price table, which says nothing true about the user's own machine."""

    def __init__(self, inner: Gateway) -> None:
        self._inner = inner

    async def run_turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        outcome = await self._inner.run_turn(
            prompt, session_id=session_id, interrupted_at=interrupted_at, on_session=on_session
        )
        # Nothing of it is money, guessed or not: no guessed price to warn about either.
        return replace(
            outcome,
            cost_usd=0.0,
            estimated_cost_usd=0.0,
            guessed_cost_usd=0.0,
            guessed_models=(),
            billed=False,
        )

    async def probe(self) -> ProbeOutcome:
        probe = await self._inner.probe()
        return replace(probe, cost_usd=0.0, guessed_cost_usd=0.0, guessed_models=())

    async def get_ready(self, session_id: str | None) -> None:
        await self._inner.get_ready(session_id)

    async def stand_down(self) -> None:
        await self._inner.stand_down()

    async def close(self) -> tuple[str, ...]:
        return await self._inner.close()
