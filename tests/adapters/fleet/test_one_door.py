"""DBOS has one door, and goes through DBOS's own front door: adapters/fleet/dbos_app.py
is the only module of claudeloop that imports `dbos` (the import contract in
pyproject.toml allows the whole fleet package; this holds it to the one module, behind
the `QueueEngine` port of adapters/fleet/queue_engine.py), and no module names one of
DBOS's tables or a private name of it (issue 49): what a DBOS release may change without
notice, claudeloop does not touch."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import claudeloop

SOURCE = Path(claudeloop.__file__).parent
DOOR = SOURCE / "adapters" / "fleet" / "dbos_app.py"
# DBOS's tables, its private recovery, and any private name of its modules or class
# (`dbos._sys_db`, `DBOS._recover_pending_workflows`, `DBOS._sys_db`).
INSIDES = re.compile(
    r"_recover_pending_workflows|workflow_status|workflow_input|workflow_output"
    r"|operation_outputs|\bdbos\._|\bDBOS\._"
)


def _imports_dbos(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            alias.name.split(".")[0] == "dbos" for alias in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "dbos":
            return True
    return False


def test_only_the_dbos_app_imports_dbos() -> None:
    importing = [
        path.relative_to(SOURCE).as_posix()
        for path in sorted(SOURCE.rglob("*.py"))
        if _imports_dbos(ast.parse(path.read_text()))
    ]
    assert importing == [DOOR.relative_to(SOURCE).as_posix()]


def test_no_module_touches_dbos_insides() -> None:
    touching = [
        f"{path.relative_to(SOURCE).as_posix()}:{number}: {line.strip()}"
        for path in sorted(SOURCE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if INSIDES.search(line)
    ]
    assert touching == []


def test_the_pattern_finds_what_it_names() -> None:
    """The pattern above is not one that cannot fail."""
    for insider in (
        "DBOS._recover_pending_workflows(executors)",
        "from dbos._sys_db import SystemDatabase",
        "SELECT status FROM dbos.workflow_status",
        "DBOS._sys_db.engine",
    ):
        assert INSIDES.search(insider), insider
    for public in ("DBOS.list_workflows(name=WORKFLOW)", "from dbos import error as errors"):
        assert not INSIDES.search(public), public


def _imports_the_dbos_app(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module == "claudeloop.adapters.fleet.dbos_app" or (
                module == "claudeloop.adapters.fleet"
                and any(alias.name == "dbos_app" for alias in node.names)
            ):
                return True
        if isinstance(node, ast.Import) and any(
            alias.name == "claudeloop.adapters.fleet.dbos_app" for alias in node.names
        ):
            return True
    return False


def test_only_the_port_wires_the_engine() -> None:
    """The worker and the queue ask the `QueueEngine` port, never DBOS's module: another
    engine is a module of its own and the port's line that makes it."""
    wiring = [
        path.relative_to(SOURCE).as_posix()
        for path in sorted(SOURCE.rglob("*.py"))
        if _imports_the_dbos_app(ast.parse(path.read_text()))
    ]
    assert wiring == ["adapters/fleet/queue_engine.py"]
