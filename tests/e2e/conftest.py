"""End-to-end: `claudeloop` as a user runs it, the real bundled Claude Code CLI, and the
rehearsal API on 127.0.0.1 playing the model and the service's failures.

Windows are compressed to seconds (the scenario's durations and claudeloop's wait
policy both); the tests assert order and counts, never how long anything took.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from claudeloop.adapters import credentials
from claudeloop.adapters.claude_code.transcript import cut_off_turn
from claudeloop.rehearsal import RehearsalServer, load_scenario
from tests.e2e.preloaded import Running, run_claudeloop, start_claudeloop

SCENARIOS = Path(__file__).parent / "scenarios"
# Wait policy compressed like the scenarios: seconds where a real night has minutes.
FAST_WAITS = [
    "--window-probe-interval", "3s",
    "--reset-grace", "1s",
    "--credits-probe-interval", "1s",
    "--credits-probe-ceiling", "3s",
    "--max-wait", "2m",
]  # fmt: skip
# What of the user's own setup a test's CLI must not see: it talks to the rehearsal only.
CREDENTIAL_VARIABLES = (
    *credentials.CREDENTIAL_VARIABLES,
    *credentials.PROVIDER_VARIABLES,
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
)


@dataclass
class Finished:
    exit_code: int
    stdout: str
    stderr: str
    project: Path

    @property
    def result(self) -> dict[str, Any]:
        return dict(json.loads(self.stdout))

    def run_directory(self) -> Path:
        (only,) = list((self.project / ".claudeloop" / "runs").iterdir())
        return only

    def events(self) -> list[dict[str, Any]]:
        lines = (self.run_directory() / "events.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def event_types(self) -> list[str]:
        return [event["type"] for event in self.events()]


@dataclass
class Rehearsal:
    server: RehearsalServer
    project: Path
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 150) -> Finished:
        return self.claudeloop("run", *args, timeout=timeout)

    def claudeloop(self, *args: str, timeout: float = 150) -> Finished:
        """`claudeloop ARGS --cwd PROJECT --json`, to its end (tests/e2e/preloaded.py)."""
        completed = run_claudeloop(
            [*args, "--cwd", str(self.project), "--json"], self.env, timeout=timeout
        )
        return Finished(completed.returncode, completed.stdout, completed.stderr, self.project)

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "claudeloop", *args, "--cwd", str(self.project)]

    def start(self, *args: str) -> Running:
        """`claudeloop ARGS` in the background, in its own process group (so a test can
        kill it and its Claude Code child at once, as a crash or a reboot would)."""
        return start_claudeloop(
            [*args, "--cwd", str(self.project), "--json"], self.env, cwd=self.project
        )

    def requests(self) -> list[dict[str, Any]]:
        return list(self.server.state()["requests"])


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    """Polls until `condition` holds; fails the test naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def cli_env(base_url: str, home: Path, *, credentials: str = "oauth") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CREDENTIAL_VARIABLES}
    env.update(
        {
            "ANTHROPIC_BASE_URL": base_url,
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "IS_SANDBOX": "1",
        }
    )
    if credentials == "oauth":
        env["CLAUDE_CODE_OAUTH_TOKEN"] = "e2e-oauth-token-not-real"
    else:
        env["ANTHROPIC_API_KEY"] = "e2e-api-key-not-real"
    return env


@pytest.fixture
def rehearsal(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Rehearsal]:
    """A rehearsal API playing the scenario named by the test's `scenario` marker."""
    marker = request.node.get_closest_marker("scenario")
    assert marker is not None, "e2e tests name their scenario with @pytest.mark.scenario"
    name = marker.args[0]
    credentials = marker.kwargs.get("credentials", "oauth")
    scenario = load_scenario(SCENARIOS / f"{name}.toml")
    project = tmp_path / "project"
    project.mkdir()
    with RehearsalServer(scenario) as server:
        yield Rehearsal(
            server, project, cli_env(server.base_url, tmp_path / "home", credentials=credentials)
        )


def in_flight_kept(rehearsal: Rehearsal) -> int:
    """The requests the run's session transcripts say were sent and never answered."""
    config = Path(rehearsal.env["CLAUDE_CONFIG_DIR"])
    sessions = [path.stem for path in (config / "projects").glob("*/*.jsonl")]
    ever = datetime(2000, 1, 1, tzinfo=UTC)
    return sum(cut_off_turn(config, session, ever).in_flight for session in sessions)


def write_plan(project: Path, items: int = 3) -> Path:
    plan = project / "PLAN.md"
    lines = ["# Plan", ""] + [f"- [ ] Write step{n}.txt" for n in range(1, items + 1)]
    plan.write_text("\n".join(lines) + "\n")
    return plan


def assert_ledger_is_what_was_served(
    finished: Finished, rehearsal: Rehearsal, *, price: float | None = None, in_flight: int = 0
) -> None:
    """Turns, attempts and dollars are what the rehearsal API served, each turn finished
    once, and the `in_flight` requests a kill cut off are billed at an estimate. Every
    answered request costs the same (the scenario's fixed usage): the price of one is
    `price`, by default what the run's first turn cost over its answers."""
    assert finished.exit_code == 0, finished.stderr
    result = finished.result
    served = rehearsal.server.state()
    requests = served["requests"]
    answered = [r for r in requests if r["answered"] and r["kind"] in ("turn", "probe")]
    refused = [r for r in requests if r["kind"] == "turn" and r["status"] == 429]
    events = finished.events()
    first = next(e for e in events if e["type"] == "turn.finished")
    first_answers = [r for r in answered if r["kind"] == "turn" and r["turn"] == 1]
    if price is None:
        price = first["cost_usd"] / len(first_answers)

    assert result["turns"] == served["verdicts"]
    assert result["attempts"] == served["verdicts"] + len(refused)
    exact = result["dollars"] - result["estimated_dollars"]
    assert exact == pytest.approx(price * len(answered), rel=1e-6)
    # A request in flight is priced like the last one answered: every one costs `price`.
    assert result["estimated_dollars"] == pytest.approx(price * in_flight, rel=1e-6)
    finished_turns = [e["turn"] for e in events if e["type"] == "turn.finished"]
    assert len(finished_turns) == len(set(finished_turns)), finished_turns


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The tables of real servers' answers: the rows tests kept (table, case, the
    server's answer, claudeloop's outcome) as `table_row`, or as `backend_table` in JSON,
    printed once at the end of the run, under xdist too (a report's user properties
    travel back to the controller). docs/guides/local-models.md carries them."""
    rows: dict[str, set[tuple[str, str, str]]] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for name, value in getattr(report, "user_properties", ()):
                if name not in ("table_row", "backend_table"):
                    continue
                cells = json.loads(value) if name == "backend_table" else value
                table, case, answer, outcome = (str(cell) for cell in cells)
                rows.setdefault(table, set()).add((case, answer, outcome))
    for table, found in rows.items():
        terminalreporter.section(f"{table}: case | the server's answer | claudeloop's outcome")
        for case, answer, outcome in sorted(found):
            terminalreporter.write_line(f"{case} | {answer} | {outcome}")
