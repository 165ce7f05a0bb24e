"""The signals a person sends a driver: Ctrl-C, a closed terminal (SIGHUP), a kill
(SIGTERM), all one interrupt."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator

import anyio


class SignalInterrupts:
    """The `Interrupts` port from the process's signals, received while iterated."""

    async def each(self) -> AsyncIterator[object]:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
            async for number in signals:
                yield number
