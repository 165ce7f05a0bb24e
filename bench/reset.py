"""The instant a usage window reopens (issue 47): how long after a 5-hour window's
announced reset the run goes on, through `claudeloop run`, the bundled Claude Code CLI
and the rehearsal API, idle and beside two busy processes (`python3 -c "while True:
pass"` twice, killed after).

The window closes at turn 2 with its reset announced GATE_SECONDS ahead; the reset
grace is 1 s, so the probe is due 1 s after the reset. The figures run from the
announced reset (the wait's probe instant less the grace) to the probe's request
reaching the rehearsal API, and to the next turn's. Before: `--ready-ahead 0`, which
starts each Claude Code process at the instant, as claudeloop did before it started
them ahead (the same code path, measured in the same run). After: the defaults.

A stop: `claudeloop stop` during such a wait, once the run has Claude Code processes
started ahead and idle (before: none are): the command's own time, and from its request
written to the run's process gone (the target: 2 s).

`python -m bench.reset` runs it alone (about five minutes).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.overhead import environment
from bench.scenario_turns import write_turn
from claudeloop.rehearsal import RehearsalServer, parse_scenario

# How far ahead of the refusal the reset is announced: past the default lead, so the
# processes are started ahead of the instant in the wait, not at its start.
GATE_SECONDS = 40
GRACE = timedelta(seconds=1)
WAITS = ["--reset-grace", "1s", "--window-probe-interval", "5m", "--max-wait", "10m"]
BEFORE = ["--ready-ahead", "0"]
TARGET_SECONDS = 2.0
BUSY = "while True: pass"


@dataclass(frozen=True)
class Reopening:
    probe_seconds: float  # the announced reset to the probe's request
    turn_seconds: float  # the announced reset to the next turn's request
    early: int  # requests between the refusal and the reset (the target: none)


@dataclass(frozen=True)
class Stop:
    command_seconds: float  # `claudeloop stop` itself, to its exit
    stopped_seconds: float  # from its request written to the run's process gone


@dataclass(frozen=True)
class Figures:
    idle_before: Reopening
    idle_after: Reopening
    loaded_before: Reopening
    loaded_after: Reopening
    # `claudeloop stop` in a wait: the command's own time, and from its request
    # written to the run's process gone (idle and loaded, before and after).
    stop_before: Stop
    stop_after: Stop
    stop_loaded_before: Stop
    stop_loaded_after: Stop


def _scenario(gate: dict[str, Any]) -> str:
    return json.dumps(
        {
            "description": "the 5-hour window closes at turn 2, its reset announced",
            "turns": [write_turn(n, complete=n == 3) for n in (1, 2, 3)],
            "gates": [{"kind": "window", "at_turn": 2, **gate}],
        }
    )


def _environment(base_url: str, home: Path) -> dict[str, str]:
    # A subscription's login: its answers announce the windows' resets.
    env = environment(base_url, home)
    del env["ANTHROPIC_API_KEY"]
    return env | {"CLAUDE_CODE_OAUTH_TOKEN": "bench-oauth-not-real", "IS_SANDBOX": "1"}


def _events(project: Path) -> list[dict[str, Any]]:
    runs = project / ".claudeloop" / "runs"
    for run in runs.iterdir() if runs.is_dir() else ():
        path = run / "events.jsonl"
        if path.exists():
            lines = path.read_text().splitlines()
            return [json.loads(line) for line in lines if line.strip()]
    return []


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def reopening(root: Path, flags: list[str]) -> Reopening:
    """One run through the closed window: when its probe and next turn reached the API."""
    project = root / "project"
    project.mkdir(parents=True)
    scenario = parse_scenario(
        _scenario({"for_seconds": GATE_SECONDS}), source="bench/reset", fmt="json"
    )
    with RehearsalServer(scenario) as server:
        subprocess.run(
            [sys.executable, "-m", "claudeloop", "run", "--prompt", "Write the steps.",
             *WAITS, *flags, "--cwd", str(project), "--json"],
            env=_environment(server.base_url, root / "home"), check=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600,
        )  # fmt: skip
        requests = list(server.state()["requests"])
    wait = next(e for e in _events(project) if e["type"] == "wait.started")
    reset = _at(wait["probe_at"]) - GRACE
    refused = next(r for r in requests if r["gate"] == "window")
    after = requests[requests.index(refused) + 1 :]
    early = [r for r in after if _at(r["at"]) < reset]
    probe = next(r for r in after if r["kind"] == "probe")
    turn = next(r for r in after if r["kind"] == "turn" and _at(r["at"]) > _at(probe["at"]))
    return Reopening(
        probe_seconds=(_at(probe["at"]) - reset).total_seconds(),
        turn_seconds=(_at(turn["at"]) - reset).total_seconds(),
        early=len(early),
    )


def _debug_log(project: Path) -> str:
    runs = project / ".claudeloop" / "runs"
    for run in runs.iterdir() if runs.is_dir() else ():
        path = run / "debug.log"
        if path.exists():
            return path.read_text()
    return ""


def stop_delay(root: Path, flags: list[str], *, ahead: bool) -> Stop:
    """`claudeloop stop` during a wait (`ahead`: once Claude Code was started ahead of
    its probe and is idle): seconds from the stop written to the run's process gone."""
    project = root / "project"
    project.mkdir(parents=True)
    # Closed until lifted, its reset far away; the probe due in 20 s, within the lead.
    scenario = parse_scenario(
        _scenario({"until_lift": True, "announce_reset_seconds": 3600}),
        source="bench/reset",
        fmt="json",
    )
    with RehearsalServer(scenario) as server:
        env = _environment(server.base_url, root / "home")
        run = subprocess.Popen(
            [sys.executable, "-m", "claudeloop", "run", "--prompt", "Write the steps.",
             "--window-probe-interval", "20s", *flags, "--cwd", str(project), "--json"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while not any(e["type"] == "wait.started" for e in _events(project)):
                if time.monotonic() > deadline:
                    raise RuntimeError("the run never waited")
                time.sleep(0.1)
            while ahead and "] started ahead: " not in _debug_log(project):
                if time.monotonic() > deadline:
                    raise RuntimeError("the run never started Claude Code ahead")
                time.sleep(0.1)
            time.sleep(1.0)  # idle a moment
            asked = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "claudeloop", "stop", "--cwd", str(project)],
                env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            written = time.perf_counter()
            run.wait(timeout=60)
            return Stop(written - asked, time.perf_counter() - written)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()


@contextlib.contextmanager
def busy(count: int = 2) -> Iterator[None]:
    """`count` processes that keep a core each busy, killed after."""
    spinning = [subprocess.Popen(["python3", "-c", BUSY]) for _ in range(count)]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def run() -> Figures:
    root = Path(tempfile.mkdtemp(prefix="claudeloop-bench-reset-"))
    try:
        idle_before = reopening(root / "idle-before", BEFORE)
        idle_after = reopening(root / "idle-after", [])
        stop_before = stop_delay(root / "stop-before", BEFORE, ahead=False)
        stop_after = stop_delay(root / "stop-after", [], ahead=True)
        with busy():
            loaded_before = reopening(root / "loaded-before", BEFORE)
            loaded_after = reopening(root / "loaded-after", [])
            stop_loaded_before = stop_delay(root / "stop-loaded-before", BEFORE, ahead=False)
            stop_loaded_after = stop_delay(root / "stop-loaded-after", [], ahead=True)
        return Figures(
            idle_before=idle_before,
            idle_after=idle_after,
            loaded_before=loaded_before,
            loaded_after=loaded_after,
            stop_before=stop_before,
            stop_after=stop_after,
            stop_loaded_before=stop_loaded_before,
            stop_loaded_after=stop_loaded_after,
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def lines(figures: Figures) -> list[str]:
    def met(seconds: float) -> str:
        return "met" if seconds <= TARGET_SECONDS else "MISSED"

    def stop_row(label: str, before: Stop, after: Stop) -> list[str]:
        def said(stop: Stop) -> str:
            return f"{stop.command_seconds:.1f} s + {stop.stopped_seconds:.1f} s"

        return [
            f"| {label} | {said(before)} | {said(after)} "
            f"| <= {TARGET_SECONDS:.0f} s: {met(after.stopped_seconds)} |"
        ]

    def row(label: str, before: Reopening, after: Reopening) -> list[str]:
        ratio = after.turn_seconds / before.turn_seconds if before.turn_seconds else 0.0
        return [
            f"| {label}, before (`--ready-ahead 0`) | {before.probe_seconds:.1f} s "
            f"| {before.turn_seconds:.1f} s | 1.00 | {before.early} | |",
            f"| {label}, after (defaults) | {after.probe_seconds:.1f} s "
            f"| {after.turn_seconds:.1f} s | {ratio:.2f} | {after.early} "
            f"| <= {TARGET_SECONDS:.0f} s: {met(after.turn_seconds)} |",
        ]

    return [
        "## The instant a window reopens",
        "",
        "`claudeloop run`, the bundled CLI and the rehearsal API: the 5-hour window closes "
        f"at turn 2 with its reset announced {GATE_SECONDS} s ahead, the reset grace 1 s. "
        "From the announced reset to the probe's request reaching the API and to the next "
        'turn\'s; loaded: beside two busy processes (`python3 -c "while True: pass"` '
        "twice) on this machine. Before, each Claude Code process starts at the instant; "
        "after, both (the probe's and the resumed session's) are started and connected "
        "ahead of it, and only the requests wait for it.",
        "",
        "| machine, code | to the probe | to the next turn | ratio | requests before the "
        "reset | target |",
        "|---|---|---|---|---|---|",
        *row("idle", figures.idle_before, figures.idle_after),
        *row("loaded", figures.loaded_before, figures.loaded_after),
        "",
        "`claudeloop stop` during such a wait (after: with its Claude Code processes "
        "started ahead and idle): the command's own time, then from its request written to "
        "the run's process gone.",
        "",
        "| machine | before | after | target (the run gone) |",
        "|---|---|---|---|",
        *stop_row("idle", figures.stop_before, figures.stop_after),
        *stop_row("loaded", figures.stop_loaded_before, figures.stop_loaded_after),
    ]


if __name__ == "__main__":
    print("\n".join(lines(run())))
