"""Running a rehearsal in-process: uvicorn on 127.0.0.1 in a background thread.

A thread (rather than a task in the caller's loop) lets sync tests and the sync CLI use
it, and keeps the server answering while the caller blocks on the Claude CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from types import TracebackType
from typing import Any, Self

import anyio.to_thread
import uvicorn

from claudeloop.rehearsal.app import RehearsalState, build_app
from claudeloop.rehearsal.scenario import Scenario

HOST = "127.0.0.1"
_STARTUP_TIMEOUT = 10.0
# How long a stopping server lets answers in flight finish.
_SHUTDOWN_GRACE = 1.0


class _PromptServer(uvicorn.Server):
    """uvicorn, but prompt to stop: woken at once by `exit_now` instead of noticing
    `should_exit` on its 0.1 s tick, and done as soon as its connections are, instead
    of after a fixed 0.1 s pause. A test suite starting a server per test stays fast.
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        # Tick 0 refreshes the Date header, so it stays right to the second.
        while not await self.on_tick(0):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=1.0)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        deadline = time.monotonic() + _SHUTDOWN_GRACE
        while self.server_state.connections and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        # Whatever still runs is a stalled answer nobody waits for any more.
        for task in list(self.server_state.tasks):
            task.cancel()
        for server in self.servers:
            await server.wait_closed()

    def exit_now(self) -> None:
        self.should_exit = True
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(wake.set)


class RehearsalServer:
    """`with RehearsalServer(scenario) as server:` serves at `server.base_url`.

    `port=0` takes a free port. Scenario durations are multiplied by `time_scale`.
    """

    def __init__(self, scenario: Scenario, *, time_scale: float = 1.0, port: int = 0) -> None:
        if time_scale <= 0:
            raise ValueError(f"time_scale must be > 0, got {time_scale}")
        self.scenario = scenario
        self.time_scale = time_scale
        self._requested_port = port
        self._rehearsal: RehearsalState | None = None
        self._server: _PromptServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the rehearsal server is not running")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def state(self) -> dict[str, Any]:
        """What GET /_rehearsal/state returns."""
        return self._running().state()

    def lift(self) -> dict[str, Any]:
        """What POST /_rehearsal/lift does: end every active gate now."""
        return self._running().lift()

    def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("the rehearsal server is already running")
        rehearsal = RehearsalState(self.scenario, time_scale=self.time_scale)
        config = uvicorn.Config(
            build_app(rehearsal),
            host=HOST,
            port=self._requested_port,
            # Leave the host program's logging alone and keep the terminal quiet.
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        server = _PromptServer(config)
        thread = threading.Thread(target=server.run, name="claudeloop-rehearsal", daemon=True)
        thread.start()
        deadline = time.monotonic() + _STARTUP_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                raise RuntimeError(f"the rehearsal server did not start on {HOST}")
            time.sleep(0.01)
        self._port = int(server.servers[0].sockets[0].getsockname()[1])
        self._rehearsal, self._server, self._thread = rehearsal, server, thread

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.exit_now()
        thread.join(timeout=_STARTUP_TIMEOUT)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        await anyio.to_thread.run_sync(self.start)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await anyio.to_thread.run_sync(self.stop)

    def _running(self) -> RehearsalState:
        if self._rehearsal is None:
            raise RuntimeError("the rehearsal server has not been started")
        return self._rehearsal
