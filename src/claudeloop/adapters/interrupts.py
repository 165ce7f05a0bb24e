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
    """The `Interrupts` port from the process's signals, received while iterated.

    `terminate_once`: a worker's run, where a SIGTERM after the first is the same stop.
    A stop sent to the worker's whole process group (`kill -TERM -PGID`, a service
    manager stopping everything in it) reaches the run, and the worker passes it on
    too: two, which would be a second interrupt and cut the run short. The worker asks
    for the end at once with a SIGINT (adapters/fleet/children.py, `Drivers.stop`)."""

    def __init__(self, *, terminate_once: bool = False) -> None:
        self._terminate_once = terminate_once

    async def each(self) -> AsyncIterator[Interrupt]:
        terminated = False
        with anyio.open_signal_receiver(*SIGNALS) as signals:
            async for number in signals:
                if number == signal.SIGTERM and self._terminate_once:
                    if terminated:
                        continue
                    terminated = True
                yield SIGNALS[signal.Signals(number)]
