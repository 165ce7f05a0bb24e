from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.fleet_boards import FleetBoards
from tests.postgres_server import PostgresServer, postgres_or_skip

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


@pytest.fixture(autouse=True)
def isolated_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test shares capacity records with the user's real loops, nor with another
    test: every run a test starts keeps its state under the test's own directory."""
    monkeypatch.setenv("CLAUDELOOP_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL for the session, started only when a test asks for it."""
    yield from postgres_or_skip()


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> str:
    """A connection string whose search path is a schema of this test's own."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    return f"{postgres_server.dsn}?options=-csearch_path%3D{schema}"


@pytest.fixture
def fleet_boards(postgres_dsn: str) -> Iterator[FleetBoards]:
    """Workers serving their runs the fleet's capacity board, on this test's schema."""
    boards = FleetBoards(postgres_dsn)
    yield boards
    boards.close()
