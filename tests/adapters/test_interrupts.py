"""The signals a run hears as interrupts, sent to this very process."""

from __future__ import annotations

import os
import signal

import anyio
import pytest

from claudeloop.adapters.interrupts import SignalInterrupts
from claudeloop.domain.loop import Interrupt


def heard(interrupts: SignalInterrupts, sent: list[signal.Signals], count: int) -> list[Interrupt]:
    """The first `count` interrupts heard while `sent` reached this process, in order."""
    got: list[Interrupt] = []

    async def listen() -> None:
        async with anyio.create_task_group() as group:

            async def each() -> None:
                async for interrupt in interrupts.each():
                    got.append(interrupt)
                    if len(got) == count:
                        group.cancel_scope.cancel()

            group.start_soon(each)
            await anyio.sleep(0)  # the receiver is open before the first signal
            for number in sent:
                os.kill(os.getpid(), number)
                await anyio.wait_all_tasks_blocked()

    anyio.run(listen)
    return got


@pytest.mark.parametrize(
    ("terminate_once", "expected"),
    [
        # A run alone: each signal is an interrupt, the second one ends the run at once.
        (False, [Interrupt.TERMINATE, Interrupt.TERMINATE, Interrupt.CTRL_C]),
        # A worker's run: its worker's SIGTERM and the one sent to the worker's group
        # are one stop; the worker's second stop, a SIGINT, is the second interrupt.
        (True, [Interrupt.TERMINATE, Interrupt.CTRL_C, Interrupt.CTRL_C]),
    ],
    ids=["alone", "a-workers-run"],
)
def test_a_workers_run_takes_a_repeated_sigterm_for_the_same_stop(
    terminate_once: bool, expected: list[Interrupt]
) -> None:
    sent = [signal.SIGTERM, signal.SIGTERM, signal.SIGINT, signal.SIGINT]
    got = heard(SignalInterrupts(terminate_once=terminate_once), sent, len(expected))
    assert got == expected
