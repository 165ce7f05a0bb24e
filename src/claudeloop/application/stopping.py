"""Work a stop ends at once: a check, or Claude Code started ahead of a probe, takes
seconds that `claudeloop stop` does not wait for."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio

T = TypeVar("T")


@dataclass(frozen=True)
class Finished(Generic[T]):
    """The work ended before any stop, with what it gave."""

    value: T


async def unless_stopped(
    stop_asked: Callable[[], Awaitable[None]], work: Callable[[], Awaitable[T]]
) -> Finished[T] | None:
    """`work`'s result, or None when `stop_asked` returned first: the work is then
    cancelled, and ends what it started (a check its process group, the gateway its
    Claude Code). A failure of the work is raised as itself (a full disk), not in an
    exception group."""
    finished: list[Finished[T]] = []
    failure: BaseException | None = None
    async with anyio.create_task_group() as group:

        async def stop_when_asked() -> None:
            await stop_asked()
            group.cancel_scope.cancel()

        group.start_soon(stop_when_asked)
        try:
            finished.append(Finished(await work()))
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as other:
            failure = other
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return finished[0] if finished else None
