"""The canary for the newest Claude Code and DBOS: what changes if the lock took them today.

uv.lock pins claude-agent-sdk, and with it the Claude Code CLI its wheel bundles, the one
our facts and tests were measured on, and DBOS, the fleet's queue. The canary builds
`.venv-canary`: the project with the dev extra, every package at the version uv.lock
says except claude-agent-sdk and dbos, which take the newest version pyproject's range
allows; and `.venv-canary-litellm`, the newest LiteLLM its range
(tests/e2e/litellm-requirements.in) allows. Then it:

- runs the tests that pin what the CLI emits (TESTS) and the fleet's tests on DBOS
  (FLEET_TESTS) once with `.venv` (the locked CLI and DBOS) and once with
  `.venv-canary` (the newest), and compares the outcome of each test;
- reads from each CLI binary the words it can emit (startup failure reasons, result
  subtypes, terminal reasons, rate-limit windows, the rate-limit headers it reads, its
  environment variables) and says which are new in the newest and which are gone;
- prints one markdown report and writes it to bench/results/canary.md.

It reports; it is not a gate: it exits 0 whatever differs, and 1 with one line only when
it could not build a venv. `make canary`; docs/guides/upgrading-claude-code.md says how
to read it and what to do next.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from xml.etree import ElementTree

from claudeloop.domain.capacity import WINDOW_KINDS
from claudeloop.domain.limits import LIMIT_KINDS
from claudeloop.domain.startup import STARTUP_FAILURE_REASONS
from claudeloop.domain.turn_end import TERMINAL_REASONS

ROOT = Path(__file__).resolve().parents[1]
UV = ROOT / ".venv-uv" / "bin" / "uv"
LOCKED_VENV = ROOT / ".venv"
NEWEST_VENV = ROOT / ".venv-canary"
LOCKED_LITELLM_VENV = ROOT / ".venv-litellm"
NEWEST_LITELLM_VENV = ROOT / ".venv-canary-litellm"
LITELLM_RANGE = ROOT / "tests" / "e2e" / "litellm-requirements.in"
REPORT = ROOT / "bench" / "results" / "canary.md"
SDK = "claude-agent-sdk"
DBOS = "dbos"
# What the newest side takes at the newest version its range allows; the rest as locked.
NEWEST = (SDK, DBOS)
# test_litellm_proxy.py runs the litellm this variable names, before its own .venv-litellm.
LITELLM_VARIABLE = "CLAUDELOOP_E2E_LITELLM"

# The tests that pin what the CLI emits, each driving the real CLI against the rehearsal
# API: 5 to 9 minutes per venv with `-n 2` on 2 cores. Left out: those that pin
# claudeloop's own behaviour around the CLI (worktrees, the fleet, the dashboard, steering,
# notifications), which a new CLI rarely moves and which would double the time.
TESTS = (
    # The venv runs the CLI the lock names (domain/tested_cli.py): with the newest it fails
    # by design, which shows the newest side ran another CLI.
    "tests/test_lock.py",
    # Every failure of the service as the CLI reports it, and whole turns and refusals.
    "tests/contract",
    # Accounts refused, the CLI's own retries, its inner-turn cap.
    "tests/e2e/test_cli_signals.py",
    # Its exit on a hang-up and a kill before or in the first turn.
    "tests/e2e/test_hangups_and_early_kills.py",
    # Its word that it could not save the session's transcript.
    "tests/e2e/test_lost_writes.py",
    # Which credentials it accepts, and its login commands.
    "tests/e2e/test_login.py",
    "tests/e2e/test_login_expiry.py",
    # The rate-limit headers it reads: grace, the daily cap, overage, a model's week.
    "tests/e2e/test_service_headers.py",
    "tests/e2e/test_overage.py",
    # Its retries left at their default.
    "tests/e2e/test_backend_retries.py",
    # The cost and usage it reports after a kill mid-turn.
    "tests/e2e/test_ledger.py",
    # Its stop on a user's hook (prevent_continuation).
    "tests/e2e/test_hook_stops.py",
)
# The fleet on the DBOS of each side, through DBOS's public API alone (issue 49): its
# adapter's tests, its queue, a worker's takeover and database outages end to end, on
# SQLite and PostgreSQL (tests/contract/test_dbos_*.py, in TESTS, pin the calls
# themselves). About 6 minutes per venv with `-n 2` on 2 cores.
FLEET_TESTS = (
    "tests/adapters/fleet",
    "tests/e2e/test_fleet.py",
    "tests/e2e/test_fleet_takeover.py",
    "tests/e2e/test_fleet_outage.py",
)
# Its reading of a LiteLLM proxy's every error: a pytest run of their own (run_tests).
LITELLM_TESTS = ("tests/e2e/test_litellm_proxy.py",)

# The three kinds of string read from a binary, each a pattern of its own that starts with
# a literal (one pattern of three alternatives, or one that starts with a look-behind,
# scans 400 MB thirty times slower):
# - a JS array of quoted snake_case words (`["five_hour","seven_day"]`): the CLI's closed
#   lists (zod enums, constant arrays) are written so in its bundle, whatever the
#   minifier names them;
# - a rate-limit header name in quotes, a template's `${x}` part included;
# - a CLAUDE_* environment variable name (the byte before it is checked in _matches).
_PATTERNS = {
    "list": re.compile(rb'\[(?:"[a-z0-9_]+",)+"[a-z0-9_]+"\]'),
    "header": re.compile(rb"anthropic-ratelimit-unified-(?:\$\{\w+\}-)?[a-z0-9-]*(?=[\"'`])"),
    # Followed by a printable byte: a name in the bytecode's tables runs into the next
    # one's length (`CLAUDE_CONFIG_DIRF`); its source is in the bundle too, in quotes.
    "environment": re.compile(rb"CLAUDE_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])(?=[\x20-\x7e])"),
}
_NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_WORD = re.compile(rb'"([a-z0-9_]+)"')
_ENV_IN_SOURCE = re.compile(r"(?<![A-Za-z0-9_])CLAUDE_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")
# The binary is read in pieces (it is about 400 MB); a match may not be longer than the
# margin kept between pieces (the longest list in 2.1.337 is about 40 KB).
_PIECE = 16 * 1024 * 1024
_MARGIN = 1024 * 1024


class BuildFailed(Exception):
    """A venv could not be built: the canary has nothing to compare."""


@dataclass(frozen=True)
class Side:
    """One CLI under test: its venv, its versions, and where its LiteLLM is."""

    name: str
    venv: Path
    sdk_version: str
    dbos_version: str
    cli_version: str
    cli: Path
    litellm: Path
    litellm_version: str


@dataclass(frozen=True)
class Outcome:
    outcome: str  # passed, failed, error or skipped
    message: str  # the first line of the failure, error or skip


@dataclass(frozen=True)
class TestRun:
    outcomes: dict[str, Outcome]
    junits: tuple[Path, ...]
    log: Path
    seconds: float
    exit_codes: tuple[int, ...]


@dataclass(frozen=True)
class Emitted:
    """The strings of one CLI binary the canary compares."""

    word_lists: frozenset[tuple[str, ...]]
    headers: frozenset[str]
    environment: frozenset[str]


@dataclass(frozen=True)
class Category:
    """A closed list the CLI emits, found by the words known to be in it.

    `known` picks the binary's word lists that are this one (at least two of its words,
    and known words at least half of the list's); `ours` is claudeloop's own list of it,
    when claudeloop keeps one, so what the newest CLI adds and claudeloop lacks is said.
    """

    title: str
    known: frozenset[str]
    ours: tuple[str, ...] | None
    ours_name: str = ""


CATEGORIES = (
    Category(
        "Startup failure reasons (`startup_failure_reason`)",
        frozenset(STARTUP_FAILURE_REASONS),
        STARTUP_FAILURE_REASONS,
        "STARTUP_FAILURE_REASONS",
    ),
    Category(
        "Result subtypes (`error_*`)",
        frozenset({"error_during_execution", "error_max_turns", "error_max_budget_usd"}),
        None,
    ),
    Category(
        "Terminal reasons (`terminal_reason`)",
        frozenset(TERMINAL_REASONS),
        TERMINAL_REASONS,
        "TERMINAL_REASONS",
    ),
    Category(
        "Rate-limit windows (`rateLimitType`, `unifiedWindows`)",
        frozenset(WINDOW_KINDS),
        LIMIT_KINDS,
        "LIMIT_KINDS",
    ),
)


def _say(line: str) -> None:
    """Progress, on stderr: stdout carries the report alone."""
    print(f"canary: {line}", file=sys.stderr, flush=True)


def _uv(arguments: list[str], log: Path, what: str) -> str:
    """uv's stdout; its whole output is added to `log`. A failure is a BuildFailed."""
    if not UV.is_file():
        raise BuildFailed(f"could not build {what}: no {UV} (make .venv-uv/bin/uv)")
    done = subprocess.run(
        [str(UV), *arguments], cwd=ROOT, capture_output=True, text=True, check=False
    )
    with log.open("a") as output:
        output.write(f"$ uv {' '.join(arguments)}\n{done.stdout}{done.stderr}\n")
    if done.returncode != 0:
        # uv's error is a few lines, wrapped and drawn with a cross, arrows and bars (the
        # characters below): said as one line.
        said = " ".join(re.sub("[\u00d7\u2570\u2500\u25b6\u2502]", " ", done.stderr).split())
        why = _first_line(said, width=400) or f"uv exited {done.returncode}"
        raise BuildFailed(f"could not build {what}: {why} (uv's whole output: {log})")
    return done.stdout


def _resolve_and_sync(venv: Path, resolve: list[str], work: Path, editable: bool) -> None:
    """Resolve today's versions into a file, then make the venv hold exactly those.

    A venv made before is brought to them in place (uv pip sync), never emptied first:
    a run that is using it meanwhile sees a package change only where a version moved,
    and nothing of an earlier day's newest is left behind.
    """
    log = work / "build.log"
    python = str(venv / "bin" / "python")
    requirements = work / f"{venv.name}.txt"
    _uv(["venv", "--quiet", "--allow-existing", str(venv)], log, venv.name)
    _uv(
        ["pip", "compile", "--quiet", "--python", python, *resolve, "-o", str(requirements)],
        log,
        venv.name,
    )
    if editable:
        with requirements.open("a") as listed:
            listed.write(f"-e {ROOT}\n")
    _uv(["pip", "sync", "--quiet", "--python", python, str(requirements)], log, venv.name)


def build_newest(work: Path) -> None:
    """`.venv-canary`: the project editable with the dev extra, every package at the
    version uv.lock says (as constraints) but claude-agent-sdk and dbos, at the newest
    pyproject.toml's range allows."""
    exported = _uv(
        ["export", "--frozen", "--extra", "dev", "--no-hashes", "--no-emit-project"],
        work / "build.log",
        NEWEST_VENV.name,
    )
    constraints = work / "constraints.txt"
    kept = [
        line
        for line in exported.splitlines()
        if not line.startswith(tuple(f"{package}==" for package in NEWEST))
    ]
    constraints.write_text("\n".join(kept) + "\n")
    upgrades = [option for package in NEWEST for option in ("--upgrade-package", package)]
    resolve = [
        str(ROOT / "pyproject.toml"), "--extra", "dev",
        "--constraint", str(constraints),
        *upgrades,
    ]  # fmt: skip
    _resolve_and_sync(NEWEST_VENV, resolve, work, editable=True)


def build_newest_litellm(work: Path) -> None:
    """`.venv-canary-litellm`: the newest LiteLLM (and its dependencies) the range allows."""
    resolve = [str(LITELLM_RANGE), "--upgrade"]
    _resolve_and_sync(NEWEST_LITELLM_VENV, resolve, work, editable=False)


_ASK_SDK = (
    "import importlib.metadata as m, importlib.util as u, json; "
    "spec = u.find_spec('claude_agent_sdk'); "
    "print(json.dumps({'version': m.version('claude-agent-sdk'), 'dbos': m.version('dbos'), "
    "'package': list(spec.submodule_search_locations)[0]}))"
)
_ASK_LITELLM = "import importlib.metadata as m; print(m.version('litellm'))"


def _ask(venv: Path, code: str) -> str:
    python = venv / "bin" / "python"
    try:
        done = subprocess.run(
            [str(python), "-c", code], capture_output=True, text=True, check=True, timeout=120
        )
    except (OSError, subprocess.SubprocessError) as failure:
        make = "make litellm" if "litellm" in venv.name else f"make {venv.name}/.installed"
        raise BuildFailed(f"could not read {venv.name} ({make}): {failure}") from failure
    return done.stdout.strip()


def side(name: str, venv: Path, litellm_venv: Path) -> Side:
    sdk = json.loads(_ask(venv, _ASK_SDK))
    bundled = Path(sdk["package"]) / "_bundled"
    # "2.1.337 (Claude Code)"
    cli_version = (bundled / "claude.version").read_text().split()[0]
    return Side(
        name=name,
        venv=venv,
        sdk_version=sdk["version"],
        dbos_version=sdk["dbos"],
        cli_version=cli_version,
        cli=bundled / "claude",
        litellm=litellm_venv / "bin" / "litellm",
        litellm_version=_ask(litellm_venv, _ASK_LITELLM),
    )


def run_tests(side: Side, work: Path) -> TestRun:
    """TESTS with the side's venv, then LITELLM_TESTS with its LiteLLM: two pytest runs,
    since claudeloop refuses a CLAUDELOOP_* variable it does not know and the other tests
    hand the claudeloop they start their whole environment (test_litellm_proxy.py does
    not), so CLAUDELOOP_E2E_LITELLM is set for the second run only."""
    log = work / f"{side.name}.log"
    log.write_text("")
    # The venv's own claude-agent-sdk bundles the CLI under test; CLAUDELOOP_CLI_PATH
    # would name another.
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in ("CLAUDELOOP_CLI_PATH", LITELLM_VARIABLE)
    }
    outcomes: dict[str, Outcome] = {}
    junits: list[Path] = []
    exit_codes: list[int] = []
    started = time.monotonic()
    for part, tests, variables in (
        ("", (*TESTS, *FLEET_TESTS), {}),
        ("-litellm", LITELLM_TESTS, {LITELLM_VARIABLE: str(side.litellm)}),
    ):
        junit = work / f"{side.name}{part}.xml"
        command = [
            str(side.venv / "bin" / "pytest"),
            "-n", "2", "-q",
            # The cache of last failures is the person's, not the canary's.
            "-p", "no:cacheprovider",
            f"--junitxml={junit}",
            *tests,
        ]  # fmt: skip
        with log.open("a") as output:
            done = subprocess.run(
                command,
                cwd=ROOT,
                env=environment | variables,
                stdout=output,
                stderr=subprocess.STDOUT,
                check=False,
            )
        exit_codes.append(done.returncode)
        junits.append(junit)
        if junit.is_file():
            outcomes |= read_junit(junit)
    seconds = time.monotonic() - started
    return TestRun(outcomes, tuple(junits), log, seconds, tuple(exit_codes))


def _first_line(text: str, width: int = 200) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def _test_id(classname: str, name: str) -> str:
    """pytest's id (`tests/e2e/test_x.py::Class::test_y[case]`) from junit's dotted
    classname, whose file part is the longest prefix that is a file here."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = Path(*parts[:cut]).with_suffix(".py")
        if (ROOT / path).is_file():
            return "::".join([path.as_posix(), *parts[cut:], name])
    return f"{classname}::{name}"


_OUTCOME_OF_TAG = {"failure": "failed", "error": "error", "skipped": "skipped"}


def read_junit(path: Path) -> dict[str, Outcome]:
    outcomes: dict[str, Outcome] = {}
    for case in ElementTree.parse(path).iter("testcase"):
        test_id = _test_id(case.get("classname", ""), case.get("name", ""))
        outcome, message = "passed", ""
        for child in case:
            if child.tag in _OUTCOME_OF_TAG:
                outcome = _OUTCOME_OF_TAG[child.tag]
                message = _first_line(child.get("message") or child.text or "")
                break
        outcomes[test_id] = Outcome(outcome, message)
    return outcomes


def _matches(binary: Path) -> Iterator[tuple[str, bytes]]:
    """Each match of _PATTERNS in the file, read a piece at a time. The last margin of a
    piece is read again with the next one (and the byte before it, for the check of a
    name's start), so a match across two pieces is found whole, and once."""
    carry = b""
    # Per pattern, where the part of `buffer` not yet searched begins.
    fresh = dict.fromkeys(_PATTERNS, 0)
    with binary.open("rb") as stream:
        while True:
            piece = stream.read(_PIECE)
            buffer = carry + piece
            last = not piece
            # A match that starts before the cut is taken from this buffer; the rest waits.
            cut = len(buffer) if last else max(1, len(buffer) - _MARGIN)
            for kind, pattern in _PATTERNS.items():
                taken_to = 0
                for match in pattern.finditer(buffer, fresh[kind]):
                    start = match.start()
                    if start >= cut:
                        break
                    taken_to = match.end()
                    if kind == "environment" and start > 0 and buffer[start - 1] in _NAME_BYTES:
                        continue
                    yield kind, match.group()
                fresh[kind] = max(1, taken_to - (cut - 1))
            if last:
                return
            carry = buffer[cut - 1 :]


def emitted(binary: Path) -> Emitted:
    word_lists: set[tuple[str, ...]] = set()
    headers: set[str] = set()
    environment: set[str] = set()
    for kind, text in _matches(binary):
        if kind == "list":
            word_lists.add(tuple(word.decode() for word in _WORD.findall(text)))
        elif kind == "header":
            # A template's part is a window (`5h`, `7d`): said once, as `*`.
            headers.add(re.sub(r"\$\{\w+\}", "*", text.decode()))
        else:
            environment.add(text.decode())
    return Emitted(frozenset(word_lists), frozenset(headers), frozenset(environment))


def members(category: Category, strings: Emitted) -> set[str]:
    """Every word of the binary's lists that are this category's (Category says which)."""
    found: set[str] = set()
    for words in strings.word_lists:
        shared = len(category.known.intersection(words))
        if shared >= 2 and 2 * shared >= len(words):
            found.update(words)
    return found


def claudeloop_environment() -> set[str]:
    """The CLAUDE_* names claudeloop's source mentions: those it sets for the CLI, and
    those of the user's environment it reads on the CLI's behalf."""
    source = ROOT / "src" / "claudeloop"
    return {
        name
        for path in source.rglob("*.py")
        for name in _ENV_IN_SOURCE.findall(path.read_text(encoding="utf-8"))
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _words(names: Iterable[str]) -> str:
    listed = sorted(names)
    return ", ".join(f"`{name}`" for name in listed) if listed else "none"


def _count(run: TestRun, outcome: str) -> int:
    return sum(1 for result in run.outcomes.values() if result.outcome == outcome)


def _differences(
    locked: TestRun, newest: TestRun
) -> list[tuple[str, Outcome | None, Outcome | None]]:
    tests = sorted(set(locked.outcomes) | set(newest.outcomes))
    return [
        (test, locked.outcomes.get(test), newest.outcomes.get(test))
        for test in tests
        if _said(locked.outcomes.get(test)) != _said(newest.outcomes.get(test))
    ]


def _said(result: Outcome | None) -> str:
    return result.outcome if result else "not run"


def _why(locked: Outcome | None, newest: Outcome | None) -> str:
    """The first line of the newest's failure, else of the locked one's."""
    for result in (newest, locked):
        if result and result.outcome != "passed" and result.message:
            return result.message
    return ""


def _compared(title: str, locked: set[str], newest: set[str]) -> list[str]:
    lines = [f"### {title}", ""]
    if locked == newest:
        return [*lines, f"- same ({len(newest)} in each)"]
    return [
        *lines,
        f"- {len(locked)} in the locked, {len(newest)} in the newest",
        f"- new in the newest: {_words(newest - locked)}",
        f"- gone from the newest: {_words(locked - newest)}",
    ]


def render(
    locked: Side,
    newest: Side,
    runs: dict[str, TestRun],
    strings: dict[str, Emitted],
    *,
    code: str,
    minutes: float,
) -> str:
    locked_run, newest_run = runs["locked"], runs["newest"]
    day = datetime.now(UTC).date().isoformat()
    lines = [
        "# Canary: the newest Claude Code and DBOS beside the locked ones",
        "",
        f"`make canary` on {day} at {code}, {minutes:.0f} minutes (bench/canary.py). "
        f"Locked (uv.lock, "
        f"`.venv`): claude-agent-sdk {locked.sdk_version}, Claude Code {locked.cli_version}, "
        f"DBOS {locked.dbos_version}. "
        f"Newest pyproject.toml allows (`.venv-canary`, every other package as locked): "
        f"claude-agent-sdk {newest.sdk_version}, Claude Code {newest.cli_version}, "
        f"DBOS {newest.dbos_version}. "
        f"test_litellm_proxy.py ran LiteLLM {locked.litellm_version} (`.venv-litellm`, locked) "
        f"with the locked CLI and {newest.litellm_version} (`.venv-canary-litellm`, the newest "
        f"tests/e2e/litellm-requirements.in allows) with the newest, through {LITELLM_VARIABLE}.",
        "",
        "## Tests whose outcome differs",
        "",
        "The tests run on each side (`pytest -n 2`): "
        f"{', '.join((*TESTS, *FLEET_TESTS, *LITELLM_TESTS))}.",
        "",
    ]
    differences = _differences(locked_run, newest_run)
    if differences:
        lines += [
            f"| test | locked ({locked.cli_version}) | newest ({newest.cli_version}) "
            "| first line of the failure |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| `{test}` | {_said(old)} | {_said(new)} | {_cell(_why(old, new))} |"
            for test, old, new in differences
        ]
    else:
        lines.append("None: every test ended the same with both CLIs.")
    lines += [
        "",
        "| CLI | passed | failed | error | skipped | pytest's exit codes | minutes |",
        "|---|---|---|---|---|---|---|",
    ]
    for side, run in ((locked, locked_run), (newest, newest_run)):
        counts = " | ".join(
            str(_count(run, outcome)) for outcome in ("passed", "failed", "error", "skipped")
        )
        exits = ", ".join(str(code) for code in run.exit_codes)
        lines.append(
            f"| {side.name} ({side.cli_version}) | {counts} | {exits} | {run.seconds / 60:.1f} |"
        )
    for side, run in ((locked, locked_run), (newest, newest_run)):
        if not run.outcomes:
            lines += ["", f"The {side.name} run wrote no junit: pytest's output is {run.log}."]
    both_failed = sorted(
        test
        for test, result in newest_run.outcomes.items()
        if result.outcome in ("failed", "error")
        and _said(locked_run.outcomes.get(test)) == result.outcome
    )
    if both_failed:
        lines += ["", f"Failed with both CLIs (not a difference): {_words(both_failed)}."]
    lines += [
        "",
        "## What each CLI can emit, read from its binary",
        "",
        "Each category is the words of the binary's quoted lists that hold its known words "
        "(bench/canary.py, `Category`); what matters is the difference.",
        "",
    ]
    old, new = strings["locked"], strings["newest"]
    for category in CATEGORIES:
        locked_words, newest_words = members(category, old), members(category, new)
        lines += _compared(category.title, locked_words, newest_words)
        if category.ours is not None:
            lacking = newest_words - set(category.ours)
            lines.append(
                f"- in the newest, not in claudeloop's `{category.ours_name}`: {_words(lacking)}"
            )
        lines.append("")
    lines += _compared(
        "Rate-limit headers it reads (`anthropic-ratelimit-unified-*`; `*` after it: a window)",
        set(old.headers),
        set(new.headers),
    )
    lines.append("")
    ours = claudeloop_environment()
    lines += [
        "### Environment variables",
        "",
        f"- the {len(ours)} `CLAUDE_*` names src/claudeloop mentions (set for the CLI, or read "
        f"on its behalf), missing from the locked binary: {_words(ours - old.environment)}; "
        f"missing from the newest: {_words(ours - new.environment)}",
        f"- every `CLAUDE_*` name in the binary: {len(old.environment)} in the locked, "
        f"{len(new.environment)} in the newest",
        f"- new in the newest: {_words(new.environment - old.environment)}",
        f"- gone from the newest: {_words(old.environment - new.environment)}",
        "",
        "## Full outputs",
        "",
    ]
    for side, run in ((locked, locked_run), (newest, newest_run)):
        junits = ", ".join(str(junit) for junit in run.junits)
        lines.append(f"- {side.name}: junit {junits}; pytest's output {run.log}")
    return "\n".join(lines) + "\n"


def tested_code() -> str:
    """The commit whose src/ and tests/ ran, and whether they held changes not committed:
    the report is true of that code only."""

    def git(*arguments: str) -> str:
        done = subprocess.run(
            ["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--", "src", "tests")
    uncommitted = ", with changes to src/ or tests/ not committed" if changed else ""
    return f"commit {commit}{uncommitted}"


def main() -> int:
    started = time.monotonic()
    code = tested_code()
    work = Path(tempfile.mkdtemp(prefix="claudeloop-canary-"))
    try:
        _say(f"building {NEWEST_VENV.name} (the newest {SDK} and {DBOS} pyproject.toml allows)")
        build_newest(work)
        _say(f"building {NEWEST_LITELLM_VENV.name} (the newest LiteLLM its range allows)")
        build_newest_litellm(work)
        locked = side("locked", LOCKED_VENV, LOCKED_LITELLM_VENV)
        newest = side("newest", NEWEST_VENV, NEWEST_LITELLM_VENV)
    except BuildFailed as failure:
        print(f"canary: {failure}", file=sys.stderr)
        return 1
    strings: dict[str, Emitted] = {}
    runs: dict[str, TestRun] = {}
    for each in (locked, newest):
        _say(f"reading the strings of Claude Code {each.cli_version} ({each.cli})")
        strings[each.name] = emitted(each.cli)
    # One after the other: each run takes both cores.
    for each in (locked, newest):
        _say(f"running the tests with Claude Code {each.cli_version} ({each.venv.name})")
        runs[each.name] = run_tests(each, work)
    minutes = (time.monotonic() - started) / 60
    text = render(locked, newest, runs, strings, code=code, minutes=minutes)
    REPORT.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
