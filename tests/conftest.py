from __future__ import annotations

import contextlib
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
# prints them ("93.78s call tests/e2e/...::test_..."): copied from a CI log when the
# slowest change. Read to start them first.
SLOWEST = Path(__file__).parent / "slowest.txt"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest tests start first, one on each worker, so none starts last on a
    worker that would then run it alone while the others are done. xdist's work
    stealing hands each worker a contiguous share of this order and steals from the
    ends of the shares: each share is dealt its long tests first."""
    seconds: dict[str, float] = {}
    for line in SLOWEST.read_text().splitlines() if SLOWEST.exists() else ():
        taken, _, rest = line.partition("s ")
        _, _, nodeid = rest.partition(" ")
        with contextlib.suppress(ValueError):
            seconds[nodeid] = seconds.get(nodeid, 0.0) + float(taken)
    ranked = sorted(items, key=lambda item: -seconds.get(item.nodeid, 0.0))
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    items[:] = [item for share in range(workers) for item in ranked[share::workers]]


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
