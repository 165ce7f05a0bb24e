"""docs/reference/cli.md is the command line's own help, and stays so."""

from __future__ import annotations

import difflib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from claudeloop.cli import reference
from claudeloop.cli.main import cli
from tests.commands import subcommands

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "cli.md"
HOW = (
    "regenerate it with `make docs` "
    "(or `.venv/bin/python -m claudeloop.cli.reference docs/reference/cli.md`)"
)


def _command_paths(command: click.Command, path: str) -> list[str]:
    paths = [path]
    if isinstance(command, click.Group):
        for name, sub in sorted(subcommands(command).items()):
            if not sub.hidden:
                paths += _command_paths(sub, f"{path} {name}")
    return paths


def test_the_cli_reference_is_current() -> None:
    assert PAGE.is_file(), f"{PAGE.relative_to(ROOT)} is missing; {HOW}"
    written = PAGE.read_text(encoding="utf-8")
    rendered = reference.render()
    if written != rendered:
        diff = "".join(
            list(
                difflib.unified_diff(
                    written.splitlines(keepends=True),
                    rendered.splitlines(keepends=True),
                    "docs/reference/cli.md (written)",
                    "claudeloop --help (now)",
                )
            )[:60]
        )
        pytest.fail(f"docs/reference/cli.md is stale; {HOW}\n{diff}", pytrace=False)


def test_every_command_has_its_section() -> None:
    page = reference.render()
    for path in _command_paths(cli, "claudeloop"):
        assert f"## `{path}`\n" in page, f"no section for {path}"


def test_each_section_is_what_the_command_prints_for_help() -> None:
    page = reference.render()
    for path in _command_paths(cli, "claudeloop")[1:]:
        args = [*path.split()[1:], "--help"]
        printed = CliRunner().invoke(
            cli, args, prog_name="claudeloop", terminal_width=reference.WIDTH
        )
        assert printed.exit_code == 0, printed.output
        body = printed.output.rstrip()
        assert f"## `{path}`\n\n```text\n{body}\n```\n" in page, path


def test_the_page_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    narrow = reference.render()
    monkeypatch.setenv("COLUMNS", "200")
    assert reference.render() == narrow


def test_main_writes_the_page_or_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "reference" / "cli.md"
    reference.main([str(target)])
    assert target.read_text(encoding="utf-8") == reference.render()
    reference.main([])
    assert capsys.readouterr().out == reference.render()
