"""The error tree drawn in application/errors.py is the code's: a new exception, a
moved one or a changed exit code fails here until the drawing says so."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import claudeloop
from claudeloop.application import errors
from claudeloop.application.errors import ClaudeloopError

README = Path(__file__).parents[2] / "README.md"
# A class's line of the drawing: the root at the margin, every other after "├── " or
# "└── "; the lines between them go on describing the class above.
_TREE_LINE = re.compile(
    r"^    (?P<lead>(?:[│ ]   )*[├└]── )?(?P<name>[A-Z]\w+)(?:\s+exit (?P<code>\d+))?"
)


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(claudeloop.__path__, "claudeloop."):
        if module_info.name.endswith("__main__"):
            continue  # runs a program when imported
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found[value.__qualname__] = value
    return found


def _drawn_tree() -> list[tuple[int, str, int | None]]:
    """(depth, class name, exit code drawn) for each line of the docstring's drawing."""
    doc = errors.__doc__ or ""
    drawing = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    drawn = []
    for line in drawing.splitlines():
        match = _TREE_LINE.match(line)
        if match is None:
            continue
        code = match["code"]
        depth = len(match["lead"] or "") // 4
        drawn.append((depth, match["name"], int(code) if code else None))
    return drawn


def test_every_exception_of_claudeloop_is_named_on_the_page() -> None:
    doc = errors.__doc__ or ""
    unnamed = [
        name
        for name in _exception_classes()
        if not re.search(rf"(`{name}`|── {name} |^    {name} )", doc, re.M)
    ]
    assert unnamed == []


def test_every_error_a_user_meets_is_defined_in_the_one_module() -> None:
    elsewhere = {
        name: error.__module__
        for name, error in _exception_classes().items()
        if issubclass(error, ClaudeloopError) and error.__module__ != errors.__name__
    }
    assert elsewhere == {}


def test_the_drawing_is_the_hierarchy_with_its_exit_codes() -> None:
    drawn = _drawn_tree()
    in_module = {
        name: value
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, ClaudeloopError)
    }
    assert sorted(name for _, name, _ in drawn) == sorted(in_module)
    parents: dict[int, str] = {}
    for depth, name, code in drawn:
        parents[depth] = name
        error = in_module[name]
        if depth:
            parent = in_module[parents[depth - 1]]
            assert parent in error.__bases__, f"{name} is drawn under {parent.__name__}"
        if code is not None:
            assert error.exit_code == code, name
        else:
            # Undrawn codes are inherited: the class says no code of its own.
            assert "exit_code" not in vars(error), name


def test_each_drawn_exit_code_is_a_documented_one() -> None:
    documented = set(re.findall(r"^\| (\d+) \|", README.read_text(encoding="utf-8"), re.M))
    drawn = {str(code) for _, _, code in _drawn_tree() if code is not None}
    assert drawn
    assert drawn <= documented
