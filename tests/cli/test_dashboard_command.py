"""`claudeloop dashboard`'s mistakes: one line and exit 2, never a traceback."""

from __future__ import annotations

import socket
from collections.abc import Callable

from tests.cli.conftest import Invocation
from tests.cli.test_user_errors import assert_one_line_error

Invoke = Callable[..., Invocation]


def test_a_port_in_use_is_one_line(claudeloop: Invoke) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = claudeloop("dashboard", "--port", port)
    assert_one_line_error(result, f"--port {port}", "cannot listen")


def test_an_address_not_of_this_machine_is_one_line(claudeloop: Invoke) -> None:
    assert_one_line_error(
        claudeloop("dashboard", "--host", "no.such.host.invalid"), "--host", "cannot listen"
    )


def test_a_port_out_of_range_is_refused(claudeloop: Invoke) -> None:
    result = claudeloop("dashboard", "--port", "70000")
    assert result.exit_code == 2
    assert "70000" in result.err
