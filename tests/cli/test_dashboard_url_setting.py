"""`dashboard_url`: the address a person reaches the dashboard at, which every
notification links to. Set in a file or the environment, checked in one line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Invocation
from tests.cli.test_user_errors import assert_one_line_error

Invoke = Callable[..., Invocation]


def test_config_show_says_the_address_and_where_it_came_from(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    (tmp_path / "claudeloop.toml").write_text(
        'dashboard_url = "https://box.tailnet.ts.net:8420/"\n'
    )
    shown = claudeloop("config", "show", "--cwd", tmp_path)
    assert shown.exit_code == 0, shown.err
    (line,) = [line for line in shown.out.splitlines() if line.startswith("dashboard_url")]
    # The trailing slash dropped: a run's link is the address and /run/KEY.
    assert '"https://box.tailnet.ts.net:8420"' in line
    assert "claudeloop.toml" in line


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("box.tailnet.ts.net:8420", "http(s) URL"),
        ("ftp://box/", "http(s) URL"),
        ("https://box:8420/?key=secret", "query"),
        ("https://me:secret@box:8420", "password"),
    ],
)
def test_an_address_that_is_no_dashboard_url_is_one_line_naming_the_key(
    claudeloop: Invoke, tmp_path: Path, value: str, why: str
) -> None:
    (tmp_path / "claudeloop.toml").write_text(f'dashboard_url = "{value}"\n')
    result = claudeloop("config", "show", "--cwd", tmp_path)
    assert_one_line_error(result, "claudeloop.toml", "dashboard_url", "http(s) URL")
    assert "secret" not in result.err  # a password given by mistake is masked


def test_the_variable_is_checked_as_the_file_is(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDELOOP_DASHBOARD_URL", "not a url")
    result = claudeloop("config", "show", "--cwd", tmp_path)
    assert_one_line_error(result, "CLAUDELOOP_DASHBOARD_URL", "https://box.tailnet.ts.net:8420")
