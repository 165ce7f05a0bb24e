"""The heartbeat and lease: a worker's lease renewed in the engine and in the file its
children read (lease_file.py), and the runs of workers whose lease ran out taken over.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from claudeloop.adapters.fleet.lease_file import write_lease
from claudeloop.adapters.fleet.leases import Leases
from claudeloop.adapters.fleet.worker_settings import POLL_SECONDS, WorkerSettings

# The child trusts its lease for less than the engine counts it, so it has stopped
# before any other worker may take its run over; heartbeats come often enough that
# one held up by the database (a busy SQLite file) does not end the children's lease.
_CHILD_SHARE = 0.9
_BEATS_PER_LEASE = 6
# The heartbeat's statements end after this (or a sixth of the lease, if longer): a beat
# held up is a beat missed, and the next one comes soon.
_HEART_ANSWER_SECONDS = 2.0


def answer_within(settings: WorkerSettings) -> float:
    """Seconds a heartbeat's statement may take before the server ends it."""
    return max(_HEART_ANSWER_SECONDS, settings.lease_seconds / _BEATS_PER_LEASE)


class Heartbeat:
    """The worker's heartbeat: renews its lease in the engine and the file its
    children read, and takes over the runs of workers whose lease ran out.

    It beats on a thread of its own, through a connection of its own that gives up
    within seconds: the worker's main loop asks the queue's engine (DBOS), which waits
    out a database away with a backoff of its own (up to a minute), and a heartbeat held
    up behind it would make a live worker look dead. A worker back from a time it could
    not reach the engine judges no one by the heartbeats that could not be written
    meanwhile: it takes over a worker only once it has itself reached the engine without
    a break for that worker's whole lease."""

    def __init__(
        self,
        settings: WorkerSettings,
        leases: Leases,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ):
        self._settings = settings
        self._leases = leases
        self._say = say
        self._clock = clock
        self._next_beat = 0.0
        self._up_since: float | None = None  # the first beat since the engine was last away
        self._last_beat: float | None = None  # the last beat that reached the engine
        self._next_look = 0.0  # when to look for dead workers next
        # A worker won, whose runs are not handed back yet (the engine failed meanwhile):
        # no other worker will take it now, so this one tries again at each look.
        self._owed: tuple[str, list[str]] | None = None
        self.fenced = threading.Event()  # another worker took this one over

    @property
    def lease_ms(self) -> int:
        return int(self._settings.lease_seconds * 1000)

    @property
    def _interval(self) -> float:
        return self._settings.lease_seconds / _BEATS_PER_LEASE

    @property
    def tick(self) -> float:
        return min(POLL_SECONDS, self._interval)

    def start(self) -> None:
        """A new life: a fresh heartbeat with this worker's lease, taken over by no one."""
        self._leases.start(self._settings.executor_id, self.lease_ms)
        write_lease(self._settings.lease_file, time.time() + self._child_lease)
        now = self._clock()
        self._up_since = self._last_beat = now
        self._next_beat = now + self._interval
        self.fenced.clear()

    @property
    def _child_lease(self) -> float:
        return self._settings.lease_seconds * _CHILD_SHARE

    def beat(self) -> bool:
        """Heartbeat when one is due; False when this worker was taken over."""
        if self._clock() < self._next_beat:
            return True
        sent = time.time()
        try:
            alive = self._leases.beat(self._settings.executor_id)
        except Exception:  # the database away: the children's lease runs out on its own
            self._up_since = None
            return True
        if alive:
            now = self._clock()
            if self._up_since is None or self._broken(now):
                self._up_since = now
            self._last_beat = now
            write_lease(self._settings.lease_file, sent + self._child_lease)
            self._next_beat = now + self._interval
        return alive

    def _broken(self, now: float) -> bool:
        """Whether the engine went unheard long enough to miss beats of others (this
        worker paused, a beat that hung)."""
        return self._last_beat is None or now - self._last_beat > self._settings.lease_seconds / 2

    def up_for_ms(self) -> int:
        """How long this worker has reached the engine without a break, in ms."""
        now = self._clock()
        if self._up_since is None or self._broken(now):
            return 0
        return int((now - self._up_since) * 1000)

    def keep_beating(self, stopped: threading.Event) -> None:
        """The heartbeat's thread, until `stopped`; sets `fenced` when taken over."""
        while not stopped.wait(self.tick):
            if not self.fenced.is_set() and not self.beat():
                self.fenced.set()

    def take_over(self, hand_back: Callable[[list[str]], list[str]]) -> None:
        """Take the runs of each worker whose lease ran out, when this worker wins it:
        `hand_back` (the queue's engine's) returns the runs those workers had taken to
        the queue. The engine is asked once a heartbeat interval, not at every tick: a
        lease runs out a whole lease after a worker's last beat, and a sixth of it later
        is soon."""
        me = self._settings.executor_id
        up_for = self.up_for_ms()
        if up_for == 0 or self.fenced.is_set():
            return
        now = self._clock()
        if now < self._next_look:
            return
        self._next_look = now + self._interval
        try:
            if self._owed is not None:
                self._hand_back(hand_back, *self._owed)
            for dead in self._leases.dead(me, up_for):
                executors = self._leases.take_over(dead, me, up_for)
                if executors is not None:
                    self._owed = (dead, executors)
                    self._hand_back(hand_back, dead, executors)
        except Exception:  # the database away for a moment: look again next time
            return

    def _hand_back(
        self, hand_back: Callable[[list[str]], list[str]], dead: str, executors: list[str]
    ) -> None:
        count = len(hand_back(executors))
        self._owed = None
        self._say(f"worker {dead} stopped heart-beating: taking over {count} run(s)")
