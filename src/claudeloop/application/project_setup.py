"""`claudeloop init`: which test command a project has, and the files that start it.

`found_checks` is the rule, a pure function of the project's files as text: the first
command it returns is proposed as `verify`, so that a Done must pass the project's own
tests. `set_up` writes what is missing through a `ProjectFolder` and never replaces a
file that is there.

Which command from which files, first match first:

1. a Makefile (GNUmakefile, makefile) with a `test` target: `make test` (a project's
   own entry point usually wraps the others);
2. pytest: `pytest.ini`; `[tool.pytest...]` or a pytest requirement in pyproject.toml;
   `[tool:pytest]` or a pytest requirement in setup.cfg; `[pytest]` in tox.ini; or
   pyproject.toml or setup.cfg beside a `tests/` directory; or test files pytest finds
   at the top (`test_*.py`, `*_test.py`), a project of a few scripts;
3. package.json whose `scripts.test` is a script of the project's own (not the
   placeholder `npm init` writes, which always fails): `npm test`;
4. Cargo.toml: `cargo test`;
5. go.mod: `go test ./...`.
"""

from __future__ import annotations

import configparser
import json
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from claudeloop.domain.plan import WorkPlan

# The files the rules read, in the order make looks for its own.
MAKEFILES: tuple[str, ...] = ("GNUmakefile", "makefile", "Makefile")
READ_FILES: tuple[str, ...] = (
    *MAKEFILES,
    "pyproject.toml",
    "pytest.ini",
    "setup.cfg",
    "tox.ini",
    "package.json",
    "Cargo.toml",
    "go.mod",
)
TESTS_DIRECTORY = "tests"
# The project's own configuration file, which every run of the directory reads.
CONFIG_FILE = "claudeloop.toml"
PLAN_FILE = "PLAN.md"

# A rule line whose targets include `test`: `test:`, `test: build`, `check test::`; not
# a variable (`test := x`, `test ::= x`, `test = x`) nor a special target (`.PHONY: test`).
_MAKE_TARGETS = re.compile(r"^(?P<targets>[^\s:=#.][^:=#]*?)\s*::?(?![:=])")
# A requirement naming pytest: `pytest`, `pytest>=8`, `pytest[psutil]`, `pytest ; ...`.
_PYTEST_REQUIREMENT = re.compile(r"^\s*pytest\s*(?:$|[\[<>=!~;@ ])")
# The files pytest collects tests from by default.
_PYTEST_FILE = re.compile(r"test_.*\.py|.*_test\.py")
_PYTEST_WORD = re.compile(r"(?<![\w-])pytest(?![\w-])")
# What `npm init` writes as the test script: it prints an error and fails.
_NPM_PLACEHOLDER = "no test specified"


@dataclass(frozen=True, slots=True)
class ProjectFiles:
    """What the rules look at: the text of those of READ_FILES that exist, whether
    the project has a `tests/` directory, and the names of the files at its top."""

    texts: Mapping[str, str]
    has_tests_directory: bool = False
    top_files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FoundCheck:
    """A test command the project has, and the file that says so, in words."""

    command: str
    because: str


def found_checks(project: ProjectFiles) -> tuple[FoundCheck, ...]:
    """Every test command the project's files point to, the one to propose first; at
    most one per kind (make, pytest, npm, cargo, go)."""
    kinds = (_make(project), _pytest(project), _npm(project), _cargo(project), _go(project))
    return tuple(found for found in kinds if found is not None)


def _make(project: ProjectFiles) -> FoundCheck | None:
    # make reads the first of its names that exists, and only that one.
    name = next((name for name in MAKEFILES if name in project.texts), None)
    if name is None or not _has_test_target(project.texts[name]):
        return None
    return FoundCheck("make test", f"{name} has a test target")


def _has_test_target(makefile: str) -> bool:
    for line in makefile.splitlines():
        match = _MAKE_TARGETS.match(line)
        if match is not None and "test" in match["targets"].split():
            return True
    return False


def _pytest(project: ProjectFiles) -> FoundCheck | None:
    texts = project.texts
    because: str | None = None
    if "pytest.ini" in texts:
        because = "pytest.ini configures pytest"
    elif "pyproject.toml" in texts and _pyproject_names_pytest(texts["pyproject.toml"]):
        because = "pyproject.toml names pytest"
    elif "setup.cfg" in texts and _setup_cfg_names_pytest(texts["setup.cfg"]):
        because = "setup.cfg names pytest"
    elif "tox.ini" in texts and _has_section(texts["tox.ini"], "pytest"):
        because = "tox.ini has a [pytest] section"
    elif project.has_tests_directory:
        python = next((name for name in ("pyproject.toml", "setup.cfg") if name in texts), None)
        if python is not None:
            because = f"{python} and a {TESTS_DIRECTORY}/ directory"
    if because is None:
        because = _top_test_files(project.top_files)
    return None if because is None else FoundCheck("pytest", because)


def _top_test_files(names: tuple[str, ...]) -> str | None:
    """The test files pytest finds at the project's top, in words (None: none is)."""
    found = sorted(name for name in names if _PYTEST_FILE.fullmatch(name))
    if not found:
        return None
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    return f"{found[0]}{more}, test files pytest finds"


def _pyproject_names_pytest(text: str) -> bool:
    """`[tool.pytest.ini_options]` (or `[tool.pytest]`), or pytest among the
    requirements anywhere: PEP 621 dependencies and extras, dependency groups, Poetry's
    tables (where pytest is a key)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    tool = document.get("tool")
    if isinstance(tool, dict) and "pytest" in tool:
        return True
    return any(
        word == "pytest" if is_key else bool(_PYTEST_REQUIREMENT.match(word))
        for word, is_key in _words(document)
    )


def _words(value: object) -> Iterator[tuple[str, bool]]:
    """Every key (True) and every text value (False) of a TOML document, nested."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key), True
            yield from _words(item)
    elif isinstance(value, list):
        for item in value:
            yield from _words(item)
    elif isinstance(value, str):
        yield value, False


def _setup_cfg_names_pytest(text: str) -> bool:
    parser = _ini(text)
    if parser is None:
        return False
    if parser.has_section("tool:pytest"):
        return True
    return any(
        _PYTEST_WORD.search(value)
        for section in parser.sections()
        for value in parser[section].values()
    )


def _has_section(text: str, section: str) -> bool:
    parser = _ini(text)
    return parser is not None and parser.has_section(section)


def _ini(text: str) -> configparser.ConfigParser | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    return parser


def _npm(project: ProjectFiles) -> FoundCheck | None:
    text = project.texts.get("package.json")
    if text is None:
        return None
    try:
        document = json.loads(text)
    except ValueError:
        return None
    scripts = document.get("scripts") if isinstance(document, dict) else None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(test, str) or not test.strip() or _NPM_PLACEHOLDER in test:
        return None
    return FoundCheck("npm test", "package.json has a test script")


def _cargo(project: ProjectFiles) -> FoundCheck | None:
    if "Cargo.toml" not in project.texts:
        return None
    return FoundCheck("cargo test", "Cargo.toml makes it a Rust package")


def _go(project: ProjectFiles) -> FoundCheck | None:
    if "go.mod" not in project.texts:
        return None
    return FoundCheck("go test ./...", "go.mod makes it a Go module")


def toml_string(text: str) -> str:
    """A TOML basic string of `text` (JSON's escapes are TOML's for these)."""
    return json.dumps(text, ensure_ascii=False)


def config_text(checks: tuple[FoundCheck, ...]) -> str:
    """A commented claudeloop.toml: `verify` set to the first check found (commented out
    when none was), every other setting an example to uncomment. Uncommenting every
    `# key = value` line gives a file the loader accepts (a test holds it to that)."""
    if checks:
        first = checks[0]
        verify = (
            f"# Found by `claudeloop init`: {first.because}.\n"
            f"verify = [{toml_string(first.command)}]\n"
        )
        others = [f"{check.command} ({check.because})" for check in checks[1:]]
        if others:
            verify += "# Also found: " + "; ".join(others) + ". Add to the list to run too.\n"
    else:
        verify = (
            "# `claudeloop init` found no test command (a Makefile test target, pytest,\n"
            "# an npm test script, Cargo.toml, go.mod): name yours here.\n"
            '# verify = ["make test"]\n'
        )
    return _CONFIG_HEAD + verify + "\n" + _CONFIG_REST


_CONFIG_HEAD = """\
# claudeloop.toml: the settings of `claudeloop run` and `claudeloop resume` in this
# project. Flags and CLAUDELOOP_* variables win over this file, and it wins over the
# user's config.toml. `claudeloop config show` prints every setting in effect and where
# it came from; `claudeloop run --help` lists them all (a key is its option's name
# with _ for -).

# The commands a Done must pass before the run ends (in order, in this directory,
# without a shell); a failure goes back to the same session with its output.
"""

_CONFIG_REST = """\
# How long one command may take before it is killed and counts as failed.
# verify_timeout = "10m"

# After the checks pass, an independent read-only review must agree it is done.
# review = true

# Caps (exit 3): answered turns, dollars spent. None by default.
# max_turns = 50
# max_dollars = 20

# Give up (exit 4) after waiting this long for a usage window or credits in all.
# max_wait = "12h"

# Pause before the wall: at a window's utilization, finish the turn and wait for
# that window's reset.
# pause_at = "5h=90%,7d=95%"

# What Claude Code may do unasked: acceptEdits (the default) edits files here; shell
# commands run in the sandbox.
# permission_mode = "acceptEdits"

# The sandbox (on by default): commands write only here and in temp, your home's
# secrets hidden, no network but these domains.
# sandbox_allow_domains = ["pypi.org", "files.pythonhosted.org"]
# sandbox_allow_read = ["~/.m2"]

# Notifications (apprise URLs; needs the notify extra) and which are sent.
# notify = ["ntfy://ntfy.sh/my-topic"]
# notify_on = ["done", "blocked", "failed"]

# What to do when a limit is met (default: wait for it to lift).
# [limits]
# five_hour = "wait"
# credits = "wind-down"
"""


# The items of the PLAN.md `init` writes, there to be replaced: a plan that still holds
# them is refused (`still_the_template`), since a night spent on "First step" is spent on
# nothing, and a warning would scroll by unread by a run left alone.
TEMPLATE_STEPS = ("First step", "Second step")


def still_the_template(plan: WorkPlan) -> bool:
    """Whether `plan` still holds every placeholder item of the PLAN.md `init` wrote."""
    texts = {item.text.strip() for item in plan.items}
    return all(step in texts for step in TEMPLATE_STEPS)


def plan_text(checks: tuple[FoundCheck, ...]) -> str:
    """A PLAN.md to replace with the task: a line of what it is for and a checklist."""
    last = f"The checks pass (`{checks[0].command}`)" if checks else "The tests pass"
    return f"""\
# Plan

What this run is to achieve, in a sentence or two, and what "done" means for it.

claudeloop tells the model after every turn which items are still open, and the model
checks each one off (`- [x]`) as it finishes it. Replace these with your own steps.

- [ ] {TEMPLATE_STEPS[0]}
- [ ] {TEMPLATE_STEPS[1]}
- [ ] {last}
"""


class ProjectFolder(Protocol):
    """The project directory, as `set_up` needs it."""

    def files(self, names: tuple[str, ...]) -> ProjectFiles:
        """The text of those of `names` that are files, and whether tests/ is a directory."""
        ...

    def create(self, name: str, text: str) -> bool:
        """Write a new file; False, and nothing written, when `name` already exists.
        Raises OSError when it cannot be written, leaving no part of it behind."""
        ...


@dataclass(frozen=True, slots=True)
class SetUp:
    """What `set_up` found and did: the files written, those already there (left as
    they are), and those that could not be written, each with the reason."""

    checks: tuple[FoundCheck, ...]
    written: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()


def set_up(folder: ProjectFolder, *, config_name: str) -> SetUp:
    """Write `config_name` and PLAN.md where they are missing; a file already there
    is left as it is, and one that cannot be written does not stop the other."""
    checks = found_checks(folder.files(READ_FILES))
    written: list[str] = []
    kept: list[str] = []
    failed: list[tuple[str, str]] = []
    for name, text in ((config_name, config_text(checks)), (PLAN_FILE, plan_text(checks))):
        try:
            created = folder.create(name, text)
        except OSError as error:
            failed.append((name, error.strerror or str(error)))
            continue
        (written if created else kept).append(name)
    return SetUp(checks=checks, written=tuple(written), kept=tuple(kept), failed=tuple(failed))
