"""A fleet's database goes away and comes back, with the real bundled CLI, the
rehearsal API and real PostgreSQL (a server of this test's own, stopped and started
as an administrator does): three workers, three runs, outages of 3 s (shorter than the
lease), 10 s and 6 s (longer) and restarts, while the runs wait for a closed window
and while a turn is in flight. No worker dies of it or is taken over, and every run
finishes done exactly once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from claudeloop.adapters.fleet.engine import parse_engine
from claudeloop.adapters.fleet.leases import Leases
from tests.e2e.conftest import Rehearsal, wait_for
from tests.e2e.test_fleet import Fleet, events, finished, project_phase, stop
from tests.postgres_server import PostgresServer, postgres_or_skip

pytestmark = pytest.mark.e2e

LEASE = 4.0
WORKERS = 3


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A server this test alone stops and starts."""
    yield from postgres_or_skip()


def beating(url: str) -> dict[str, tuple[int, str | None]]:
    """Each worker's last heartbeat by the database's clock, and who took it over."""
    leases = Leases(parse_engine(url, "test"))
    try:
        rows = leases._rows("SELECT worker, beat_at, taken_by FROM claudeloop_workers")
        return {str(row[0]): (int(row[1]), row[2]) for row in rows}
    finally:
        leases.close()


def database_now(url: str) -> int:
    leases = Leases(parse_engine(url, "test"))
    try:
        return int(leases._rows("SELECT :now")[0][0])
    finally:
        leases.close()


def all_back(url: str, since: int) -> bool:
    """Every worker has beaten since `since` and nobody was taken over."""
    try:
        seen = beating(url)
    except Exception:  # the server still starting
        return False
    return len(seen) == WORKERS and all(at > since and by is None for at, by in seen.values())


@dataclass(frozen=True)
class Back:
    """The database back: its clock then, and when every worker had beaten again."""

    since: int
    at: float  # monotonic


def back_again(url: str) -> Back:
    """Once every worker beats again since the database came back."""
    since = database_now(url)
    wait_for(lambda: all_back(url, since), "every worker to beat again", 60)
    return Back(since, time.monotonic())


def watched(url: str, back: Back) -> None:
    """A whole lease and a half since every worker was back, time enough for a wrong
    takeover to happen, and none happened: what the test does meanwhile counts."""
    time.sleep(max(0.0, LEASE * 1.5 - (time.monotonic() - back.at)))
    assert all_back(url, back.since), beating(url)


def outage(server: PostgresServer, url: str, seconds: float) -> Back:
    """The database away for `seconds`; back once every worker beats again."""
    server.down()
    time.sleep(seconds)
    server.up()
    return back_again(url)


def settle(url: str) -> None:
    watched(url, back_again(url))


@pytest.mark.scenario("window_until_lift_at_2_slow_turn_3")
def test_workers_outlive_database_outages_and_every_run_finishes_once(
    rehearsal: Rehearsal, own_server: PostgresServer, tmp_path: Path
) -> None:
    url = f"{own_server.dsn.rsplit('/', 1)[0]}/fleet"
    root = tmp_path / "fleet"
    root.mkdir()
    fleet = Fleet(rehearsal, url, root, [])
    try:
        projects = [fleet.project(name) for name in ("alpha", "beta", "gamma")]
        limits = ["--lease", f"{LEASE:g}s", "--slots", "1", "--per-account", str(WORKERS)]
        # The workers start as the runs are queued, all at once: each takes one.
        workers = [fleet.worker("--name", f"w{n}", *limits) for n in range(WORKERS)]
        run_ids = fleet.add_at_once(projects, "--max-wait", "10m")
        pairs = list(zip(projects, run_ids, strict=True))
        wait_for(
            lambda: all(project_phase(p, r) in ("waiting", "probing") for p, r in pairs),
            "the three runs to wait for the window",
            150,
        )
        # While the runs wait: shorter than the lease, a restart, longer than it.
        watched(url, outage(own_server, url, 3))
        own_server.restart()
        settle(url)
        back = outage(own_server, url, 10)

        rehearsal.server.lift()  # watched meanwhile: the runs probe and go on
        wait_for(
            lambda: any(r["gate"] == "stall" for r in rehearsal.requests()),
            "a turn 3 to be in flight",
            120,
        )
        watched(url, back)
        # A turn in flight: a restart, then an outage longer than the lease.
        own_server.restart()
        time.sleep(1)
        back = outage(own_server, url, 6)
        wait_for(lambda: all(finished(p, r) for p, r in pairs), "every run to finish", 180)
        watched(url, back)
        wait_for(lambda: fleet.ended(run_ids), "the queue to say so", 60)
        assert fleet.states(run_ids) == ["done"] * 3
        assert [worker.poll() for worker in workers] == [None] * WORKERS  # all serving
        logs = "".join((root / f"worker-{n}.log").read_text() for n in range(WORKERS))
        assert "fenced" not in logs
        assert "taking over" not in logs  # nobody judged another dead
        codes = [stop(worker) for worker in workers]
    finally:
        for worker in fleet.started:
            if worker.poll() is None:
                worker.kill()
                worker.wait(timeout=10)
    assert codes == [130] * WORKERS
    for project, run_id in pairs:
        kinds = [event["type"] for event in events(project, run_id)]
        finishes = [e for e in events(project, run_id) if e["type"] == "run.finished"]
        assert [e["outcome"] for e in finishes] == ["done"], kinds
        verdicts = [e["verdict"] for e in events(project, run_id) if e["type"] == "turn.finished"]
        # At most one Done counted. The last turn's save may land in the 6 s outage: the
        # run waits for the engine, its lease lapses and it is fenced between that save
        # and the turn.finished said after it, as a kill there would; the resume finds
        # the run done and tells its run.finished (above), not the lost turn.finished.
        assert verdicts.count("done") <= 1, verdicts
        # A turn the outage cut off (or the window refused) is sent again under its
        # number: each number has one answer that counted.
        turns = [
            e["turn"]
            for e in events(project, run_id)
            if e["type"] == "turn.finished" and e["verdict"] != "refused"
        ]
        assert len(turns) == len(set(turns)), turns
