"""Every use case answers with a frozen dataclass or a closed union, never a dict read
by key (issue 49, item 3): no function of application/ is annotated to return a
`dict[str, Any]` (or a `Mapping`, `Dict` or `MutableMapping` of `Any`), however it is
nested (`list[dict[str, Any]]`, `dict[str, Any] | None`). A JSON form says what it is
(`application.json_form.JsonObject`), and is made from the typed value in one place."""

from __future__ import annotations

import ast
import re
from pathlib import Path

APPLICATION = Path(__file__).resolve().parents[2] / "src" / "claudeloop" / "application"

# A mapping of anything, as an annotation spells it.
_UNTYPED = re.compile(r"\b(?:dict|Dict|Mapping|MutableMapping)\[str, (?:typing\.)?Any\]")

# Answers another piece of work converts (the branch use cases' port): named here until
# it lands, each by its function.
_NOT_YET = {
    ("branch.py", "events"),
}


def untyped_answers(root: Path) -> list[str]:
    """Each function under `root` whose return annotation is a mapping of `Any`."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if node.returns is None or not _UNTYPED.search(ast.unparse(node.returns)):
                continue
            if (path.name, node.name) in _NOT_YET:
                continue
            found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    return found


def test_no_use_case_of_application_answers_with_a_dict_of_anything() -> None:
    assert untyped_answers(APPLICATION) == []


def test_the_check_finds_an_answer_of_a_dict_of_anything(tmp_path: Path) -> None:
    (tmp_path / "status.py").write_text(
        "from typing import Any\n"
        "def status() -> dict[str, Any]: ...\n"
        "def rows() -> list[dict[str, Any]]: ...\n"
        "def view() -> 'Mapping[str, Any] | None': ...\n"
        "def typed() -> dict[str, int]: ...\n",
        encoding="utf-8",
    )
    assert untyped_answers(tmp_path) == [
        "status.py:2 status",
        "status.py:3 rows",
        "status.py:4 view",
    ]
