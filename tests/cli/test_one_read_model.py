"""One read model of a run (application.run_facts), said alike by every view.

Runs of every outcome are driven by the real runner on fakes of the service, into real
run directories (state.json, events.jsonl) registered in the machine's index (one of
them killed mid-turn and resumed by a second runner, as `claudeloop resume` does); then each
view a person reads is rendered: `status`, `runs`, `runs --all`, `report`, `report
--all`, their `--json`, summary.md, the `--json` result of `run`, and the dashboard's
front page, run page and report. Each must carry the same turns ("4 sent, 3 answered,
1 refused") and the same money, the probes' share said apart, the same times (a date
and seconds), the same time waited (its parts adding up to it), the same words for
what is left and where that comes from, and each quantity in its one format, so no two
can seem to disagree.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import partial
from pathlib import Path

import anyio
import pytest

from claudeloop.adapters.fleet import run_archive
from claudeloop.adapters.fleet.engine import parse_engine
from claudeloop.adapters.fleet.leases import Leases
from claudeloop.adapters.fleet.queue import Order, add
from claudeloop.adapters.redaction import Redactor
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.adapters.run_directory.layout import EventLog
from claudeloop.adapters.run_index import RunIndexDirectory
from claudeloop.application.dashboard import last_hours, machine_report, machine_rows
from claudeloop.application.ports import IndexedRun, TurnOutcome
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.run_facts import RunFacts, run_facts
from claudeloop.application.run_page import run_view
from claudeloop.application.run_rows import RunRow
from claudeloop.application.runner import Runner
from claudeloop.application.summary import result_object
from claudeloop.cli.bootstrap import project_runs
from claudeloop.cli.dashboard.pages import overview_main, run_main
from claudeloop.cli.report import report_main
from claudeloop.domain.budget import Budget, BudgetLedger
from claudeloop.domain.loop import ControlCommand, RunState
from claudeloop.domain.signals import TurnSignals
from tests.application.fakes import (
    START,
    FakeClock,
    FakeControl,
    FakeGateway,
    FakeSleeper,
    FakeTree,
    MemoryPlans,
    rejected_turn,
    verdict_turn,
)
from tests.cli.conftest import Invocation
from tests.json_view import plain

Invoke = Callable[..., Invocation]
TURN = 0.0016
WINDOW_CLOSED = TurnSignals(
    rate_limit_status="rejected",
    rate_limit_type="five_hour",
    resets_at=START + timedelta(hours=2),
    api_error_status=429,
    assistant_error="rate_limit",
)
AUTH_FAILED = TurnSignals(assistant_error="authentication_failed", api_error_status=401)


@dataclass(frozen=True)
class Script:
    turns: tuple[TurnOutcome, ...]
    probes: tuple[TurnSignals, ...] = ()
    budget: Budget = field(default_factory=Budget)
    # `claudeloop wind-down` asked during this turn (1 the first).
    wind_down_in: int | None = None
    # The machine dies (kill -9) while this turn is in flight; `turns` after it are the
    # resumed run's, the first of them the cut-off turn sent again.
    killed_in: int | None = None


class Killed(BaseException):
    """kill -9: nothing of the runner's own runs after it (it is no Exception)."""


SCRIPTS = {
    "done": Script((verdict_turn(complete=True, summary="all done", cost=TURN),)),
    "blocked": Script((verdict_turn(blocked_on="the staging password", cost=TURN),)),
    "budget_exhausted": Script(
        (verdict_turn(remaining=("b",), cost=TURN),) * 2, budget=Budget(max_turns=2)
    ),
    # The run of issue 42: 4 sent, 3 answered, 1 refused, and a probe that cost money.
    "refused_then_probed": Script(
        (
            verdict_turn(remaining=("b", "c"), cost=TURN),
            verdict_turn(remaining=("c",), cost=TURN),
            rejected_turn(WINDOW_CLOSED, cost=0.0),
            verdict_turn(complete=True, summary="all done", cost=TURN),
        ),
        probes=(TurnSignals(),),
    ),
    "auth_failed": Script((rejected_turn(AUTH_FAILED, cost=0.0),)),
    "wound_down": Script(
        (verdict_turn(remaining=("b",), cost=TURN), verdict_turn(remaining=("c",), cost=TURN)),
        wind_down_in=2,
    ),
    # Killed in turn 2; the resume sends it again and bills what the service served the
    # cut-off request, an estimate, in the turn's dollars.
    "killed_and_resumed": Script(
        (
            verdict_turn(remaining=("b",), cost=TURN),
            replace(
                verdict_turn(complete=True, summary="all done", cost=TURN + 0.0008),
                estimated_cost_usd=0.0008,
            ),
        ),
        killed_in=2,
    ),
}


def driven(
    cwd: Path,
    run_id: str,
    script: Script,
    index: RunIndexDirectory | None = None,
    *,
    profile: str = "default",
) -> RunRecord:
    """A run of `script`, by the runner, into a real run directory under `cwd`,
    registered in this machine's index (`index`: another machine's), on `profile` (a
    rehearsal's run is on the rehearsal's)."""
    directory = RunDirectory.create(cwd, run_id)
    clock = FakeClock()
    control = FakeControl()
    gateway = FakeGateway(turns=deque(script.turns), probes=deque(script.probes), clock=clock)

    def during_turn(number: int) -> None:
        if number == script.wind_down_in:
            control.command = ControlCommand.WIND_DOWN
        if number == script.killed_in:
            raise Killed

    gateway.on_turn = during_turn
    spec = RunSpec(
        cwd=cwd,
        task=f"Build the {run_id} thing.\nIn detail.",
        budget=script.budget,
        profile=profile,
    )
    record = RunRecord(
        run_id=run_id,
        spec=spec,
        state=RunState(ledger=BudgetLedger(budget=spec.budget)),
        started_at=START,
    )
    resumed = False
    while True:
        log = EventLog(directory, clock, Redactor())
        runner = Runner(
            gateway=gateway,
            clock=clock,
            sleeper=FakeSleeper(clock=clock, control=control),
            events=log,
            store=directory,
            control=control,
            plans=MemoryPlans(),
            tree=FakeTree(),
        )

        try:
            ended = anyio.run(partial(runner.drive, record, resumed=resumed))
        except Killed:
            # What the kill left on disk is what the resume reads; a new driver, later.
            log.close()
            clock.advance(60.0)
            gateway.on_turn = None
            record, resumed = directory.load(), True
            continue
        log.close()
        break
    directory.write_summary(ended)
    (index or RunIndexDirectory.of_environment()).register(
        IndexedRun(run_id, directory.path, cwd, None, "box", START)
    )
    return ended


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, RunFacts]:
    """One project per outcome, each run's facts by its id."""
    facts: dict[str, RunFacts] = {}
    for name, script in SCRIPTS.items():
        run_id = f"20261130-090000-{name.replace('_', '-')}"
        ended = driven(tmp_path / name, run_id, script)
        facts[run_id] = run_facts(ended, now=START)
    return facts


def test_the_run_of_issue_42_says_its_probe_and_adds_up(machine: dict[str, RunFacts]) -> None:
    facts = machine["20261130-090000-refused-then-probed"]
    assert facts.turns_said == "4 sent, 3 answered, 1 refused"
    assert facts.dollars_said == "$0.0058 (turns $0.0048 + probes $0.0010)"
    assert facts.title == "Build the 20261130-090000-refused-then-probed thing."
    assert facts.outcome == "done"
    assert facts.duration_seconds is not None
    assert facts.duration_seconds > 0
    # It waited for the window: every view says the same time waited (below).
    assert facts.waited_seconds > 0
    assert (facts.left, facts.left_from) == ((), None)  # done: nothing is left


def test_a_wound_down_run_and_a_killed_one_count_their_turns_once(
    machine: dict[str, RunFacts],
) -> None:
    wound = machine["20261130-090000-wound-down"]
    assert (wound.outcome, wound.turns_said) == ("wound_down", "2 sent, 2 answered, 0 refused")
    # No plan: what is left is the remaining work the model listed last.
    assert (wound.left, wound.left_from) == (("c",), "model")
    killed = machine["20261130-090000-killed-and-resumed"]
    # The turn the kill cut off was sent again under its number: one turn, not two, and
    # its dollars hold what the cut-off request was served.
    assert (killed.outcome, killed.turns_said) == ("done", "2 sent, 2 answered, 0 refused")
    assert killed.dollars == pytest.approx(TURN + TURN + 0.0008)


# What each quantity never looks like, in any view: a duration with a decimal or a
# space before its unit, or minutes of nothing (`15.1s`, `0.5 s`, `0m35s`, `4:59`); a
# start without its date or seconds; money cut short of its precision beside another.
_NOT_OUR_FORMATS = re.compile(
    r"\b\d+\.\d+ ?s\b|\b0m\d\ds\b|(?<![\d:+])\d{1,2}:\d\d(?![\d:])|\$0\.\d{3}(?!\d)"
    r"|started \d\d:\d\d|\d{4}-\d\d-\d\d \d\d:\d\d UTC"
)


def _assert_says(
    text: str, facts: RunFacts, where: str, *, waits: bool = True, left: bool = True
) -> None:
    assert facts.turns_said in text, f"{where} lacks {facts.turns_said!r}"
    assert facts.dollars_said in text, f"{where} lacks {facts.dollars_said!r}"
    assert facts.times_said in text, f"{where} lacks {facts.times_said!r}"
    if waits:
        assert any(
            said in text
            for said in (
                f"waited {facts.waited_said}",
                f"Time waited for capacity: {facts.waited_said}",
                # The report's table: its column says what it is.
                f'<td class="n">{facts.waited_said}<',
            )
        ), f"{where} lacks the time waited {facts.waited_said!r}"
    if left and facts.left:
        assert facts.left_from_said in text, f"{where} lacks {facts.left_from_said!r}"
        assert all(item in text for item in facts.left), f"{where} lacks {facts.left}"
    wrong = _NOT_OUR_FORMATS.findall(text)
    assert not wrong, f"{where} says {wrong}"


def _assert_counts_json(row: dict[str, object], facts: RunFacts, where: str) -> None:
    """The counts and the money, all a fleet's stored summary of a run knows."""
    expected = facts.to_json()
    for key in ("sent", "answered", "refused", "probes", "dollars", "probe_dollars"):
        assert row[key] == expected[key], f"{where}: {key}"
    said = row["said"]
    assert isinstance(said, dict)
    assert (said["turns"], said["dollars"]) == (facts.turns_said, facts.dollars_said), where


def _assert_json(row: dict[str, object], facts: RunFacts, where: str) -> None:
    expected = facts.to_json()
    for key in (
        "sent",
        "answered",
        "refused",
        "probes",
        "dollars",
        "probe_dollars",
        "started_at",
        "ended_at",
        "waited_seconds",
        "left",
        "left_from",
        "plan",
    ):
        assert row[key] == expected[key], f"{where}: {key}"
    assert "turns_refused" not in row, f"{where}: a second name for `refused`"
    # `turns` and `attempts` are the run's result's older names of `answered` and `sent`
    # (README), kept there and in `status --json` alone.
    assert row.get("turns", facts.answered) == facts.answered, where
    assert row.get("attempts", facts.sent) == facts.sent, where
    said = row["said"]
    assert isinstance(said, dict)
    assert said == expected["said"], where


def test_every_view_says_the_same_turns_and_money(
    machine: dict[str, RunFacts], claudeloop: Invoke, tmp_path: Path
) -> None:
    every_row = {
        row["run_id"]: row for row in json.loads(claudeloop("runs", "--all", "--json").out)
    }
    every_text = claudeloop("runs", "--all").out
    machine_json = json.loads(claudeloop("report", "--all", "--since", "100000d", "--json").out)
    machine_text = claudeloop("report", "--all", "--since", "100000d").out
    index = RunIndexDirectory.of_environment()
    no_mask = lambda _cwd: lambda view: view  # noqa: E731
    rows = machine_rows(index, project_runs, now=START, mask=no_mask)
    front = overview_main(rows, None, None, now=START)
    made = machine_report(index, project_runs, now=START, since=None, mask=no_mask)
    dashboard_report = report_main(made)
    for run_id, facts in machine.items():
        cwd = tmp_path / run_id.removeprefix("20261130-090000-").replace("-", "_")
        status = claudeloop("status", "--cwd", cwd)
        _assert_says(status.out, facts, f"status of {run_id}")
        _assert_json(json.loads(claudeloop("status", "--cwd", cwd, "--json").out), facts, "status")
        # A row of `runs` says no time waited nor what is left: `status` does.
        shown = claudeloop("runs", "--cwd", cwd).out
        _assert_says(shown, facts, f"runs of {run_id}", waits=False, left=False)
        (row,) = json.loads(claudeloop("runs", "--cwd", cwd, "--json").out)
        _assert_json(row, facts, f"runs --json of {run_id}")
        _assert_json(every_row[run_id], facts, f"runs --all --json of {run_id}")
        _assert_says(every_text, facts, "runs --all", waits=False, left=False)
        report = claudeloop("report", "--cwd", cwd, "--since", "100000d")
        _assert_says(report.out, facts, f"report of {run_id}")
        (reported,) = json.loads(
            claudeloop("report", "--cwd", cwd, "--since", "100000d", "--json").out
        )["runs"]
        _assert_json(reported, facts, f"report --json of {run_id}")
        (in_all,) = [run for run in machine_json["runs"] if run["run_id"] == run_id]
        _assert_json(in_all, facts, f"report --all --json of {run_id}")
        _assert_says(machine_text, facts, "report --all")
        # The time waited on each thing adds up to the time waited, in every form.
        assert sum(reported["waited_on"].values()) == facts.waited_seconds, run_id
        (run_text,) = [r for r in made.runs if r.run_id == run_id]
        assert sum(run_text.waited_on.values()) == run_text.waited_seconds
        summary = (cwd / ".claudeloop" / "runs" / run_id / "summary.md").read_text()
        _assert_says(summary, facts, f"summary.md of {run_id}")
        ended = RunDirectory(cwd / ".claudeloop" / "runs" / run_id).load()
        _assert_json(plain(result_object(ended)), facts, f"the --json result of {run_id}")
        (entry,) = [each for each in index.runs() if each.run_id == run_id]
        _assert_says(_unescaped(front), facts, "the front page", waits=False, left=False)
        page = run_main(run_view(entry, index, project_runs, now=START, mask=no_mask), None)
        _assert_says(_unescaped(page), facts, f"the dashboard's page of {run_id}")
        _assert_says(_unescaped(dashboard_report), facts, "the dashboard's report")
        (machine_row,) = [plain(row.to_json()) for row in rows if row.run_id == run_id]
        _assert_json(machine_row, facts, f"the dashboard's row of {run_id}")


def test_the_totals_add_the_runs_in_the_same_words(
    machine: dict[str, RunFacts], claudeloop: Invoke
) -> None:
    totals = json.loads(claudeloop("report", "--all", "--since", "100000d", "--json").out)["totals"]
    sent = sum(facts.sent for facts in machine.values())
    answered = sum(facts.answered for facts in machine.values())
    assert totals["said"]["turns"] == f"{sent} sent, {answered} answered, {sent - answered} refused"
    assert totals["dollars"] == pytest.approx(sum(facts.dollars for facts in machine.values()))
    assert totals["probe_dollars"] == pytest.approx(0.001)
    index = RunIndexDirectory.of_environment()
    rows = machine_rows(index, project_runs, now=START, mask=lambda _cwd: lambda view: view)
    recent = last_hours([replace_started(row) for row in rows], now=START)
    assert plain(recent.to_json())["said"] == totals["said"]


def replace_started(row: RunRow) -> RunRow:
    """The fake clock's runs started at START; the front page counts the last hours."""
    assert row.status is not None
    facts = replace(row.status.facts, started_at=START)
    return replace(row, status=replace(row.status, facts=facts))


def _unescaped(html: str) -> str:
    from html import unescape

    return unescape(html)


def test_a_fleet_says_each_run_as_its_own_machine_does(
    machine: dict[str, RunFacts], claudeloop: Invoke, tmp_path: Path
) -> None:
    """Each run stored in a fleet as its worker stores it (its record, and the summary
    the overview reads instead): `status --engine` says its turns and money, the
    probes' share apart, in the words of `status`, `runs` and `report`."""
    url = f"sqlite:///{tmp_path / 'fleet' / 'fleet.sqlite'}"
    engine = parse_engine(url, "test")
    for run_id in machine:
        cwd = tmp_path / run_id.removeprefix("20261130-090000-").replace("-", "_")
        add(engine, run_id, Order(str(cwd), ["PLAN.md"], account="0123456789abcdef"))
    leases = Leases(engine)
    try:
        leases.start("w1")
        for run_id, facts in machine.items():
            cwd = tmp_path / run_id.removeprefix("20261130-090000-").replace("-", "_")
            record = run_archive.pack_record(cwd / ".claudeloop" / "runs" / run_id)
            state = run_archive.state_in(record)
            leases.store(
                run_id,
                leases.claim(run_id, "w1"),
                "w1",
                phase=facts.phase,
                record=record,
                transcript=None,
                summary=run_archive.summary_of(state),
            )
    finally:
        leases.close()
    shown = claudeloop("status", "--engine", url, "--json")
    assert shown.exit_code == 0, shown.err
    rows = {row["run_id"]: row for row in json.loads(shown.out)["runs"]}
    table = claudeloop("status", "--engine", url).out
    for run_id, facts in machine.items():
        _assert_counts_json(rows[run_id], facts, f"status --engine --json of {run_id}")
        lines = table.splitlines()
        at = lines.index(next(line for line in lines if line.startswith(run_id)))
        under = lines[at + 1 : at + 3]
        assert under == [f"  turns {facts.turns_said}", f"  spend {facts.dollars_said}"], under
        assert all(len(line) <= 80 for line in lines)
