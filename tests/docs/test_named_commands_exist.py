"""Every message names a command that exists. After `pip install claudeloop` or `uv tool
install claudeloop` there is no `claude` on PATH (the CLI is only inside the SDK's
wheel), so no text a user reads tells them to run `claude` or its /login: they are told
`claudeloop login` or `claudeloop claude ...`. Docstrings and comments may speak of the
CLI; what is said to the user (the strings of src/, --help, the guides, README) may not.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from claudeloop.cli.main import cli
from tests.cli.test_help_width import command_paths
from tests.commands import subcommands

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "claudeloop"
# The rehearsal plays Claude Code and the API: its words are theirs (the CLI's own
# "Please run /login"), never advice of ours.
PLAYED = SOURCE / "rehearsal"
# A command of the bare CLI: `claude`, `claude auth ...`, `claude setup-token`, /login.
BARE = re.compile(r"(?<!claudeloop )`claude(?:`| auth\b| setup-token\b| login\b)|(?<!\w)/login\b")


def said_strings(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node.lineno, node.value


def sources() -> list[Path]:
    return [path for path in sorted(SOURCE.rglob("*.py")) if PLAYED not in path.parents]


def test_the_pattern_finds_what_it_must() -> None:
    for told in (
        "log in again with `claude` (/login)",
        "set CLAUDE_CODE_OAUTH_TOKEN (`claude setup-token`)",
        "run `claude auth login`",
    ):
        assert BARE.search(told), told
    for told in ("run `claudeloop login`", "`claudeloop claude setup-token`", "a `claude -p`"):
        assert not BARE.search(told), told


def test_no_string_of_the_source_names_the_bare_cli() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in sources()
        for line, text in said_strings(path)
        if BARE.search(text)
    ]
    assert found == []


@pytest.mark.parametrize("path", list(command_paths(cli)), ids=lambda p: " ".join(p) or "root")
def test_no_help_names_the_bare_cli(path: tuple[str, ...]) -> None:
    shown = CliRunner().invoke(cli, [*path, "--help"], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    assert BARE.findall(shown.output) == []


def test_no_guide_names_the_bare_cli() -> None:
    # Not the decision records: they tell what was weighed when, in the words of then.
    pages = [
        ROOT / "README.md",
        ROOT / "AGENTS.md",
        *sorted((ROOT / "docs" / "guides").glob("*.md")),
        *sorted((ROOT / "docs" / "architecture").glob("*.md")),
    ]
    found = [
        f"{page.relative_to(ROOT)}:{number}: {line}"
        for page in pages
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if BARE.search(line)
    ]
    assert found == []


def test_the_login_commands_exist() -> None:
    assert isinstance(cli, click.Group)
    assert {"login", "claude"} <= set(subcommands(cli))
