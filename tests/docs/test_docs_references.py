"""The pages under docs/ point at things that exist: links, source files and tests."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.commands import subcommands

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md"))
PACKAGE = ROOT / "src" / "claudeloop"

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_SOURCE = re.compile(r"^[\w./-]+\.py$")
_TEST = re.compile(r"^test_\w+$")


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _defined_tests() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "tests").rglob("*.py"):
        found.update(re.findall(r"^\s*(?:async )?def (test_\w+)", path.read_text(), re.M))
    return found


def _defines(path: Path, name: str) -> bool:
    pattern = rf"^\s*(?:async )?(?:def|class) {re.escape(name)}\b"
    return re.search(pattern, path.read_text(encoding="utf-8"), re.M) is not None


def test_there_are_pages_to_check() -> None:
    names = {_page_id(page) for page in PAGES}
    assert "docs/architecture/architecture.md" in names
    assert "docs/reference/cli.md" in names


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if "://" in target or target.startswith(("#", "mailto:")):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{_page_id(page)} links to what does not exist: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_source_file_and_test_a_page_names_exists(page: Path) -> None:
    """A `*.py` path is read from the repository root, then from src/claudeloop/ (a bare
    file name anywhere in it); a `path.py::name` must define `name`; a bare `test_*` must
    be a test under tests/."""
    tests = _defined_tests()
    missing = []
    for span in _SPAN.findall(page.read_text(encoding="utf-8")):
        path, _, name = span.strip().partition("::")
        if _SOURCE.match(path):
            # A bare file name is a module somewhere in the package (`runner.py`).
            candidates = [ROOT / path, PACKAGE / path]
            if "/" not in path:
                candidates += sorted(PACKAGE.rglob(path))
            found = next((c for c in candidates if c.is_file()), None)
            if found is None or (name and not _defines(found, name)):
                missing.append(span)
        elif _TEST.match(path) and path not in tests:
            missing.append(span)
    assert not missing, f"{_page_id(page)} names what does not exist: {missing}"


_FENCED = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_INVOCATION = re.compile(r"(?:^|[\s`(/=])claudeloop((?:[ \t]+[^\s#|;&`]+)+)")


def _code_lines(text: str) -> list[str]:
    """The lines of fenced blocks and the inline code spans outside them."""
    lines = [line for _, block in _FENCED.findall(text) for line in block.splitlines()]
    return lines + _SPAN.findall(_FENCED.sub("", text))


def _invocation_problem(words: list[str]) -> str | None:
    """Why `claudeloop WORDS` is not a command line the CLI accepts, or None."""
    import click

    from claudeloop.cli.main import cli

    command: click.Command = cli
    help_options = {"-h", "--help"}
    options = help_options | {opt for p in cli.params for opt in (*p.opts, *p.secondary_opts)}
    for word in words:
        if word.startswith("-") and word != "-":  # a lone "-" is a value: stdin
            flag = word.split("=", 1)[0]
            if flag not in options:
                return f"{command.name} has no option {flag}"
        elif isinstance(command, click.Group):
            sub = subcommands(command).get(word)
            if sub is None:
                return f"no command {word!r}"
            command = sub
            if sub.context_settings.get("allow_interspersed_args") is False:
                return None  # `claudeloop claude ARGS`: the rest are the CLI's own words
            options = help_options | {
                opt for p in sub.params for opt in (*p.opts, *p.secondary_opts)
            }
    return None


# The reference is the CLI's own help, kept current by test_cli_reference.py.
WRITTEN_PAGES = [page for page in PAGES if page.name != "cli.md"]


@pytest.mark.parametrize("page", WRITTEN_PAGES, ids=_page_id)
def test_every_claudeloop_command_a_page_shows_exists(page: Path) -> None:
    """`claudeloop SUB ... --flag` in a code block or span: SUB is a command, every flag
    one of its options. (Output lines such as `claudeloop: done` are not invocations.)"""
    wrong = []
    for line in _code_lines(page.read_text(encoding="utf-8")):
        for match in _INVOCATION.finditer(line):
            words = match.group(1).split()
            if not words or not re.match(r"^[a-z-]", words[0]):
                continue
            problem = _invocation_problem([w.strip("\"'") for w in words])
            if problem:
                wrong.append(f"{match.group(0).strip()}: {problem}")
    assert not wrong, f"{_page_id(page)} shows command lines the CLI refuses: {wrong}"


@pytest.mark.parametrize(
    ("words", "accepted"),
    [
        (["run", "PLAN.md", "--max-dollars", "20"], True),
        (["config", "show", "--profile", "local", "--json"], True),
        (["resume", "--run-id=20261130-101500-a1b2c3"], True),
        (["run", "--no-such-flag"], False),
        (["teleport"], False),
        (["config", "unset"], False),
        (["status", "--help"], True),
    ],
)
def test_the_command_check_tells_real_command_lines_from_made_up_ones(
    words: list[str], accepted: bool
) -> None:
    assert (_invocation_problem(words) is None) is accepted
