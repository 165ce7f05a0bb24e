"""The CLI's transport, watched for the result it writes when it refuses to start, and
ended at once when the gateway cannot wait for it to exit.

Claude Code (2.1.332) tells why it refused to start in `startup_failure_reason`, on an
`error_during_execution` result it writes before exiting 1, where the host sets
CLAUDE_CODE_STARTUP_FAILURE_RESULTS. The Python SDK's parser drops that field, and a
CLI that exits during `connect` leaves only "Command failed with exit code 1": so the
raw messages are read here, on their way to the SDK, which sees them unchanged.

The SDK ends a process it closes gently (its input closed, five seconds, SIGTERM, five
more, SIGKILL). A process the watchdog found silent, or one that wrote its result and
lingers, is ended here instead, on the gateway's own clock (`end`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
from claude_agent_sdk import ClaudeAgentOptions, Transport

# The variable that makes the CLI write that result (it is otherwise on stderr alone).
STARTUP_RESULTS = "CLAUDE_CODE_STARTUP_FAILURE_RESULTS"


class StartupWatch(Transport):
    """The SDK's own subprocess transport, noting a refusal to start as it passes."""

    def __init__(self, options: ClaudeAgentOptions) -> None:
        # The SDK's transport, as ClaudeSDKClient would build it for a streamed session.
        from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

        self._inner = SubprocessCLITransport(prompt=_nothing(), options=options)
        # (startup_failure_reason, the CLI's message) once the CLI said it.
        self.refusal: tuple[str, str] | None = None

    async def connect(self) -> None:
        await self._inner.connect()

    async def write(self, data: str) -> None:
        await self._inner.write(data)

    def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        return self._watched()

    async def _watched(self) -> AsyncIterator[dict[str, Any]]:
        async for message in self._inner.read_messages():
            self.refusal = self.refusal or refusal_in(message)
            yield message

    async def close(self) -> None:
        await self._inner.close()

    def is_ready(self) -> bool:
        return self._inner.is_ready()

    async def end_input(self) -> None:
        await self._inner.end_input()

    def exited(self) -> bool:
        """Whether its CLI is known to have exited (as far as the event loop has heard):
        one started ahead that died while it waited for its prompt."""
        process = getattr(self._inner, "_process", None)
        return process is not None and process.returncode is not None

    async def end(self, *, patience: float, grace: float) -> bool:
        """Ends the CLI unless it exits within `patience` seconds: SIGTERM, then SIGKILL
        after `grace` more (a process that stopped talking may not listen either).
        Whether it had to be ended."""
        # The SDK's own process handle: the transport has no public one.
        process = getattr(self._inner, "_process", None)
        if process is None or process.returncode is not None:
            return False
        with anyio.move_on_after(patience):
            await process.wait()
            return False
        for stop in (process.terminate, process.kill):
            with contextlib.suppress(ProcessLookupError):
                stop()
            with anyio.move_on_after(grace):
                await process.wait()
                break
        return True


def refusal_in(message: dict[str, Any]) -> tuple[str, str] | None:
    """The reason and message of a start-up refusal, if `message` is one."""
    reason = message.get("startup_failure_reason")
    if message.get("type") != "result" or not isinstance(reason, str) or not reason:
        return None
    errors = message.get("errors")
    said = "; ".join(e for e in errors if isinstance(e, str)) if isinstance(errors, list) else ""
    return reason, said


async def _nothing() -> AsyncIterator[dict[str, Any]]:
    # A streamed session's prompt: nothing up front, every prompt written later.
    return
    yield {}  # pragma: no cover - makes this an async generator
