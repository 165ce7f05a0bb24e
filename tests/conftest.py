from __future__ import annotations

import atexit
import contextlib
import gc
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.fleet_boards import FleetBoards
from tests.postgres_server import PostgresServer, shared_postgres
from tests.shared_services import stop_shared_services

# Locally every run explores new examples (and keeps the failing ones in .hypothesis/);
# CI replays one fixed set, so a submission lands or not on its own merits. A property
# that fails here once must be fixed, not re-run.
# No profile has a deadline: the suite must pass beside another load, and a property
# asserts what holds, never how fast one example ran (Hypothesis's default 200 ms per
# example failed a pure domain property on a machine at load 14).
settings.register_profile("local", deadline=None)
settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
# `make check`, the fast gate while working: fewer examples per property; `make test`
# (CI) still explores the full number.
settings.register_profile("check", max_examples=20, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")
elif os.environ.get("HYPOTHESIS_PROFILE") == "check":
    settings.load_profile("check")
else:
    settings.load_profile("local")

# A test process, once its results are reported and every exit function of pytest and
# its plugins has run, leaves without the collector's last passes over every object it
# made (registered first, this runs last): an xdist worker took 1.1 s of CPU to end,
# 0.07 s so, and the fast gate waits for each of its workers to end.
atexit.register(gc.freeze)

# Instants shown to people are in their own time zone (cli/instants.py): the expected
# lines are in UTC, on any machine.
os.environ["TZ"] = "UTC"
time.tzset()


@pytest.fixture(scope="session")
def states(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of every test's state folder, one per process."""
    return tmp_path_factory.mktemp("states", numbered=False)


@pytest.fixture(autouse=True)
def isolated_state(monkeypatch: pytest.MonkeyPatch, states: Path) -> None:
    """No test shares capacity records with the user's real loops, nor with another
    test: every run a test starts keeps its state in a folder of the test's own, which
    claudeloop makes when it first writes there. (Not under tmp_path: two thirds of the
    tests ask for none, and making one for each of them cost the fast gate 3 s of CPU.)"""
    monkeypatch.setenv("CLAUDELOOP_STATE_DIR", str(states / uuid.uuid4().hex))


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> PostgresServer:
    """One throwaway PostgreSQL for the whole run, every worker's, started only when a
    test first asks for it."""
    return shared_postgres(tmp_path_factory)


# The seconds each of the slowest tests took in one whole run, as pytest's --durations
# prints them ("93.78s call tests/e2e/...::test_..."): CI's and the fast gate's, copied
# from their output when the slowest change. Read to start them first.
SLOWEST = Path(__file__).parent / "slowest.txt"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest tests start first, one on each worker, so none starts last on a
    worker that would then run it alone while the others are done.

    xdist's work stealing (`--dist worksteal`) hands each worker a contiguous share of
    this order, as even as it can make them, and steals from the ends of the shares:
    each share is dealt its long tests first, then a run of the others in the order
    they were collected, so a module's tests mostly share one worker and its fixtures
    of module scope are set up once, not on every worker."""
    seconds: dict[str, float] = {}
    for line in SLOWEST.read_text().splitlines() if SLOWEST.exists() else ():
        with contextlib.suppress(ValueError):
            taken, _when, nodeid = line.split(maxsplit=2)
            seconds[nodeid] = seconds.get(nodeid, 0.0) + float(taken.removesuffix("s"))
    known = sorted((i for i in items if i.nodeid in seconds), key=lambda i: -seconds[i.nodeid])
    others = [item for item in items if item.nodeid not in seconds]
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    ordered: list[pytest.Item] = []
    left = len(items)
    for share in range(workers):
        size = left // (workers - share)  # what worksteal hands this worker
        left -= size
        dealt = known[share::workers]
        filled = max(0, size - len(dealt))
        ordered += dealt + others[:filled]
        del others[:filled]
    items[:] = ordered + others


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The servers the run shared stop once it ends (tests/shared_services.py)."""
    stop_shared_services(session.config)


@pytest.fixture(scope="session")
def postgres_database(postgres_server: PostgresServer) -> str:
    """A database of this process's own on the run's server: a NOTIFY reaches every
    session of its database, so two workers' tests, each in a schema of its own, would
    hear each other's in one."""
    import psycopg

    name = f"w_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return f"{postgres_server.dsn.rsplit('/', 1)[0]}/{name}"


@pytest.fixture
def postgres_dsn(postgres_database: str) -> str:
    """A connection string whose search path is a schema of this test's own."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_database, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    return f"{postgres_database}?options=-csearch_path%3D{schema}"


@pytest.fixture
def fleet_boards(postgres_dsn: str) -> Iterator[FleetBoards]:
    """Workers serving their runs the fleet's capacity board, on this test's schema."""
    boards = FleetBoards(postgres_dsn)
    yield boards
    boards.close()
