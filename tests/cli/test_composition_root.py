"""The composition root only wires: a command gets from it a wired object or a port's
implementation, never an adapter's own name passed on (a class, a function, a constant,
a module), which would let the command reach past the use cases into the adapter."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

import claudeloop.cli

CLI = Path(claudeloop.cli.__file__).parent
ROOT = "claudeloop.cli.bootstrap"


def adapter_names(module: str) -> set[str]:
    """The names a module of the root binds by importing them from an adapter."""
    path = Path(importlib.import_module(module).__file__ or "")
    bound: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "claudeloop.adapters"
        ):
            bound |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            bound |= {
                alias.asname or alias.name
                for alias in node.names
                if alias.name.startswith("claudeloop.adapters")
            }
    return bound


def from_an_adapter(value: object) -> bool:
    if isinstance(value, ModuleType):
        return value.__name__.startswith("claudeloop.adapters")
    return str(getattr(value, "__module__", "")).startswith("claudeloop.adapters")


COMMAND_MODULES = sorted(
    path for path in CLI.rglob("*.py") if "bootstrap" not in path.relative_to(CLI).parts
)


@pytest.mark.parametrize("path", COMMAND_MODULES, ids=lambda p: str(p.relative_to(CLI)))
def test_a_command_module_takes_no_adapter_name_from_the_root(path: Path) -> None:
    passed_on = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(ROOT):
            continue
        module = importlib.import_module(node.module or "")
        for alias in node.names:
            value = getattr(module, alias.name)
            if alias.name in adapter_names(module.__name__) or from_an_adapter(value):
                passed_on.append(f"{node.module}.{alias.name}")
    assert passed_on == []
