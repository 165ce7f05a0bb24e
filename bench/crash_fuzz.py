"""The crash fuzz: runs killed with SIGKILL at every phase, then resumed, until done.

Each case is one run of the real claudeloop and the real bundled Claude Code CLI
against a rehearsal API of its own on 127.0.0.1. The run is killed (the whole process
group, as a crash or a closed laptop would) once, twice or three times, each time at a
moment drawn from a phase: start-up (a few milliseconds after the command began), a
turn (after `turn.started`, with a random delay), a wait for the 5-hour window (after
`wait.started`), a probe, a verification check (after `verify.started`), a silent
stream (an answer the rehearsal starts and then holds, `hang`, killed before the
watchdog gives up on it) and the watchdog's kill (the same stream, killed around the
moment the watchdog, its silence compressed with `--silence-timeout`, ends the CLI).
After each kill, `claudeloop resume`; the last resume drives the run to its end.

What must hold for every case, and is counted:
- the run ends done (exit 0), with one Claude session throughout;
- state.json is valid after every kill;
- no turn number is finished twice, and the ledger's turns are the turns answered
  (a turn the kill cut off is sent again under its number: a verdict the service
  served it before the kill is billed, not counted as a turn);
- no verification check outlives the driver that started it (its processes are
  looked for by a token in their command line, once the driver is gone);
- dollars equal the price of what was served, except for requests in flight at a
  kill, whose answer the CLI never recorded: the ledger bills those at an estimate.

What the ledger knew is printed per case: what the rehearsal service billed (its
answered requests, each at the price of one, from an uninterrupted baseline run), the
ledger's dollars, and the part of them that is an estimate (docs/architecture/
decisions/0010-the-ledger-under-kill-9.md).

`python -m bench.crash_fuzz [CASES] [SEED]` (44 cases by default). It prints a table of
figures; like every benchmark it never fails the tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.overhead import environment
from claudeloop.rehearsal import RehearsalServer, parse_scenario

PHASES = ("start-up", "turn", "wait", "probe", "check", "silent", "watchdog")
# The phases played on a stream the rehearsal holds open (a `hang` gate on turn 1's
# first request, once per such phase).
SILENT_PHASES = ("silent", "watchdog")
# The order a run meets the phases in: a case's kills are played in it.
TIMELINE = ("start-up", "silent", "watchdog", "turn", "wait", "probe", "check")
# What each phase waits for in events.jsonl before the kill's delay starts.
TRIGGER = {
    "start-up": None,
    "turn": "turn.started",
    "wait": "wait.started",
    "probe": "wait.started",  # the probe follows the wait's end: killed a little later
    "check": "verify.started",
    "silent": None,  # the rehearsal's hang, not an event, starts these two
    "watchdog": None,
}
WAITS = [
    "--window-probe-interval", "2s",
    "--reset-grace", "1s",
    "--max-wait", "3m",
]  # fmt: skip
# How long a stream may be silent before the watchdog ends the turn, compressed.
SILENCE_SECONDS = 4.0
SILENCE = ["--silence-timeout", f"{SILENCE_SECONDS:.0f}s"]


def _scenario(window: bool, hangs: int = 0) -> dict[str, Any]:
    turns = [
        {
            "steps": [
                {
                    "kind": "tool",
                    "name": "Write",
                    "input": {"file_path": f"{{cwd}}/step{n}.txt", "content": f"step {n}\n"},
                },
                {
                    "kind": "verdict",
                    "complete": n == 3,
                    "remaining_work": [] if n == 3 else [f"Write step{n + 1}.txt"],
                    "summary": f"Wrote step{n}.txt.",
                },
            ]
        }
        for n in (1, 2, 3)
    ]
    gates: list[dict[str, Any]] = [{"kind": "window", "at_turn": 2, "for_seconds": 3}]
    gates = gates if window else []
    if hangs:
        # Turn 1's answer starts and goes silent, once per phase played on it.
        gates.append({"kind": "hang", "at_turn": 1, "for_requests": hangs})
    return {"description": "Three steps, a window at turn 2.", "turns": turns, "gates": gates}


@dataclass
class Case:
    number: int
    phases: tuple[str, ...]
    exit_code: int = -1
    outcome: str = ""
    sessions: int = 0
    invalid_states: int = 0
    doubled_turns: int = 0
    ledger_turns: int = 0
    verdicts: int = 0
    answered_turns: int = 0
    dollars: float = 0.0
    served_dollars: float = 0.0
    estimated_dollars: float = 0.0
    # Turn requests whose answer the rehearsal started and then held (hang).
    hung: int = 0
    leftover_checks: int = 0
    answered: int = 0
    kills: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return (
            self.exit_code == 0
            and self.outcome == "done"
            and self.sessions == 1
            and self.invalid_states == 0
            and self.doubled_turns == 0
            and self.ledger_turns == self.answered_turns
            and self.leftover_checks == 0
            and self.dollars >= self.served_dollars * (1 - 1e-6)
        )


def _events(project: Path) -> list[dict[str, Any]]:
    logs = list((project / ".claudeloop" / "runs").glob("*/events.jsonl"))
    if not logs:
        return []
    lines = logs[0].read_text(errors="replace").splitlines()
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            continue  # a line cut by the kill: the next resume goes on after it
    return events


def _state_valid(project: Path) -> bool:
    states = list((project / ".claudeloop" / "runs").glob("*/state.json"))
    if not states:
        return True  # killed before the record was made: a new run starts
    try:
        json.loads(states[0].read_text())
    except ValueError:
        return False
    return True


def _processes_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in command:
            found.append(int(entry.name))
    return found


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _wait_for(project: Path, event_type: str, count: int, timeout: float) -> bool:
    return _wait_until(
        lambda: sum(e["type"] == event_type for e in _events(project)) >= count, timeout
    )


def _wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _hung(requests: list[dict[str, Any]]) -> int:
    return sum(1 for r in requests if r["gate"] == "hang")


@dataclass
class Setup:
    project: Path
    env: dict[str, str]
    token: str
    first: list[str]
    again: list[str]
    # The rehearsal's requests so far (what a silent phase waits for).
    requests: Callable[[], list[dict[str, Any]]]

    def has_record(self) -> bool:
        return bool(list((self.project / ".claudeloop" / "runs").glob("*/state.json")))

    def command(self, resuming: bool) -> list[str]:
        """`run` until a record exists (a kill before it was made leaves none), then
        `resume`."""
        chosen = self.again if resuming and self.has_record() else self.first
        return [*chosen, "--cwd", str(self.project), "--json"]


def run_case(number: int, phases: tuple[str, ...], rng: random.Random, root: Path) -> Case:
    case = Case(number, phases)
    project = root / f"case-{number}" / "project"
    project.mkdir(parents=True)
    (project / "PLAN.md").write_text(
        "# Plan\n\n- [ ] Write step1.txt\n- [ ] Write step2.txt\n- [ ] Write step3.txt\n"
    )
    hangs = sum(phase in SILENT_PHASES for phase in phases)
    text = json.dumps(_scenario(window=True, hangs=hangs))
    scenario = parse_scenario(text, source="bench/crash_fuzz", fmt="json")
    with RehearsalServer(scenario) as server:
        env = environment(server.base_url, root / f"case-{number}" / "home")
        env["IS_SANDBOX"] = "1"
        env["CLAUDELOOP_STATE_DIR"] = str(root / f"case-{number}" / "state")
        token = f"fuzz-check-{number}-{rng.randrange(1 << 30)}"
        # A check that takes a while and carries the case's token in its command line.
        check = f"python3 -c 'import time; time.sleep(1.5)' {token}"
        base = [sys.executable, "-m", "claudeloop"]
        setup = Setup(
            project,
            env,
            token,
            first=[*base, "run", "PLAN.md", "--verify", check, *WAITS, *SILENCE],
            again=[*base, "resume", *WAITS, *SILENCE],
            requests=lambda: list(server.state()["requests"]),
        )
        for index, phase in enumerate(phases):
            _kill_once(case, setup, phase, rng, resuming=index > 0)
        final = subprocess.run(
            setup.command(resuming=True),
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        _judge(case, final, project, server.state())
    return case


def _kill_once(case: Case, setup: Setup, phase: str, rng: random.Random, *, resuming: bool) -> None:
    """Start (or resume) the run, kill its process group in `phase`, and count what the
    kill left: checks still running, a state.json that does not parse."""
    seen = Counter(e["type"] for e in _events(setup.project))
    hung = _hung(setup.requests())
    process = subprocess.Popen(
        setup.command(resuming),
        env=setup.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    trigger = TRIGGER[phase]
    if phase in SILENT_PHASES:
        if not _wait_until(lambda: _hung(setup.requests()) > hung, 120):
            case.notes.append(f"{phase}: no silent stream before the run ended")
        elif phase == "silent":
            time.sleep(rng.uniform(0.0, SILENCE_SECONDS - 1.5))
        else:  # around the watchdog's kill: the CLI ended, the turn about to go again
            time.sleep(SILENCE_SECONDS + rng.uniform(-0.5, 2.0))
    elif trigger is None:
        time.sleep(rng.uniform(0.01, 1.5))
    elif not _wait_for(setup.project, trigger, seen[trigger] + 1, 90):
        case.notes.append(f"{phase}: no {trigger} before the run ended")
    else:
        extra = 1.0 if phase == "probe" else 0.0
        time.sleep(extra + rng.uniform(0.0, 1.2))
    if process.poll() is None:
        _kill_group(process)
        case.kills += 1
    time.sleep(0.3)  # the kernel delivers a parent-death signal
    leftovers = _processes_with(setup.token)
    case.leftover_checks += len(leftovers)
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # so that one leftover is counted once
    if not _state_valid(setup.project):
        case.invalid_states += 1


def _judge(
    case: Case,
    final: subprocess.CompletedProcess[str],
    project: Path,
    served: dict[str, Any],
) -> None:
    case.exit_code = final.returncode
    try:
        result = json.loads(final.stdout)
    except ValueError:
        case.notes.append(final.stderr.strip().splitlines()[-1] if final.stderr.strip() else "")
        return
    case.outcome = result["outcome"]
    case.ledger_turns = result["turns"]
    case.dollars = result["dollars"]
    case.estimated_dollars = float(result.get("estimated_dollars") or 0.0)
    events = _events(project)
    sessions = {e["session_id"] for e in events if e["type"] == "turn.finished"}
    case.sessions = len(sessions - {None, ""})
    finished = [e["turn"] for e in events if e["type"] == "turn.finished"]
    case.doubled_turns = len(finished) - len(set(finished))
    case.verdicts = served["verdicts"]
    case.answered_turns = sum(
        e["type"] == "turn.finished" and e["capacity"] == "available" for e in events
    )
    case.answered = _answered(served)
    case.hung = _hung(served["requests"])


def _answered(served: dict[str, Any]) -> int:
    return sum(1 for r in served["requests"] if r["answered"] and r["kind"] in ("turn", "probe"))


def main(cases: int = 44, seed: int = 20) -> list[Case]:
    rng = random.Random(seed)
    results = []
    with tempfile.TemporaryDirectory(prefix="claudeloop-crash-fuzz-") as tmp:
        root = Path(tmp)
        # The baseline: the same run, never killed, prices one answered request (every
        # answer of the rehearsal API has the same usage).
        baseline = run_case(-1, (), rng, root)
        price = baseline.dollars / baseline.answered
        print(f"baseline: {baseline.answered} answered requests, ${baseline.dollars:.4f}")
        for number in range(cases):
            kills = rng.choice((1, 1, 2, 3))
            drawn = {PHASES[(number + i) % len(PHASES)] for i in range(kills)}
            phases = tuple(phase for phase in TIMELINE if phase in drawn)
            case = run_case(number, phases, rng, root)
            case.served_dollars = price * case.answered
            results.append(case)
            mark = "ok" if case.holds else "BROKEN"
            print(
                f"case {number:2d} {'+'.join(phases):24s} kills {case.kills} exit "
                f"{case.exit_code:3d} sessions {case.sessions} turns {case.ledger_turns}/"
                f"{case.answered_turns} (verdicts served {case.verdicts}) "
                f"billed ${case.served_dollars:.4f} ledger ${case.dollars:.4f} "
                f"(estimated ${case.estimated_dollars:.4f}; held streams {case.hung}) "
                f"leftover checks {case.leftover_checks} {mark} {' '.join(case.notes)}",
                flush=True,
            )
    report(results)
    return results


def report(results: list[Case]) -> None:
    kills = sum(case.kills for case in results)
    held = sum(case.holds for case in results)
    exact = sum(abs(case.dollars - case.served_dollars) <= 1e-6 * case.dollars for case in results)
    by_phase = Counter(phase for case in results for phase in case.phases)
    print()
    print(f"{len(results)} runs, {kills} kills ({dict(by_phase)})")
    print(f"every invariant held: {held}/{len(results)}")
    print(f"done: {sum(case.outcome == 'done' for case in results)}/{len(results)}")
    print(f"one session: {sum(case.sessions == 1 for case in results)}/{len(results)}")
    print(f"a turn finished twice: {sum(case.doubled_turns > 0 for case in results)}")
    print(f"state.json invalid after a kill: {sum(case.invalid_states for case in results)}")
    print(f"checks that outlived their driver: {sum(case.leftover_checks for case in results)}")
    print(f"dollars equal to what was served: {exact}/{len(results)}")
    known = sum(
        abs(case.dollars - case.estimated_dollars - case.served_dollars) <= 1e-6 * case.dollars
        for case in results
    )
    print(f"dollars but the estimate equal to what was served: {known}/{len(results)}")
    short = [case for case in results if case.dollars < case.served_dollars * (1 - 1e-6)]
    print(f"dollars short of what was served: {len(short)}")
    # What the ledger knew: the service's bill, the ledger's, and the estimated part.
    billed = sum(case.served_dollars for case in results)
    ledger = sum(case.dollars for case in results)
    estimated = sum(case.estimated_dollars for case in results)
    with_estimate = sum(case.estimated_dollars > 0 for case in results)
    print(
        f"the service billed ${billed:.4f}; the ledgers say ${ledger:.4f}, of it "
        f"${estimated:.4f} estimated ({with_estimate} runs hold an estimate)"
    )


if __name__ == "__main__":
    arguments = sys.argv[1:]
    main(*(int(value) for value in arguments[:2]))
