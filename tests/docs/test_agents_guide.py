"""AGENTS.md stays true: every name it writes exists, and its event catalogue is the set
of events the code says."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest

from claudeloop.application.events import EVENT_TYPES
from tests.docs.test_skills import ROOT, span_problem, spans

GUIDE = ROOT / "AGENTS.md"
# Where events are said: the runner, the notifier for its own failures, and the Claude
# Code gateway for the CLI's own retries in the middle of a turn; the runner says a
# request a person sent as the event application/steering.py builds of it.
SPEAKERS = (
    ROOT / "src" / "claudeloop" / "application" / "runner.py",
    # The runner's collaborators say what they did: a turn sent, a check run, a commit.
    *(
        ROOT / "src" / "claudeloop" / "application" / f"{module}.py"
        for module in (
            "turns",
            "verification",
            "checkpointing",
            "plan_keeping",
            "lost_sessions",
            "announcements",
        )
    ),
    ROOT / "src" / "claudeloop" / "application" / "steering.py",
    ROOT / "src" / "claudeloop" / "adapters" / "notify" / "sender.py",
    # The gateway's watch over a turn says turn.retrying as the CLI retries.
    ROOT / "src" / "claudeloop" / "adapters" / "claude_code" / "watching.py",
    # `claudeloop rewind` says branch.rewound, holding the run's lock.
    ROOT / "src" / "claudeloop" / "application" / "branch.py",
)
_EVENT = re.compile(r"^[a-z]+\.[a-z_]+$")


def said_events(path: Path) -> set[str]:
    """Event types a module says: each event class it builds, `TurnFinished(...)`."""
    by_name = {cls.__name__: cls.type for cls in EVENT_TYPES.values()}
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        match node:
            case ast.Call(func=ast.Name(id=name)) if name in by_name:
                found.add(by_name[name])
            case _:
                pass
    return found


def catalogue() -> dict[str, list[str]]:
    """The catalogue's rows: event type -> its fields, as the guide lists them."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("## The event catalogue", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and _EVENT.match(cells[0].strip("`")):
            rows[cells[0].strip("`")] = re.findall(r"`([a-z_]+)`", cells[2])
    return rows


def test_the_catalogue_lists_every_event_the_code_says_and_no_other() -> None:
    said = set().union(*(said_events(path) for path in SPEAKERS))
    assert len(said) > 10, "the event finder found too little: did the runner change?"
    assert set(catalogue()) == said


def test_the_catalogue_names_each_events_fields_in_the_order_events_jsonl_has_them() -> None:
    rows = catalogue()
    for event, cls in EVENT_TYPES.items():
        assert rows.get(event) == [field.name for field in fields(cls)], event


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _source() -> str:
    # The docs' own tests quote names on purpose, stale ones too: not evidence.
    tests = [path for path in (ROOT / "tests").rglob("*.py") if "docs" not in path.parts]
    paths = [*(ROOT / "src" / "claudeloop").rglob("*.py"), *tests]
    return "\n".join(path.read_text(encoding="utf-8") for path in paths)


def guide_span_problem(span: str) -> str | None:
    """The skill's checks, widened to the whole code: the guide names adapters, the
    command line and the tests' fixtures too."""
    problem = span_problem(span)
    if problem is None or span == "--help":
        return None
    source = _source()
    if _IDENTIFIER.match(span):
        defined = rf"^\s*(?:async def|def|class) {span}\b|^\s*{span}\s*[:=]"
        known = re.search(defined, source, re.M) or f'"{span}"' in source
        return None if known else f"{span} is defined nowhere"
    literal = span.removesuffix("...").strip()
    return None if literal in source else problem


def test_every_span_the_guide_writes_is_true_of_the_repository() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("## The event catalogue", 1)
    # The catalogue's names are checked against the code above.
    body = section[0] + section[1].split("\n## ", 1)[1]
    found = spans(body)
    assert len(found) > 30
    problems = [f"`{span}`: {problem}" for span in found if (problem := guide_span_problem(span))]
    assert not problems, "AGENTS.md names what the code no longer has:\n" + "\n".join(problems)


def test_claude_code_reads_the_guide() -> None:
    assert "@AGENTS.md" in (ROOT / "CLAUDE.md").read_text(encoding="utf-8").split()


@pytest.mark.parametrize(
    ("span", "wrong"),
    [
        ("UsageError", False),
        ("IS_SANDBOX", False),
        ("claudeloop: error: ...", False),
        ("NoSuchGateway", True),
        ("CLAUDELOOP_NO_SUCH_VARIABLE", True),
        ("src/claudeloop/cli/nowhere.py", True),
    ],
)
def test_the_checker_tells_true_spans_from_stale_ones(span: str, wrong: bool) -> None:
    assert (guide_span_problem(span) is not None) is wrong


def test_the_layer_table_grants_no_import_a_contract_forbids() -> None:
    """Each layer's "may import" cell names no package its import contract forbids
    (the guide once let the rehearsal import the application, which a contract forbids)."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    section = GUIDE.read_text(encoding="utf-8").split("## Layers", 1)[1].split("\n## ", 1)[0]
    may: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        found = re.fullmatch(r"`src/claudeloop/([a-z_]+)/`", cells[0]) if len(cells) == 3 else None
        if found:
            may[f"claudeloop.{found[1]}"] = cells[2].split("(")[0]
    assert set(may) >= {"claudeloop.domain", "claudeloop.rehearsal", "claudeloop.application"}
    checked = 0
    for contract in contracts["contracts"]:
        # A contract with exceptions (the cli's composition root) is said in words.
        if contract["type"] != "forbidden" or contract.get("ignore_imports"):
            continue
        for source in contract["source_modules"]:
            if source not in may:
                continue
            for forbidden in contract["forbidden_modules"]:
                if forbidden.startswith("claudeloop."):
                    layer = forbidden.removeprefix("claudeloop.")
                    assert not re.search(rf"\b{layer}\b", may[source]), (source, forbidden)
                    checked += 1
    assert checked >= 8


_LAYERS = ("domain", "application", "adapters", "rehearsal", "cli")


def _import_contracts() -> list[dict[str, object]]:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contracts: list[dict[str, object]] = config["contracts"]
    return contracts


def _layers_section() -> str:
    return GUIDE.read_text(encoding="utf-8").split("## Layers", 1)[1].split("\n## ", 1)[0]


def _contract_forbids(contracts: list[dict[str, object]], source: str, target: str) -> bool:
    """Whether a contract keeps `claudeloop.<source>` from importing `claudeloop.<target>`:
    a forbidden contract without exceptions, or the layers contract (an outer or a
    sibling layer)."""
    for contract in contracts:
        if contract["type"] == "forbidden" and not contract.get("ignore_imports"):
            sources = contract["source_modules"]
            forbidden = contract["forbidden_modules"]
            assert isinstance(sources, list)
            assert isinstance(forbidden, list)
            if f"claudeloop.{source}" in sources and f"claudeloop.{target}" in forbidden:
                return True
        if contract["type"] == "layers":
            layers = contract["layers"]
            assert isinstance(layers, list)
            rank = {
                name.strip().removeprefix("claudeloop."): depth
                for depth, layer in enumerate(layers)
                for name in layer.split("|")
            }
            if source in rank and target in rank and rank[target] <= rank[source]:
                return True
    return False


def test_every_layer_the_table_does_not_grant_is_forbidden_by_a_contract() -> None:
    """The other way round: what the guide's "may import" cell of a layer leaves out,
    an import contract forbids, so the table says what `lint-imports` holds (the cli
    may import everything; its one rule is the next test's)."""
    contracts = _import_contracts()
    may: dict[str, str] = {}
    for line in _layers_section().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        found = re.fullmatch(r"`src/claudeloop/([a-z_]+)/`", cells[0]) if len(cells) == 3 else None
        if found:
            may[found[1]] = cells[2].split("(")[0]
    assert set(may) == set(_LAYERS)
    for source, granted in may.items():
        if source == "cli":
            assert granted.startswith("everything"), granted
            continue
        for target in _LAYERS:
            if target == source or re.search(rf"\b{target}\b", granted):
                continue
            assert _contract_forbids(contracts, source, target), (
                f"AGENTS.md lets {source} import no {target}, but no contract forbids it"
            )


def test_the_composition_root_the_guide_names_is_the_contracts_one_exception() -> None:
    """ "Only the composition root imports an adapter": the cli's contract excepts the
    package the guide names as the root, and nothing else; "DBOS is imported in one
    module": the contract on DBOS excepts the module the guide names."""
    contracts = {str(contract["name"]): contract for contract in _import_contracts()}
    section = _layers_section()
    root = re.search(r"the composition root \(the package `src/claudeloop/([a-z_/]+)/`", section)
    assert root is not None
    package = "claudeloop." + root[1].replace("/", ".")
    cli = contracts["cli imports adapters only through the composition root"]
    excepted = cli["ignore_imports"]
    assert isinstance(excepted, list)
    assert excepted
    for rule in excepted:
        importer = str(rule).split(" -> ")[0]
        assert importer in (package, f"{package}.*"), rule
    said = re.search(
        r"\(`src/claudeloop/([a-z_/]+)\.py`, the one module that imports DBOS", section
    )
    assert said is not None
    dbos = contracts["DBOS is imported by the fleet's adapter alone"]
    assert dbos["ignore_imports"] == [f"claudeloop.{said[1].replace('/', '.')} -> dbos"]
