"""Verification commands, run as real processes: no shell, their own process group (which
dies with the driver: `check_groups`), the whole output in a file and only its end in
memory."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import anyio
from anyio.abc import Process

from claudeloop.adapters.check_groups import (
    dismiss,
    end_leftover,
    forget_group,
    gated,
    note_group,
    open_gate,
    start_watchdog,
)
from claudeloop.adapters.private_file import make_private_directory
from claudeloop.adapters.sandbox import CheckBoundary
from claudeloop.domain.verification import CheckCommand, CheckResult

DEFAULT_TIMEOUT_SECONDS = 600.0
DEFAULT_TAIL_BYTES = 4096
# How long a process group has after SIGTERM before SIGKILL.
DEFAULT_KILL_GRACE_SECONDS = 2.0
# Output is redacted a line at a time, so a secret is never split between two writes; a
# line longer than this is written in pieces.
_LONGEST_LINE = 64 * 1024


def _unchanged(text: str) -> str:
    return text


class VerificationCommands:
    """Runs checks in `cwd`; satisfies the application's `Checks` port."""

    def __init__(
        self,
        cwd: Path,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        redact: Callable[[str], str] = _unchanged,
        tail_bytes: int = DEFAULT_TAIL_BYTES,
        env: Mapping[str, str] | None = None,
        kill_grace_seconds: float = DEFAULT_KILL_GRACE_SECONDS,
        note: Path | None = None,
        boundary: CheckBoundary | None = None,
    ) -> None:
        """`note`: where the check in flight is noted, so that the run's next driver ends
        one a dead driver left before it starts its own (None: not noted). `boundary`:
        the sandbox each check runs in (None: unconfined, as --sandbox off says)."""
        if not timeout_seconds > 0 or tail_bytes < 0 or kill_grace_seconds < 0:
            raise ValueError("a check needs a positive timeout and a tail of 0 bytes or more")
        self._cwd = cwd
        self._timeout = timeout_seconds
        self._redact = redact
        self._tail_bytes = tail_bytes
        self._env = env
        self._grace = kill_grace_seconds
        self._note = note
        self._boundary = boundary

    async def run(self, check: CheckCommand, *, output: Path) -> CheckResult:
        """Run `check` to its end, its timeout or a cancellation (which kills its group)."""
        if self._note is not None:
            end_leftover(self._note)  # never two copies of a check on one tree
        started = time.monotonic()
        with _Output(output, self._redact, self._tail_bytes) as sink:
            watchdog = None
            try:
                # Shielded: a stop that came now would leave a check no one ends.
                with anyio.CancelScope(shield=True):
                    process = await anyio.open_process(
                        gated(self._confined(check.argv)),
                        cwd=self._cwd,
                        env=self._environment(),
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        start_new_session=True,
                    )
                    watchdog = await start_watchdog(process.pid)
                    await open_gate(process)  # only now, watched, does the check run
            except OSError as error:
                with anyio.CancelScope(shield=True):
                    await dismiss(watchdog)
                message = self._redact(str(error))
                sink.write(message.encode() + b"\n")
                sink.flush()
                return CheckResult(
                    command=check,
                    exit_code=None,
                    seconds=time.monotonic() - started,
                    output_bytes=sink.size,
                    output_path=output,
                    start_error=message,
                )
            self._noted(process.pid)
            try:
                timed_out = await self._wait(process, sink)
            finally:
                # The group is ended by now (see _wait): nothing is left to watch.
                with anyio.CancelScope(shield=True):
                    await dismiss(watchdog)
                self._noted(None)
            sink.flush()
            return CheckResult(
                command=check,
                exit_code=None if timed_out else process.returncode,
                seconds=time.monotonic() - started,
                output_tail=self._redact(sink.tail()),
                output_bytes=sink.size,
                output_path=output,
                timed_out=timed_out,
            )

    def _confined(self, argv: Sequence[str]) -> list[str]:
        return self._boundary.wrap(argv) if self._boundary is not None else list(argv)

    def _environment(self) -> Mapping[str, str] | None:
        if self._boundary is None:
            return self._env
        return self._boundary.environment(self._env if self._env is not None else os.environ)

    def _noted(self, group: int | None) -> None:
        """Note the group in flight (None: none is). A disk that refuses the note leaves
        the check to its watchdog alone."""
        if self._note is None:
            return
        with contextlib.suppress(OSError):
            if group is None:
                forget_group(self._note)
            else:
                note_group(self._note, group)

    async def _wait(self, process: Process, sink: _Output) -> bool:
        """Whether the command timed out. Whatever is left of its group is gone after."""
        drained = anyio.Event()

        async def pump() -> None:
            assert process.stdout is not None
            async for chunk in process.stdout:
                sink.write(chunk)
            drained.set()

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(pump)
                with anyio.move_on_after(self._timeout) as deadline:
                    await process.wait()
                # What the command left running goes too. Its output is read to the end,
                # unless a process that left the group still holds the pipe open.
                await self._end_group(process, drained)
                with anyio.move_on_after(self._grace):
                    await drained.wait()
                group.cancel_scope.cancel()
            return deadline.cancelled_caught
        finally:
            # Cancelled (a stop): the group goes without waiting for its output.
            with anyio.CancelScope(shield=True):
                await self._end_group(process, None)
                await process.aclose()

    async def _end_group(self, process: Process, drained: anyio.Event | None) -> None:
        """SIGTERM to the process group; SIGKILL to whatever is left of it once the leader
        is gone and the output read to its end, or after the grace."""
        group = process.pid  # the leader of its own session and group
        if _signal(group, signal.SIGTERM):
            with anyio.move_on_after(self._grace):
                await process.wait()
                if drained is not None:
                    await drained.wait()
            _signal(group, signal.SIGKILL)
        await process.wait()


def _signal(group: int, number: int) -> bool:
    """Send `number` to the group; False when no process of it is left."""
    try:
        os.killpg(group, number)
    except (ProcessLookupError, PermissionError):  # gone, or only zombies left (macOS)
        return False
    return True


class _Output:
    """The output file (0600, everything, redacted line by line) and the last bytes."""

    def __init__(self, path: Path, redact: Callable[[str], str], tail_bytes: int) -> None:
        self._path = path
        self._redact = redact
        self._limit = tail_bytes
        self._pending = bytearray()
        self._tail = bytearray()
        self.size = 0

    def __enter__(self) -> _Output:
        make_private_directory(self._path.parent)  # checks/ holds what the commands said
        self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(self._fd, 0o600)  # an existing file keeps its mode otherwise
        return self

    def __exit__(self, *_: object) -> None:
        os.close(self._fd)

    def write(self, chunk: bytes) -> None:
        self._pending += chunk
        end = self._pending.rfind(b"\n") + 1
        if end == 0 and len(self._pending) < _LONGEST_LINE:
            return
        cut = end or len(self._pending)
        self._emit(bytes(self._pending[:cut]))
        del self._pending[:cut]

    def flush(self) -> None:
        if self._pending:
            self._emit(bytes(self._pending))
            self._pending.clear()

    def tail(self) -> str:
        kept = bytes(self._tail)
        if self.size > len(kept):
            # The bound may have cut a character: start at the next whole one.
            skip = 0
            while skip < min(3, len(kept)) and 0x80 <= kept[skip] < 0xC0:
                skip += 1
            kept = kept[skip:]
        return kept.decode("utf-8", errors="replace")

    def _emit(self, data: bytes) -> None:
        text = data.decode("utf-8", errors="surrogateescape")
        redacted = self._redact(text).encode("utf-8", errors="surrogateescape")
        view = memoryview(redacted)
        while view:
            view = view[os.write(self._fd, view) :]
        self.size += len(redacted)
        self._tail += redacted[-self._limit :]
        del self._tail[: -self._limit or None]
