"""`claudeloop init`'s rules: which test command a project's files point to, and the files
it writes, never over one already there."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claudeloop.application.project_setup import (
    PLAN_FILE,
    READ_FILES,
    FoundCheck,
    ProjectFiles,
    SetUp,
    config_text,
    found_checks,
    plan_text,
    set_up,
)
from claudeloop.domain.plan import WorkPlan


def commands(texts: dict[str, str], *, tests: bool = False) -> list[str]:
    return [found.command for found in found_checks(ProjectFiles(texts, tests))]


# --- make ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "makefile",
    [
        "test:\n\tpytest\n",
        "build:\n\tcc x.c\n\ntest: build\n\t./x --self-test\n",
        "check test: lint\n\truff .\n",
        "test :\n\ttrue\n",
        "test::\n\ttrue\n",
        "test: VERBOSE := 1\n",
        "test:\r\n\ttrue\r\n",
    ],
    ids=["bare", "after-another", "one-of-two", "space", "double-colon", "target-var", "crlf"],
)
def test_a_makefile_with_a_test_target_is_make_test(makefile: str) -> None:
    found = found_checks(ProjectFiles({"Makefile": makefile}))
    assert found == (FoundCheck("make test", "Makefile has a test target"),)


@pytest.mark.parametrize(
    "makefile",
    [
        ".PHONY: test\n",
        "test := pytest\n",
        "test ::= pytest\n",
        "test = pytest\n",
        "test-unit:\n\tpytest\n",
        "all:\n\t@echo test: ok\n",
        "# test: not a rule\n",
        "",
    ],
    ids=["phony", "simple-var", "posix-var", "var", "other-target", "recipe", "comment", "empty"],
)
def test_a_makefile_without_a_test_target_proposes_nothing(makefile: str) -> None:
    assert commands({"Makefile": makefile}) == []


def test_make_reads_the_first_of_its_names_only() -> None:
    # GNU make reads GNUmakefile before makefile before Makefile, and only that one.
    shadowed = {"GNUmakefile": "all:\n\ttrue\n", "Makefile": "test:\n\ttrue\n"}
    assert commands(shadowed) == []
    found = found_checks(ProjectFiles({"makefile": "test:\n\ttrue\n"}))
    assert found[0].because == "makefile has a test target"


# --- pytest -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("texts", "because"),
    [
        ({"pytest.ini": "[pytest]\n"}, "pytest.ini configures pytest"),
        (
            {"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"},
            "pyproject.toml names pytest",
        ),
        (
            {"pyproject.toml": '[project.optional-dependencies]\ndev = ["pytest>=8", "ruff"]\n'},
            "pyproject.toml names pytest",
        ),
        (
            {"pyproject.toml": '[dependency-groups]\ntest = ["pytest"]\n'},
            "pyproject.toml names pytest",
        ),
        (
            {"pyproject.toml": '[tool.poetry.group.dev.dependencies]\npytest = "^8.0"\n'},
            "pyproject.toml names pytest",
        ),
        ({"setup.cfg": "[tool:pytest]\ntestpaths = tests\n"}, "setup.cfg names pytest"),
        (
            {"setup.cfg": "[options.extras_require]\ntesting =\n    pytest\n    mock\n"},
            "setup.cfg names pytest",
        ),
        ({"tox.ini": "[pytest]\naddopts = -q\n"}, "tox.ini has a [pytest] section"),
    ],
    ids=["pytest.ini", "tool-table", "extra", "group", "poetry", "cfg-section", "cfg-extra", "tox"],
)
def test_a_python_project_that_names_pytest_is_pytest(texts: dict[str, str], because: str) -> None:
    assert found_checks(ProjectFiles(texts)) == (FoundCheck("pytest", because),)


@pytest.mark.parametrize("python_file", ["pyproject.toml", "setup.cfg"])
def test_a_python_project_with_a_tests_directory_is_pytest(python_file: str) -> None:
    found = found_checks(ProjectFiles({python_file: ""}, has_tests_directory=True))
    assert found == (FoundCheck("pytest", f"{python_file} and a tests/ directory"),)


@pytest.mark.parametrize(
    "texts",
    [
        {
            "pyproject.toml": '[project]\nname = "app"\ndependencies = ["pytest-cov"]\n'
            "[tool.black]\nline-length = 100\n"
        },
        {"pyproject.toml": "[tool.pytest\nnot toml"},
        {"setup.cfg": "[metadata]\nname = app\n"},
        {"setup.cfg": "no section header\n"},
        {"tox.ini": "[tox]\nenvlist = py311\n"},
        {"tox.ini": "[pytest\n"},
    ],
    ids=["plugin-only", "bad-toml", "cfg-silent", "bad-cfg", "tox-silent", "bad-tox"],
)
def test_a_python_project_that_does_not_name_pytest_proposes_nothing(
    texts: dict[str, str],
) -> None:
    assert commands(texts) == []


def test_a_tests_directory_alone_is_no_python_project() -> None:
    assert commands({}, tests=True) == []
    assert commands({"go.mod": "module x\n"}, tests=True) == ["go test ./..."]


def test_test_files_pytest_finds_at_the_top_are_pytest() -> None:
    """A project of a few scripts: test_calc.py beside calc.py, no build file."""
    (found,) = found_checks(ProjectFiles({}, top_files=("calc.py", "test_calc.py")))
    assert found == FoundCheck("pytest", "test_calc.py, test files pytest finds")
    (several,) = found_checks(ProjectFiles({}, top_files=("io_test.py", "test_a.py", "t.py")))
    assert several.because == "io_test.py and 1 more, test files pytest finds"


@pytest.mark.parametrize("name", ["testing.py", "test_notes.txt", "contest_x.py", "test.py"])
def test_a_file_pytest_would_not_collect_is_no_test_file(name: str) -> None:
    assert found_checks(ProjectFiles({}, top_files=(name,))) == ()


# --- npm, cargo, go -----------------------------------------------------------------


def test_a_package_json_with_a_test_script_is_npm_test() -> None:
    found = found_checks(ProjectFiles({"package.json": '{"scripts": {"test": "vitest run"}}'}))
    assert found == (FoundCheck("npm test", "package.json has a test script"),)


@pytest.mark.parametrize(
    "package_json",
    [
        # What `npm init` writes: it always fails.
        '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}',
        '{"scripts": {"build": "tsc"}}',
        '{"scripts": {"test": "  "}}',
        '{"scripts": {"test": ["jest"]}}',
        '{"scripts": "jest"}',
        '{"name": "app"}',
        '["scripts"]',
        "{not json",
    ],
    ids=[
        "placeholder",
        "no-test",
        "blank",
        "not-text",
        "scripts-text",
        "no-scripts",
        "list",
        "bad",
    ],
)
def test_a_package_json_without_a_real_test_script_proposes_nothing(package_json: str) -> None:
    assert commands({"package.json": package_json}) == []


def test_a_cargo_toml_is_cargo_test() -> None:
    found = found_checks(ProjectFiles({"Cargo.toml": '[package]\nname = "x"\n'}))
    assert found == (FoundCheck("cargo test", "Cargo.toml makes it a Rust package"),)


def test_a_go_mod_is_go_test_of_every_package() -> None:
    found = found_checks(ProjectFiles({"go.mod": "module example.com/x\n"}))
    assert found == (FoundCheck("go test ./...", "go.mod makes it a Go module"),)


def test_nothing_known_proposes_nothing() -> None:
    assert commands({}) == []
    assert commands({"README.md": "# app\n"}) == []


def test_the_makefile_comes_first_then_pytest_npm_cargo_go() -> None:
    every = {
        "go.mod": "module x\n",
        "Cargo.toml": "",
        "package.json": '{"scripts": {"test": "jest"}}',
        "pytest.ini": "",
        "Makefile": "test:\n\ttrue\n",
    }
    assert commands(every) == ["make test", "pytest", "npm test", "cargo test", "go test ./..."]
    del every["Makefile"]
    assert commands(every)[0] == "pytest"


# --- what init writes ---------------------------------------------------------------


# Each kind of project, as the smallest files that make it one.
KINDS: dict[str, dict[str, str]] = {
    "make": {"Makefile": "test:\n\ttrue\n"},
    "pytest": {"pytest.ini": "[pytest]\n"},
    "npm": {"package.json": '{"scripts": {"test": "jest"}}'},
    "cargo": {"Cargo.toml": ""},
    "go": {"go.mod": "module x\n"},
}


def uncommented(text: str) -> str:
    """Every commented-out setting of a claudeloop.toml, uncommented."""
    lines = []
    for line in text.splitlines():
        body = line.removeprefix("# ")
        setting = body.startswith("[") or (" = " in body and body.split(" = ")[0].isidentifier())
        lines.append(body if line.startswith("# ") and setting else line)
    return "\n".join(lines) + "\n"


@given(st.sets(st.sampled_from(sorted(KINDS))))
def test_the_config_sets_verify_to_the_first_command_found_and_its_examples_parse(
    kinds: set[str],
) -> None:
    texts = {name: text for kind in kinds for name, text in KINDS[kind].items()}
    checks = found_checks(ProjectFiles(texts))
    assert len(checks) == len(kinds)
    written = tomllib.loads(config_text(checks))
    if checks:
        assert written == {"verify": [checks[0].command]}
        for other in checks[1:]:
            assert other.command in config_text(checks)
    else:
        assert written == {}
    every_example = tomllib.loads(uncommented(config_text(checks)))
    assert "verify" in every_example
    assert "limits" in every_example


@given(st.sets(st.sampled_from(sorted(KINDS))))
def test_the_plan_is_a_checklist_of_open_items(kinds: set[str]) -> None:
    texts = {name: text for kind in kinds for name, text in KINDS[kind].items()}
    checks = found_checks(ProjectFiles(texts))
    plan = WorkPlan.parse(plan_text(checks))
    assert plan.total == 3
    assert len(plan.open_items) == 3
    if checks:
        assert checks[0].command in plan.items[-1].text


@dataclass
class Folder:
    """A project directory in memory: its files, and names that cannot be written."""

    files_here: dict[str, str] = field(default_factory=dict)
    unwritable: set[str] = field(default_factory=set)
    asked: list[tuple[str, ...]] = field(default_factory=list)

    def files(self, names: tuple[str, ...]) -> ProjectFiles:
        self.asked.append(names)
        return ProjectFiles({n: t for n, t in self.files_here.items() if n in names})

    def create(self, name: str, text: str) -> bool:
        if name in self.unwritable:
            raise PermissionError(13, "Permission denied")
        if name in self.files_here:
            return False
        self.files_here[name] = text
        return True


def test_set_up_writes_the_config_and_the_plan_with_the_command_found() -> None:
    folder = Folder({"go.mod": "module x\n"})
    done = set_up(folder, config_name="claudeloop.toml")
    assert folder.asked == [READ_FILES]
    assert done == SetUp(
        checks=(FoundCheck("go test ./...", "go.mod makes it a Go module"),),
        written=("claudeloop.toml", PLAN_FILE),
    )
    assert tomllib.loads(folder.files_here["claudeloop.toml"]) == {"verify": ["go test ./..."]}
    assert "- [ ] The checks pass (`go test ./...`)" in folder.files_here[PLAN_FILE]


def test_set_up_never_replaces_a_file_already_there() -> None:
    folder = Folder({"claudeloop.toml": "max_turns = 5\n", PLAN_FILE: "my plan\n"})
    done = set_up(folder, config_name="claudeloop.toml")
    assert done == SetUp(checks=(), kept=("claudeloop.toml", PLAN_FILE))
    assert folder.files_here == {"claudeloop.toml": "max_turns = 5\n", PLAN_FILE: "my plan\n"}


def test_a_file_that_cannot_be_written_does_not_stop_the_other() -> None:
    folder = Folder(unwritable={"claudeloop.toml"})
    done = set_up(folder, config_name="claudeloop.toml")
    assert done.failed == (("claudeloop.toml", "Permission denied"),)
    assert done.written == (PLAN_FILE,)
    assert "claudeloop.toml" not in folder.files_here
