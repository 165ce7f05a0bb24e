"""A fleet's capacity sharing and its worker, measured.

- Wake-up spread: N loops of one account wait on a closed window; another loop's probe
  finds it open. The spread is the time from the end of that probe to the next turn of
  every waiter (each wakes, takes the probe's result as its own and sends). The loops are
  the real sharing gateway and wall-clock sleeper over a scripted Claude Code, on the
  real boards (PostgreSQL: a throwaway server on 127.0.0.1; the file board). Baseline,
  in the same run: the same waiters without the board's news, each waking at its own
  probe instant, instants spread over one probe interval (compressed to 2 s here; five
  minutes by default), which is how a waiter learned of the lift before.
- Probes per waiting hour per account, N = 1, 4, 16 loops waiting on a silent window
  (no reset announced), their waits decided by the real domain, in compressed time (the
  five-minute probe interval is one second). Baseline: the same loops each alone.
- A worker's own memory (its process, without the runs' `claudeloop run` children and
  their CLIs), idle and while driving two runs, beside a run's own.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio

from bench.measure import _read_status_hwm
from bench.overhead import environment
from claudeloop.adapters.shared_capacity import FileCapacityBoard, SharedCapacityGateway
from claudeloop.adapters.system_clock import WallClockSleeper
from claudeloop.application.ports import (
    CapacityBoard,
    ControlInbox,
    Gateway,
    ProbeOutcome,
    Request,
    Sleeper,
    TurnOutcome,
)
from claudeloop.domain.capacity import WindowExhausted
from claudeloop.domain.classify import classify
from claudeloop.domain.completion import Continue
from claudeloop.domain.loop import (
    ControlCommand,
    Interrupt,
    RunProbe,
    RunState,
    ScheduleProbe,
    begin_probe,
    decide_after_probe,
    decide_after_turn,
)
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.waiting import WaitPolicyConfig
from claudeloop.rehearsal import RehearsalServer, load_scenario

OPEN = TurnSignals(rate_limit_status="allowed", result_text="ok")
SILENT = TurnSignals(
    rate_limit_status="rejected",
    rate_limit_type="five_hour",
    api_error_status=429,
    is_error=True,
    result_text="API Error: 429 you have hit your limit",
)
DEFAULT_INTERVAL = WaitPolicyConfig().window_probe_interval.total_seconds()
BASELINE_INTERVAL = 2.0
COMPRESSED_INTERVAL = 1.0  # the five-minute probe interval, in the probes benchmark
WAITING_SECONDS = 12.0  # an hour of waiting at 300x
SCENARIO = Path(__file__).parent.parent / "tests" / "e2e" / "scenarios"


class NoControl:
    def pending(self) -> ControlCommand | None:
        return None

    async def stop_asked(self) -> None:
        await anyio.sleep_forever()

    def requests(self) -> tuple[Request, ...]:
        return ()

    def consumed(self, through: int) -> None:
        pass

    def interrupted(self) -> Interrupt | None:
        return None


class Scripted:
    """Claude Code's stand-in: probes find `service["open"]`; turns are noted."""

    def __init__(self, service: dict[str, bool], probed: Callable[[], None] | None = None) -> None:
        self._service = service
        self._probed = probed
        self.probes = 0
        self.turn_at: float | None = None

    async def run_turn(
        self,
        prompt: str,  # noqa: ARG002
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,  # noqa: ARG002
        on_session: Callable[[str], None] | None = None,  # noqa: ARG002
    ) -> TurnOutcome:
        self.turn_at = time.monotonic()
        return TurnOutcome(
            signals=OPEN, structured=None, final_text="", cost_usd=0.0, session_id=session_id
        )

    async def probe(self) -> ProbeOutcome:
        self.probes += 1
        signals = OPEN if self._service["open"] else SILENT
        if self._probed is not None:
            self._probed()
        return ProbeOutcome(signals=signals)

    async def get_ready(self, session_id: str | None) -> None:  # noqa: ARG002
        return  # nothing to start ahead

    async def stand_down(self) -> None:
        return

    async def close(self) -> tuple[str, ...]:
        return ()


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Spread:
    board: str
    waiters: int
    median_seconds: float
    max_seconds: float


async def _wake_spread(boards: Callable[[], CapacityBoard], waiters: int) -> Spread:
    service = {"open": False}
    found_open: list[float] = []
    inners = [Scripted(service) for _ in range(waiters)]
    gateways = [SharedCapacityGateway(inner, boards()) for inner in inners]
    prober_board = boards()
    # The prober's interval is short: the closed record is no news to it, it probes.
    quick = WaitPolicyConfig(window_probe_interval=timedelta(milliseconds=1))
    prober = SharedCapacityGateway(
        Scripted(service, probed=lambda: found_open.append(time.monotonic())),
        prober_board,
        policy=quick,
    )
    prober_board.publish(signals=SILENT, standing="closed", source="turn", writer="w", now=_now())
    entered = 0

    class Counted(WallClockSleeper):
        async def sleep_until(
            self, instant: datetime, *, progress: Callable[[float], None] | None = None
        ) -> bool:
            nonlocal entered
            entered += 1
            return await super().sleep_until(instant, progress=progress)

    async def waiter(gateway: SharedCapacityGateway) -> None:
        await gateway.run_turn("meets the window", session_id=None)  # held back: closed
        sleeper = gateway.waking(Counted(NoControl()))
        await sleeper.sleep_until(_now() + timedelta(hours=1))
        await gateway.probe()
        await gateway.run_turn("go on", session_id="s")

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for gateway in gateways:
                group.start_soon(waiter, gateway)
            while entered < waiters:
                await anyio.sleep(0.01)
            await anyio.sleep(1.5)  # every waiter listening
            service["open"] = True
            await prober.probe()
    assert all(inner.turn_at is not None for inner in inners), "a waiter did not wake"
    lags = [inner.turn_at - found_open[0] for inner in inners if inner.turn_at is not None]
    for board in [prober_board, *(g._board for g in gateways)]:
        close = getattr(board, "close", None)
        if close is not None:
            close()
    kind = "PostgreSQL" if "Postgres" in type(prober_board).__name__ else "file"
    return Spread(kind, waiters, statistics.median(lags), max(lags))


async def _polling_spread(waiters: int, interval: float) -> Spread:
    """Before the news: each waiter wakes at its own probe instant (spread evenly over a
    probe interval), probes, and sends."""
    service = {"open": True}
    inners = [Scripted(service) for _ in range(waiters)]
    opened = time.monotonic()
    start = _now()

    async def waiter(index: int, inner: Scripted) -> None:
        instant = start + timedelta(seconds=interval * (index + 1) / waiters)
        await WallClockSleeper(NoControl()).sleep_until(instant)
        await inner.probe()
        await inner.run_turn("go on", session_id="s")

    async with anyio.create_task_group() as group:
        for index, inner in enumerate(inners):
            group.start_soon(waiter, index, inner)
    lags = [inner.turn_at - opened for inner in inners if inner.turn_at is not None]
    return Spread("none (baseline)", waiters, statistics.median(lags), max(lags))


@dataclass(frozen=True)
class ProbeRate:
    loops: int
    shared: float  # probes per waiting hour for the account
    alone: float


async def _probes(loops: int, board: Callable[[], CapacityBoard] | None) -> int:
    policy = WaitPolicyConfig(window_probe_interval=timedelta(seconds=COMPRESSED_INTERVAL))
    service = {"open": False}
    inners = [Scripted(service) for _ in range(loops)]
    until = time.monotonic() + WAITING_SECONDS
    control: ControlInbox = NoControl()

    async def waiting(index: int, inner: Scripted) -> None:
        # Runs meet the window at different moments within a probe interval.
        await anyio.sleep(COMPRESSED_INTERVAL * index / loops)
        gateway: Gateway = inner
        sleeper: Sleeper = WallClockSleeper(control)
        if board is not None:
            sharing = SharedCapacityGateway(inner, board(), policy=policy)
            gateway, sleeper = sharing, sharing.waking(sleeper)
        transition = decide_after_turn(
            RunState(),
            capacity=WindowExhausted("five_hour", None),
            verdict=Continue(),
            now=_now(),
            config=policy,
        )
        while time.monotonic() < until:
            match transition.decision:
                case ScheduleProbe(at=at):
                    end = _now() + timedelta(seconds=until - time.monotonic())
                    await sleeper.sleep_until(min(at, end))
                    if time.monotonic() >= until:
                        return
                    transition = begin_probe(transition.state)
                case RunProbe():
                    probe = await gateway.probe()
                    transition = decide_after_probe(
                        transition.state, classify(probe.signals), now=_now(), config=policy
                    )
                case _:
                    raise AssertionError(f"a wait ended: {transition.decision}")

    async with anyio.create_task_group() as group:
        for index, inner in enumerate(inners):
            group.start_soon(waiting, index, inner)
    return sum(inner.probes for inner in inners)


def _per_hour(probes: int) -> float:
    compressed_hours = WAITING_SECONDS * (DEFAULT_INTERVAL / COMPRESSED_INTERVAL) / 3600
    return probes / compressed_hours


@dataclass(frozen=True)
class WorkerMemory:
    idle_mb: float
    driving_mb: float
    runs: int
    run_mb: float


def _worker_memory(work: Path) -> WorkerMemory:
    """A worker on SQLite: idle on an empty queue, then driving two runs that wait."""
    scenario = load_scenario(SCENARIO / "window_until_lift_at_2.toml")
    runs = 2
    with RehearsalServer(scenario) as server:
        env = environment(server.base_url, work / "home")
        env["CLAUDELOOP_STATE_DIR"] = str(work / "state")
        env["IS_SANDBOX"] = "1"
        engine = f"sqlite:///{work / 'fleet.sqlite'}"
        log = work / "worker.log"
        with log.open("w") as output:
            worker = subprocess.Popen(
                [sys.executable, "-m", "claudeloop", "worker", "--engine", engine,
                 "--slots", "2", "--per-account", "2"],
                env=env, stdout=output, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            _until(lambda: "taking runs" in log.read_text(), 120)
            time.sleep(3)
            idle = _read_status_hwm(worker.pid) or 0.0
            for number in range(runs):
                project = work / f"project{number}"
                project.mkdir()
                (project / "PLAN.md").write_text("# Plan\n\n- [ ] Write step1.txt\n")
                subprocess.run(
                    [sys.executable, "-m", "claudeloop", "queue", "add",
                     str(project / "PLAN.md"), "--cwd", str(project), "--engine", engine,
                     "--permission-mode", "bypassPermissions", "--window-probe-interval", "3s"],
                    env=env, check=True, capture_output=True,
                )  # fmt: skip
            _until(lambda: _all_waiting(work, runs), 180)
            time.sleep(3)
            driving = _read_status_hwm(worker.pid) or 0.0
            children = _children(worker.pid)
            run_mb = max(((_read_status_hwm(pid) or 0.0) for pid in children), default=0.0)
        finally:
            worker.terminate()
            worker.wait(60)
    return WorkerMemory(idle, driving, runs, run_mb)


def _until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the fleet benchmark's worker did not get there")
        time.sleep(0.1)


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (the worker's `claudeloop run` children)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid:
            found.append(int(stat.parent.name))
    return found


def _all_waiting(work: Path, runs: int) -> bool:
    phases = []
    for state in work.glob("project*/.claudeloop/runs/*/state.json"):
        try:
            phases.append(json.loads(state.read_text())["state"]["phase"])
        except (OSError, ValueError, KeyError):
            return False
    return phases.count("waiting") == runs


@dataclass(frozen=True)
class Fleet:
    spreads: list[Spread]
    rates: list[ProbeRate]
    memory: WorkerMemory


def run() -> Fleet:
    from tests.fleet_boards import FleetBoards
    from tests.postgres_server import throwaway_postgres

    work = Path(tempfile.mkdtemp(prefix="claudeloop-bench-fleet-"))
    try:
        with throwaway_postgres() as server:
            # Each loop a run of a worker of its own, reaching the board through it.
            workers = FleetBoards(server.dsn)
            spreads: list[Spread] = []
            rates: list[ProbeRate] = []
            for number, waiters in enumerate((4, 16)):

                def postgresql(account: str = f"spread-{number}") -> CapacityBoard:
                    return workers.board(account)

                def file(directory: Path = work / f"capacity-{number}") -> CapacityBoard:
                    return FileCapacityBoard(directory, "acct")

                spreads.append(anyio.run(_wake_spread, postgresql, waiters))
                spreads.append(anyio.run(_wake_spread, file, waiters))
                spreads.append(anyio.run(_polling_spread, waiters, BASELINE_INTERVAL))
            for loops in (1, 4, 16):
                account = f"probes-{loops}"
                shared = anyio.run(_probes, loops, lambda a=account: workers.board(a))
                alone = anyio.run(_probes, loops, None)
                rates.append(ProbeRate(loops, _per_hour(shared), _per_hour(alone)))
            workers.close()
        memory = _worker_memory(work)
        return Fleet(spreads, rates, memory)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def section(figures: Fleet) -> list[str]:
    """The figures as RESULTS.md's section."""
    memory = figures.memory
    lines = [
        "## A fleet",
        "",
        "Wake-up spread: N loops of one account wait on a closed window; another loop's "
        "probe finds it open. From the end of that probe to the next turn of every waiter "
        "(the real sharing gateway and sleeper over a scripted Claude Code, on the real "
        "boards). Baseline: the waiters without the board's news, each at its own probe "
        f"instant, spread over a probe interval compressed to {BASELINE_INTERVAL:.0f} s "
        f"(by default it is {DEFAULT_INTERVAL / 60:.0f} min, and so is the spread).",
        "",
        "| board | waiters | median | max | max / baseline's max |",
        "|---|---|---|---|---|",
    ]
    baseline = {s.waiters: s for s in figures.spreads if s.board.startswith("none")}
    for spread in figures.spreads:
        ratio = spread.max_seconds / baseline[spread.waiters].max_seconds
        lines.append(
            f"| {spread.board} | {spread.waiters} | {spread.median_seconds * 1000:.0f} ms | "
            f"{spread.max_seconds * 1000:.0f} ms | {ratio:.3f} |"
        )
    lines += [
        "",
        "Probes per waiting hour for one account, N loops waiting on a silent window, their "
        "waits decided by the real domain in compressed time (the 5-minute probe interval "
        "is 1 s), on the PostgreSQL board. Baseline: the same loops, each alone.",
        "",
        "| loops | shared | each alone (baseline) | ratio |",
        "|---|---|---|---|",
    ]
    for rate in figures.rates:
        lines.append(
            f"| {rate.loops} | {rate.shared:.0f} | {rate.alone:.0f} | "
            f"{rate.shared / rate.alone:.2f} |"
        )
    lines += [
        "",
        "A worker's own memory (its process, without its runs' `claudeloop run` children "
        "and their CLIs), on SQLite:",
        "",
        "| process | peak RSS |",
        "|---|---|",
        f"| worker, idle | {memory.idle_mb:.0f} MB |",
        f"| worker, driving {memory.runs} runs | {memory.driving_mb:.0f} MB |",
        f"| a run it drives (`claudeloop run`, for comparison) | {memory.run_mb:.0f} MB |",
    ]
    return lines


def main() -> None:
    """This benchmark alone (`make bench` runs it with the others)."""
    print("\n".join(section(run())))


if __name__ == "__main__":
    main()
