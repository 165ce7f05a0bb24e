"""An instant on the terminal is in the reader's own time zone, with a date when it is
not today (`status` showed `2026-12-01T21:56:00.902651+00:00`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from claudeloop.cli.instants import local_instant

NOW = datetime(2026, 12, 1, 21, 50, tzinfo=UTC)


@pytest.fixture
def in_rome(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Europe/Rome")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("in_rome")
def test_an_instant_today_is_a_time_in_the_readers_zone() -> None:
    at = datetime(2026, 12, 1, 21, 56, 0, 902651, tzinfo=UTC)
    assert local_instant(at, now=NOW) == "22:56:00 CET"


@pytest.mark.usefixtures("in_rome")
def test_an_instant_on_another_day_says_the_date() -> None:
    # 23:30 UTC is already tomorrow in Rome.
    at = datetime(2026, 12, 1, 23, 30, tzinfo=UTC)
    assert local_instant(at, now=NOW) == "2026-12-02 00:30:00 CET"
