"""What DBOS logs in a worker reaches the worker's output in one line, never a
traceback; a run's cancel, which the worker says itself, not at all."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from dbos import error as dbos_errors

from claudeloop.adapters.fleet.dbos_app import logs_in_one_line


@pytest.fixture
def said() -> Iterator[io.StringIO]:
    logger = logging.getLogger("dbos")
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    logger.addHandler(handler)
    filters = list(logger.filters)
    logs_in_one_line()
    logs_in_one_line()  # once is enough: a second launch adds nothing
    try:
        yield out
    finally:
        logger.removeHandler(handler)
        logger.filters[:] = filters


def test_a_failure_dbos_logs_is_one_line_and_a_cancel_is_not_said(said: io.StringIO) -> None:
    logger = logging.getLogger("dbos")
    assert sum(1 for each in logger.filters if type(each).__name__ == "_OneLine") == 1
    try:
        raise dbos_errors.DBOSAwaitedWorkflowCancelledError("r1")
    except dbos_errors.DBOSAwaitedWorkflowCancelledError:
        logger.exception("Exception encountered in background workflow:")
    try:
        raise RuntimeError("the database is away\nSQL: SELECT 1")
    except RuntimeError:
        logger.exception("Exception encountered in %s:", "the queue thread")
    logger.error("a line of its own")
    assert said.getvalue().splitlines() == [
        "Exception encountered in the queue thread: the database is away",
        "a line of its own",
    ]
