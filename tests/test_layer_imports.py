"""The inner layers import only what AGENTS.md's table of layers grants: the domain the
standard library, the application the domain and anyio besides.

import-linter can only forbid, so a contract that lists forbidden packages lets through
any package nobody thought to list. This test allows instead: it reads every import of
each module (those inside functions and under TYPE_CHECKING too) and names any that is
neither the standard library (`sys.stdlib_module_names`) nor granted. The contracts in
pyproject.toml still keep the layers of claudeloop apart."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "claudeloop"

# Per inner layer, what it may import besides the standard library. anyio: the runner's
# structured concurrency (a task group beside the turn, the cancel scopes that stop and
# the watchdog use), the same code under asyncio and in the tests.
GRANTED: dict[str, frozenset[str]] = {
    "domain": frozenset({"claudeloop.domain"}),
    "application": frozenset({"claudeloop.domain", "claudeloop.application", "anyio"}),
}


def imports_of(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """Each module `tree` imports, absolute, with its line (`module` resolves the relative
    ones)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: -node.level]
                name = ".".join([*base, *([node.module] if node.module else [])])
            else:
                name = node.module or ""
            found.append((node.lineno, name))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name | ast.Attribute)
            and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr)
            in ("import_module", "__import__")
        ):
            # A module named at run time cannot be checked: the inner layers name none.
            found.append((node.lineno, "<imported by name>"))
    return found


def is_granted(name: str, granted: frozenset[str]) -> bool:
    return name.partition(".")[0] in sys.stdlib_module_names or any(
        name == grant or name.startswith(f"{grant}.") for grant in granted
    )


def strays(layer: str, granted: frozenset[str]) -> list[str]:
    """`path:line module` of each import of `layer` that is not granted."""
    wrong: list[str] = []
    for path in sorted((SOURCE / layer).rglob("*.py")):
        dotted = ".".join(path.relative_to(SOURCE.parent).with_suffix("").parts)
        for line, name in imports_of(ast.parse(path.read_text(encoding="utf-8")), dotted):
            if not is_granted(name, granted):
                wrong.append(f"{path.relative_to(ROOT)}:{line} {name}")
    return wrong


@pytest.mark.parametrize("layer", sorted(GRANTED))
def test_an_inner_layer_imports_only_the_standard_library_and_what_it_is_granted(
    layer: str,
) -> None:
    assert strays(layer, GRANTED[layer]) == []


def test_the_guide_grants_the_application_what_this_test_grants() -> None:
    """AGENTS.md's table says anyio in the application's cell, and nothing beyond the
    standard library in the domain's."""
    guide = (ROOT / "AGENTS.md").read_text(encoding="utf-8")
    rows = {
        line.split("|")[1].strip(): line.split("|")[3]
        for line in guide.split("## Layers", 1)[1].split("\n## ", 1)[0].splitlines()
        if line.startswith("| `src/claudeloop/")
    }
    assert "`anyio`" in rows["`src/claudeloop/application/`"]
    assert rows["`src/claudeloop/domain/`"].split("(")[0].strip() == "the standard library"


@pytest.mark.parametrize(
    ("source", "module", "stray"),
    [
        ("import click\n", "claudeloop.domain.x", ["click"]),
        ("def f():\n    from pydantic import BaseModel\n", "claudeloop.domain.x", ["pydantic"]),
        ("from ..adapters import y\n", "claudeloop.domain.x", ["claudeloop.adapters"]),
        ("import importlib\nimportlib.import_module('rich')\n", "claudeloop.domain.x", None),
        ("import re, json\nfrom datetime import UTC\n", "claudeloop.domain.x", []),
        ("from . import capacity\n", "claudeloop.domain.x", []),
    ],
)
def test_the_check_names_what_a_layer_may_not_import(
    source: str, module: str, stray: list[str] | None
) -> None:
    found = imports_of(ast.parse(source), module)
    names = [name for _, name in found if not is_granted(name, GRANTED["domain"])]
    assert names == (stray if stray is not None else ["<imported by name>"])
