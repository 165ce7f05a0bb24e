"""The command answers --version and --help without a Claude account."""

from click.testing import CliRunner

from claudeloop import __version__
from claudeloop.cli.main import cli


def test_version_prints_the_installed_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output


def test_help_names_the_tool_and_shows_examples() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert "until a task is truly done" in result.output
    assert "Examples:" in result.output
