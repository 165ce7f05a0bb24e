from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest


@pytest.fixture(scope="session")
def http() -> Iterator[httpx.Client]:
    """One client for the session: building one per request costs more than a request."""
    with httpx.Client(timeout=5) as client:
        yield client
