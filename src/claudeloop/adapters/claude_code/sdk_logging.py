"""Where the SDK's own log lines go: the run's debug log, never the screen.

claude-agent-sdk logs with the standard `logging` module; with no handler configured,
Python prints its warnings on stderr ("Fatal error in message reader: Command failed
with exit code -2" when a Ctrl-C killed the CLI under it). Those lines say nothing the
gateway does not say itself, in its own words, so they go to the debug log.
"""

from __future__ import annotations

import logging

from claudeloop.adapters.claude_code.stderr_log import StderrLog

SDK_LOGGER = "claude_agent_sdk"


class _ToTheDebugLog(logging.Handler):
    """The SDK's warnings and errors, into the debug log of the gateway made last (a
    process drives one run, whose gateways share its debug log)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.log: StderrLog | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.log is not None:
            self.log.note(f"claude-agent-sdk: {record.getMessage()}")


_HANDLER = _ToTheDebugLog()


def route_sdk_logging(log: StderrLog) -> None:
    """The SDK's log lines go to `log` from now on, and never to the screen."""
    _HANDLER.log = log
    logger = logging.getLogger(SDK_LOGGER)
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)
    logger.propagate = False
