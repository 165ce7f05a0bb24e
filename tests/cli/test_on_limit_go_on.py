"""`--on-limit ...=go-on` is only for paid overage: one line, exit 2, before any turn."""

from __future__ import annotations

from click.testing import CliRunner

from claudeloop.cli.main import cli


def test_go_on_for_a_closed_window_is_refused_in_one_line() -> None:
    result = CliRunner().invoke(cli, ["run", "PLAN.md", "--on-limit", "five_hour=go-on"])
    assert result.exit_code == 2
    assert "go-on is only for overage_in_use" in result.output
    assert "Traceback" not in result.output
