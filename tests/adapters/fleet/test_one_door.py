"""DBOS has one door: adapters/fleet/dbos_app.py is the only module of claudeloop that
imports `dbos` or names one of DBOS's tables, so swapping the queue's engine starts
there (issue 41). The import contract in pyproject.toml allows the whole fleet package;
this holds it to the one module."""

from __future__ import annotations

import ast
from pathlib import Path

import claudeloop

SOURCE = Path(claudeloop.__file__).parent
DOOR = SOURCE / "adapters" / "fleet" / "dbos_app.py"
DBOS_TABLES = ("workflow_status", "workflow_input", "workflow_output", "operation_outputs")


def _imports_dbos(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            alias.name.split(".")[0] == "dbos" for alias in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "dbos":
            return True
    return False


def test_only_the_dbos_app_imports_dbos_or_reads_its_tables() -> None:
    importing = []
    reading = []
    for path in sorted(SOURCE.rglob("*.py")):
        text = path.read_text()
        if _imports_dbos(ast.parse(text)):
            importing.append(path.relative_to(SOURCE).as_posix())
        if any(table in text for table in DBOS_TABLES):
            reading.append(path.relative_to(SOURCE).as_posix())
    door = DOOR.relative_to(SOURCE).as_posix()
    assert importing == [door]
    assert reading == [door]


def test_the_one_private_call_of_dbos_is_named_once() -> None:
    callers = [
        path.relative_to(SOURCE).as_posix()
        for path in sorted(SOURCE.rglob("*.py"))
        if "DBOS._" in path.read_text()
    ]
    assert callers == [DOOR.relative_to(SOURCE).as_posix()]
