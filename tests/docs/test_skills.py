"""The agent skill is written once and stays true of the code.

The domain skill is one file (Claude Code's); other agents find it through a link to its
directory, and Cursor's rule says when to apply it and points to it. Everything the skill
writes in inline backticks is checked against the repository: a path must exist, a test
must be defined, a flag must be an option of some command, a command must be a Makefile
target or a `claudeloop` command, and a name or expression must only use names the
domain and application packages define. A span none of these rules can check fails too:
put it in a fenced block.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import enum
import importlib
import inspect
import keyword
import pkgutil
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType

import click
import pytest

from claudeloop.cli.main import cli
from tests.commands import subcommands

ROOT = Path(__file__).resolve().parents[2]
SKILL = "claudeloop-domain-model"
CLAUDE = ROOT / ".claude" / "skills" / SKILL / "SKILL.md"
AGENTS = ROOT / ".agents" / "skills" / SKILL / "SKILL.md"
CURSOR = ROOT / ".cursor" / "rules" / f"{SKILL}.mdc"
INDEXED_PACKAGES = ("claudeloop.domain", "claudeloop.application")
DOMAIN = ROOT / "src" / "claudeloop" / "domain"

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_TEST_NAME = re.compile(r"^test_\w+$")
_FILE_NAME = re.compile(r"^[\w.-]+\.(?:py|md|mdc|toml|json|jsonl|log|txt|png)$")


# Front matter ------------------------------------------------------------------------


def split_front_matter(path: Path) -> tuple[dict[str, str], str]:
    """The `key: value` lines between the opening `---` and the next, and the body."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path.relative_to(ROOT)}: no front matter"
    head, separator, body = text[4:].partition("\n---\n")
    assert separator, f"{path.relative_to(ROOT)}: the front matter is never closed"
    fields: dict[str, str] = {}
    for line in head.splitlines():
        key, colon, value = line.partition(":")
        assert colon, f"{path.relative_to(ROOT)}: {line!r} is not `key: value`"
        value = value.strip()
        # A YAML plain scalar: agents' loaders refuse these, or read them otherwise.
        assert ": " not in value, f"{path.relative_to(ROOT)}: ': ' in {key}"
        assert " #" not in value, f"{path.relative_to(ROOT)}: ' #' in {key}"
        assert not value.startswith(tuple("!&*>|%@`'\"[]{},#?-")), f"{path.name}: {key}"
        fields[key.strip()] = value
    return fields, body


def test_the_claude_and_agents_skills_name_themselves_and_say_when_to_consult_them() -> None:
    for path in (CLAUDE, AGENTS):
        fields, _ = split_front_matter(path)
        assert fields.get("name") == SKILL, path
        description = fields.get("description", "")
        assert "src/claudeloop/domain/" in description, path
        assert "Consult" in description or "consult" in description, path


def test_the_cursor_rule_applies_to_the_domain_on_request() -> None:
    fields, _ = split_front_matter(CURSOR)
    assert fields.get("description"), "the Cursor rule needs a description"
    assert fields.get("globs") == "src/claudeloop/domain/**"
    assert fields.get("alwaysApply") == "false"


def test_other_agents_and_cursor_reach_the_one_skill() -> None:
    link = AGENTS.parent
    assert link.is_symlink(), f"{link.relative_to(ROOT)} must link to the one skill"
    assert link.resolve() == CLAUDE.parent.resolve()
    _, body = split_front_matter(CURSOR)
    assert f"@{CLAUDE.relative_to(ROOT)}" in body.split(), "the Cursor rule must point to it"
    assert len(body.splitlines()) < 20, "the Cursor rule points to the skill, not a copy"


# What a span may name -------------------------------------------------------------


def _modules() -> Iterator[ModuleType]:
    for package_name in INDEXED_PACKAGES:
        package = importlib.import_module(package_name)
        yield package
        for info in pkgutil.iter_modules(package.__path__, f"{package_name}."):
            yield importlib.import_module(info.name)


@cache
def known_names() -> frozenset[str]:
    """Every name the domain and application define or use: module names, module
    attributes, class attributes and fields, enum members, function parameters."""
    names: set[str] = set(dir(builtins)) | set(keyword.kwlist) | set(keyword.softkwlist)
    for module in _modules():
        names.add(module.__name__.rsplit(".", 1)[-1])
        names.update(dir(module))
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__.startswith("claudeloop."):
                names.update(dir(value))
                if dataclasses.is_dataclass(value):
                    names.update(field.name for field in dataclasses.fields(value))
                if issubclass(value, enum.Enum):
                    names.update(value.__members__)
                for member in vars(value).values():
                    if inspect.isfunction(member):
                        names.update(inspect.signature(member).parameters)
            elif inspect.isfunction(value) and value.__module__.startswith("claudeloop."):
                names.update(inspect.signature(value).parameters)
    return frozenset(names)


def _resolves(dotted: str) -> bool:
    """`Module.attr`, `Class.field`, `Enum.MEMBER`, or a module's own dotted name."""
    first, *rest = dotted.split(".")
    try:
        importlib.import_module(dotted)
        return True
    except ImportError:
        pass
    owners: list[object] = []
    for module in _modules():
        if module.__name__.rsplit(".", 1)[-1] == first:
            owners.append(module)
        elif hasattr(module, first):
            owners.append(getattr(module, first))
    for owner in owners:
        value: object = owner
        for part in rest:
            fields = (
                {field.name for field in dataclasses.fields(value)}
                if isinstance(value, type) and dataclasses.is_dataclass(value)
                else set()
            )
            if hasattr(value, part):
                value = getattr(value, part)
            elif part in fields:
                value = None
            else:
                break
        else:
            return True
    return False


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


@cache
def _domain_source() -> str:
    """The source of the packages a skill's names come from (see INDEXED_PACKAGES)."""
    package = ROOT / "src" / "claudeloop"
    paths = sorted(DOMAIN.glob("*.py")) + sorted((package / "application").glob("*.py"))
    return "\n".join(path.read_text(encoding="utf-8") for path in paths)


def expression_problems(span: str) -> list[str] | None:
    """What in a Python-looking span does not exist, or None when it is not Python."""
    try:
        tree = ast.parse(span.removeprefix("@"), mode="eval")
    except SyntaxError:
        return None
    problems: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if dotted is not None and not _resolves(dotted):
                problems.append(dotted)
            elif dotted is None and node.attr not in known_names():
                problems.append(node.attr)
        elif isinstance(node, ast.Name) and node.id not in known_names():
            problems.append(node.id)
        elif isinstance(node, ast.keyword) and node.arg and node.arg not in known_names():
            problems.append(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            source = _domain_source()
            if f'"{node.value}"' not in source and f"`{node.value}`" not in source:
                problems.append(f"the literal {node.value!r} (not in the source)")
    return problems


def _options(command: click.Command) -> Iterator[str]:
    for parameter in command.params:
        yield from parameter.opts
        yield from parameter.secondary_opts
    if isinstance(command, click.Group):
        for sub in subcommands(command).values():
            yield from _options(sub)


def _is_command(words: list[str]) -> bool:
    command: click.Command = cli
    for word in words:
        if word.startswith("-") or not isinstance(command, click.Group):
            break
        sub = subcommands(command).get(word)
        if sub is None:
            return False
        command = sub
    return True


@cache
def _defined_tests() -> frozenset[str]:
    found = set()
    for path in (ROOT / "tests").rglob("*.py"):
        found.update(re.findall(r"^\s*(?:async )?def (test_\w+)", path.read_text(), re.M))
    return frozenset(found)


def _quoted_in_source(name: str) -> bool:
    return any(
        f'"{name}"' in path.read_text(encoding="utf-8")
        for path in (ROOT / "src" / "claudeloop").rglob("*.py")
    )


def span_problem(span: str) -> str | None:
    """Why a backticked span is not true of the repository, or None when it is."""
    text = span.strip()
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    if "::" in text:
        path, _, name = text.partition("::")
        file = ROOT / path
        if not file.is_file():
            return f"{path} does not exist"
        if not re.search(
            rf"^\s*(?:async )?(?:def|class) {re.escape(name)}\b", file.read_text(), re.M
        ):
            return f"{name} is not defined in {path}"
        return None
    if text.startswith("-"):
        flag = text.split()[0].split("=", 1)[0]
        return None if flag in set(_options(cli)) else f"no command has the option {flag}"
    if text.startswith("make "):
        target = text.split()[1]
        return None if re.search(rf"^{re.escape(target)}:", makefile, re.M) else "no such target"
    if text.startswith("claudeloop ") or text == "claudeloop":
        return None if _is_command(text.split()[1:]) else "no such claudeloop command"
    if text in makefile:
        return None
    if "/" in text and " " not in text:
        matches = list(ROOT.glob(text.rstrip("/"))) if "*" in text else [ROOT / text]
        return None if any(path.exists() for path in matches) else f"{text} does not exist"
    if _FILE_NAME.match(text):
        if (ROOT / text).exists() or (text.endswith(".py") and (DOMAIN / text).is_file()):
            return None
        return None if _quoted_in_source(text) else f"no file {text} in the repo or the domain"
    if text in _domain_source():
        return None  # quoted from the domain's own source (a docstring's example)
    if _TEST_NAME.match(text):
        return None if text in _defined_tests() else f"no test named {text} under tests/"
    problems = expression_problems(text)
    if problems is None:
        return "cannot be checked: write a path, name, test, flag or command, or fence it"
    if problems:
        return "does not exist: " + ", ".join(problems)
    return None


def spans(body: str) -> list[str]:
    """The inline code spans outside fenced blocks, in order."""
    return _SPAN.findall(_FENCE.sub("", body))


def test_every_span_the_skill_writes_is_true_of_the_repository() -> None:
    _, body = split_front_matter(CLAUDE)
    found = spans(body)
    assert len(found) > 100, "the span pattern found too little: is the skill still there?"
    problems = [f"`{span}`: {problem}" for span in found if (problem := span_problem(span))]
    assert not problems, "the skill names what the code no longer has:\n" + "\n".join(problems)


def test_the_skill_names_every_domain_module() -> None:
    _, body = split_front_matter(CLAUDE)
    for path in sorted(DOMAIN.glob("*.py")):
        if path.name != "__init__.py":
            assert f"`src/claudeloop/domain/{path.name}`" in body, f"the skill omits {path.name}"


@pytest.mark.parametrize(
    ("span", "wrong"),
    [
        ("src/claudeloop/domain/nowhere.py", True),
        ("test_a_test_nobody_wrote", True),
        ("tests/domain/test_loop.py::test_nobody_wrote_this", True),
        ("CreditsExhausted.resets_at", True),
        ("WaitPolicyConfig.probe_jitter", True),
        ('assistant_error == "made_up_error"', True),
        ("--no-such-flag", True),
        ("make no-such-target", True),
        ("claudeloop teleport", True),
        ("- [ ]", True),
        ("WindowExhausted.resets_at", False),
        ("tests/domain/test_loop.py::test_after_turn_limit_outranks_completion_claim", False),
        ('assistant_error == "billing_error"', False),
        ("now + credits_backoff(probe_count, config)", False),
        ("Done | Continue | Blocked", False),
        ("ControlCommand.WIND_DOWN", False),
        ("--max-wait", False),
        ("make bench", False),
        ("claudeloop config show", False),
        ("classify.py", False),
        ("state.json", False),
    ],
)
def test_the_checker_tells_true_spans_from_stale_ones(span: str, wrong: bool) -> None:
    assert (span_problem(span) is not None) is wrong, span_problem(span)
