"""What a silent answer costs, and a CLI that never exits after its result (issue 40),
through `claudeloop run`, the bundled Claude Code CLI and the rehearsal API, every case
at once, each with its own server and project.

- An answer that starts, then says nothing with its connection open (the rehearsal's
  `hang` gate): with Claude Code's own stream timeout (today's 300 s: the baseline, run
  with CLAUDE_STREAM_IDLE_TIMEOUT_MS set, so claudeloop sets none, and the turn's own
  watchdog out of the way) and with claudeloop's defaults.
- An answer whose first byte never comes (`no_first_byte`), claudeloop's defaults.
  A silent answer's cost runs from its request's arrival to the arrival of the same
  turn's request sent again. Target: <= 90 s.
- A CLI that wrote its result and does not exit (a stand-in that runs the real CLI, then
  lingers with its output open, deaf to SIGTERM): the run's wall time over the same run
  with the plain CLI, per process that had to be ended (the debug log counts them): a
  turn's after a refusal, a probe's, the last at the run's end. Target: <= 30 s.

`python -m bench.watchdog` runs it alone (about six minutes: the baseline's 300 s).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.overhead import environment
from bench.scenario_turns import write_turn
from claudeloop.rehearsal import RehearsalServer, parse_scenario

WAITS = ["--window-probe-interval", "3s", "--reset-grace", "1s", "--max-wait", "10m"]
SILENT_TARGET = 90.0
LINGER_TARGET = 30.0


@dataclass(frozen=True)
class WatchdogCost:
    baseline_seconds: float  # a hanging answer, Claude Code's own timeout
    hang_seconds: float  # the same, claudeloop's defaults
    no_first_byte_seconds: float  # headers never come, claudeloop's defaults
    linger_seconds: float  # per CLI that lingered after its result
    lingered: int  # how many had to be ended in that run

    @property
    def ratio(self) -> float:
        return self.hang_seconds / self.baseline_seconds


def _run(
    root: Path,
    scenario: dict[str, Any],
    *,
    flags: list[str],
    env: dict[str, str] | None = None,
) -> tuple[float, list[dict[str, Any]], str]:
    """The run's wall time, the requests the rehearsal saw, and the run's debug log."""
    project = root / "project"
    project.mkdir(parents=True)
    plan = parse_scenario(json.dumps(scenario), source="bench/watchdog", fmt="json")
    with RehearsalServer(plan) as server:
        environ = environment(server.base_url, root / "home") | (env or {})
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "claudeloop", "run", "--prompt", "Write the steps.",
             *WAITS, *flags, "--cwd", str(project), "--json"],
            env=environ, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            timeout=900,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        requests = list(server.state()["requests"])
    (run,) = list((project / ".claudeloop" / "runs").iterdir())
    debug = run / "debug.log"
    return seconds, requests, debug.read_text() if debug.exists() else ""


def _silent_cost(root: Path, gate: str, *, flags: list[str], env: dict[str, str]) -> float:
    """From the silent request to the same turn's request sent again."""
    scenario = {
        "turns": [write_turn(complete=True, n=1)],
        "gates": [{"kind": gate, "at_turn": 1, "for_requests": 1}],
    }
    _, requests, _ = _run(root, scenario, flags=flags, env=env)
    first = [r for r in requests if r["kind"] == "turn" and r["turn"] == 1 and r["step"] == 0]
    silent, again = first[0], first[1]
    if silent["gate"] != gate or again["gate"] is not None:
        raise RuntimeError(f"the turn was not sent again after its silence: {first}")
    return float(again["elapsed"] - silent["elapsed"])


def _lingering_cli(root: Path) -> Path:
    from claude_agent_sdk import __file__ as sdk_file

    real = Path(sdk_file).parent / "_bundled" / "claude"
    wrapper = root / "claude-that-lingers"
    wrapper.write_text(
        "#!/bin/bash\n"
        f'case " $* " in *" stream-json "*) ;; *) exec "{real}" "$@" ;; esac\n'
        f'"{real}" "$@"\n'
        "trap '' TERM\n"
        "exec sleep 600\n"
    )
    wrapper.chmod(0o755)
    return wrapper


def _linger_scenario() -> dict[str, Any]:
    # Turn 2 is refused once (its process ended), the wait probes once, the run ends.
    return {
        "turns": [write_turn(complete=False, n=1), write_turn(complete=True, n=2)],
        "gates": [
            {"kind": "window", "at_turn": 2, "match": "turns", "for_requests": 1,
             "announce_reset_seconds": 1}
        ],
    }  # fmt: skip


def run() -> WatchdogCost:
    root = Path(tempfile.mkdtemp(prefix="claudeloop-bench-watchdog-"))
    try:
        lingering = _lingering_cli(root)
        today = {"CLAUDE_STREAM_IDLE_TIMEOUT_MS": "300000"}
        with ThreadPoolExecutor(max_workers=5) as pool:
            baseline = pool.submit(
                _silent_cost, root / "baseline", "hang", flags=["--silence-timeout", "30m"],
                env=today,
            )  # fmt: skip
            hang = pool.submit(_silent_cost, root / "hang", "hang", flags=[], env={})
            no_byte = pool.submit(
                _silent_cost, root / "no-first-byte", "no_first_byte", flags=[], env={}
            )
            plain = pool.submit(_run, root / "plain", _linger_scenario(), flags=[])
            lingered = pool.submit(
                _run, root / "lingering", _linger_scenario(), flags=[],
                env={"CLAUDELOOP_CLI_PATH": str(lingering)},
            )  # fmt: skip
            plain_seconds, _, _ = plain.result()
            linger_seconds, _, debug = lingered.result()
            ended = debug.count("did not exit within") + debug.count(
                "probe: Claude Code had not exited"
            )
            return WatchdogCost(
                baseline_seconds=baseline.result(),
                hang_seconds=hang.result(),
                no_first_byte_seconds=no_byte.result(),
                linger_seconds=(linger_seconds - plain_seconds) / max(ended, 1),
                lingered=ended,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def lines(cost: WatchdogCost) -> list[str]:
    def met(seconds: float, target: float) -> str:
        return "met" if seconds <= target else "MISSED"

    return [
        "## A silent answer, a CLI that never exits",
        "",
        "`claudeloop run`, the bundled CLI and the rehearsal API, every case at once. A "
        "silent answer costs from its request to the same turn's request sent again; a "
        "lingering CLI (one that runs the real one, then keeps its output open, deaf to "
        "SIGTERM) costs the run's wall time over the same run with the plain CLI, per "
        "process that had to be ended.",
        "",
        "| case | cost | ratio | target |",
        "|---|---|---|---|",
        f"| an answer that starts, then goes silent: Claude Code's own timeout (baseline) "
        f"| {cost.baseline_seconds:.0f} s | 1.00 | |",
        f"| the same, claudeloop's defaults (the CLI's own idle timeout set to 50 s) "
        f"| {cost.hang_seconds:.0f} s | {cost.ratio:.2f} "
        f"| <= {SILENT_TARGET:.0f} s: {met(cost.hang_seconds, SILENT_TARGET)} |",
        f"| an answer whose first byte never comes, claudeloop's defaults (the turn's "
        f"watchdog at 75 s, the turn sent again) | {cost.no_first_byte_seconds:.0f} s "
        f"| {cost.no_first_byte_seconds / cost.baseline_seconds:.2f} "
        f"| <= {SILENT_TARGET:.0f} s: {met(cost.no_first_byte_seconds, SILENT_TARGET)} |",
        f"| a CLI that never exits after its result ({cost.lingered} ended in the run) "
        f"| {cost.linger_seconds:.0f} s each | | <= {LINGER_TARGET:.0f} s: "
        f"{met(cost.linger_seconds, LINGER_TARGET)} |",
        "",
        "Before the watchdog, a probe's CLI that never exited held the run for good (the "
        "SDK's query waits for the process to end).",
    ]


if __name__ == "__main__":
    print("\n".join(lines(run())))
