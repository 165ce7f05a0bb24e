"""The signals a person sends a driver: Ctrl-C, a closed terminal (SIGHUP), a kill
(SIGTERM), each an interrupt the run's exit code tells apart."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator

import anyio

from claudeloop.domain.loop import Interrupt

SIGNALS = {
    signal.SIGINT: Interrupt.CTRL_C,
    signal.SIGHUP: Interrupt.HANGUP,
    signal.SIGTERM: Interrupt.TERMINATE,
}


class SignalInterrupts:
    """The `Interrupts` port from the process's signals, received while iterated."""

    async def each(self) -> AsyncIterator[Interrupt]:
        with anyio.open_signal_receiver(*SIGNALS) as signals:
            async for number in signals:
                yield SIGNALS[signal.Signals(number)]
