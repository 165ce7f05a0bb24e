"""The composition root (cli/bootstrap/) only wires: it names the adapter that fills each
port and hands the use cases their collaborators, and decides nothing. A rule there (a
refusal, a path remapped, a file cleaned up) is one no use case's test sees and no
adapter's test reaches: it belongs to the use case (application/) or to the adapter of
the thing it is about. So no `if`, `raise`, loop, `try`, `match` or comprehension in the
root, but for the few below, each with its reason; and the whole root stays short
enough to read at once, as cosmicpython's bootstrap.py is.

What is no decision: a part wired or left out by a setting (`part if setting else
None`), a default (`given or made`), and the imports only the type checker reads."""

from __future__ import annotations

import ast
from pathlib import Path

import claudeloop.cli.bootstrap

ROOT = Path(claudeloop.cli.bootstrap.__file__).parent
MOST_LINES = 500
DECISIONS: dict[type[ast.AST], str] = {
    ast.If: "if",
    ast.IfExp: "if-else",
    ast.Raise: "raise",
    ast.Assert: "assert",
    ast.For: "for",
    ast.AsyncFor: "async for",
    ast.While: "while",
    ast.Try: "try",
    ast.TryStar: "try",
    ast.Match: "match",
    ast.ListComp: "comprehension",
    ast.SetComp: "comprehension",
    ast.DictComp: "comprehension",
    ast.GeneratorExp: "comprehension",
}
# Where the root may decide, by the function's dotted name in the package, and why.
ALLOWED = {
    "runs.wire_run.close": (
        "what was opened for a run is closed in order, and its lock released whatever "
        "fails (checkpoints exist only on a committing run)"
    ),
}


def _for_the_type_checker(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"


def _wired_or_left_out(node: ast.IfExp) -> bool:
    return any(
        isinstance(branch, ast.Constant) and branch.value is None
        for branch in (node.body, node.orelse)
    )


def decisions(source: str, module: str) -> list[tuple[str, str, int]]:
    """Each decision in `source`: the dotted name of the function it is in (the module
    alone at module level), what it is, its line."""
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = f"{where}.{child.name}"
            kind = DECISIONS.get(type(child))
            if kind is not None and not (
                (isinstance(child, ast.IfExp) and _wired_or_left_out(child))
                or _for_the_type_checker(child)
            ):
                found.append((where, kind, getattr(child, "lineno", 0)))
            visit(child, inner)

    visit(ast.parse(source), module)
    return found


def modules() -> dict[str, str]:
    return {
        path.stem if path.stem != "__init__" else "bootstrap": path.read_text(encoding="utf-8")
        for path in sorted(ROOT.glob("*.py"))
    }


def test_the_root_decides_nothing_but_what_is_allowed() -> None:
    decided = [
        f"cli/bootstrap/{module}: {kind} in {where} (line {line})"
        for module, source in modules().items()
        for where, kind, line in decisions(source, module)
        if where not in ALLOWED
    ]
    assert decided == [], (
        "the composition root only wires: move each rule to its use case or adapter, "
        "or name it in ALLOWED with why"
    )


def test_each_allowed_decision_is_still_made_there() -> None:
    made = {
        where for module, source in modules().items() for where, _, _ in decisions(source, module)
    }
    assert sorted(set(ALLOWED) - made) == []


def test_the_root_reads_at_once() -> None:
    lines = sum(len(source.splitlines()) for source in modules().values())
    assert lines <= MOST_LINES


def test_a_rule_written_in_the_root_is_found() -> None:
    source = """
def wire(spec):
    if spec.checkpoint:
        raise ValueError("no repository")
    parts = [part for part in spec.parts]
    chosen = spec.model if spec.model else "default"
    optional = spec.review if spec.verify else None
    return parts, chosen, optional, spec.lock or "taken"
"""
    assert [(where, kind) for where, kind, _ in decisions(source, "runs")] == [
        ("runs.wire", "if"),
        ("runs.wire", "raise"),
        ("runs.wire", "comprehension"),
        ("runs.wire", "if-else"),
    ]
