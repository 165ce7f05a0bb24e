"""The fleet's commands between parsing and rendering, on a fleet in memory."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from claudeloop.application.errors import UsageError
from claudeloop.application.fleet import (
    InCheckout,
    InClone,
    InDirectory,
    Queued,
    QueueSupport,
    RunPlace,
    cancel,
    control,
    events,
    look_up,
    overview,
    queue_listing,
    queue_run,
    queued_place,
    serve_worker,
    status_view,
    steer,
)
from claudeloop.application.ports import AccountCapacity, StoredRun, WorkerOptions
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.budget import BudgetLedger
from claudeloop.domain.capacity import WindowExhausted
from claudeloop.domain.loop import ControlCommand, Phase, RunState
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.steering import AddNote, Cap, ProbeNow, RaiseCap, Steer
from tests.application.fakes import START, FakeWorkerHost, MemoryFleet
from tests.json_view import plain


def _shown(view: dict[str, Any]) -> dict[str, Any]:
    return {key: ("***" if key == "secret" else value) for key, value in view.items()}


def waiting_record(run_id: str) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        spec=RunSpec(cwd=Path("/src/app"), task="t"),
        state=RunState(
            phase=Phase.WAITING,
            ledger=BudgetLedger(turns=2, attempts=3, dollars=0.42),
            capacity=WindowExhausted("five_hour", START + timedelta(minutes=30)),
            waiting_since=START,
            next_probe_at=START + timedelta(minutes=5),
            summary="wrote a; the key is SECRET",
        ),
        started_at=START,
        plan=WorkPlan.parse("- [x] a\n- [ ] b\n"),
    )


def fleet_of_two() -> MemoryFleet:
    fleet = MemoryFleet()
    fleet.enqueue("r1", "/src/app", ["PLAN.md"], "acct")
    fleet.enqueue("r2", "/src/api", ["PLAN.md"], "acct")
    fleet.runs["r1"] = replace(fleet.runs["r1"], state="running", worker="w1")
    fleet.records["r1"] = StoredRun("w1", "waiting", waiting_record("r1"))
    return fleet


def test_a_fleet_never_made_lists_an_empty_queue_without_making_one() -> None:
    fleet = MemoryFleet(made=False)
    assert queue_listing(fleet) == []
    assert not fleet.made


@pytest.mark.parametrize(
    "asked",
    [
        lambda fleet: overview(fleet, now=START, mask=_shown),
        lambda fleet: cancel(fleet, "r1"),
        lambda fleet: control(fleet, "r1", ControlCommand.STOP),
    ],
)
def test_asking_a_fleet_never_made_is_one_line_that_names_how_to_make_it(asked: Any) -> None:
    fleet = MemoryFleet(made=False)
    with pytest.raises(UsageError, match=r"there is no fleet at sqlite:///memory yet; "):
        asked(fleet)
    assert not fleet.made


def test_the_overview_is_newest_first_with_each_runs_status_and_the_capacity() -> None:
    fleet = fleet_of_two()
    fleet.sightings = [AccountCapacity("acct", "closed", "t", "probe", "w1", None)]
    seen = overview(fleet, now=START, mask=_shown)
    assert [row.run_id for row in seen.runs] == ["r2", "r1"]
    r2, r1 = seen.runs
    assert (r1.state, r1.phase, r1.worker, r1.turns) == ("running", "waiting", "w1", 2)
    assert r1.plan == (1, 2)
    assert r1.to_json()["plan"] == {"done": 1, "total": 2}
    assert r1.next_probe_in_seconds == 300
    assert (r2.state, r2.phase, r2.turns, r2.cwd) == ("queued", None, None, "/src/api")
    assert (r2.to_json()["plan"], r2.to_json()["said"]) == (None, None)
    # What `status --engine --json` lists, keys in this order, as `status --json` says
    # the values.
    assert list(r1.to_json().items()) == [
        ("run_id", "r1"),
        ("state", "running"),
        ("phase", "waiting"),
        ("worker", "w1"),
        ("next_probe_at", "2026-11-30T09:05:00+00:00"),
        ("next_probe_in_seconds", 300.0),
        ("plan", {"done": 1, "total": 2}),
        ("turns", 2),
        ("dollars", 0.42),
        ("sent", 3),
        ("answered", 2),
        ("refused", 1),
        ("probes", 0),
        ("turn_dollars", 0.42),
        ("probe_dollars", 0.0),
        ("said", {"turns": "3 sent, 2 answered, 1 refused", "dollars": "$0.42"}),
        ("cwd", "/src/app"),
        ("account", "acct"),
    ]
    assert seen.capacity == fleet.sightings


def test_a_record_that_cannot_be_read_is_a_row_that_says_so() -> None:
    fleet = fleet_of_two()
    fleet.records["r1"] = StoredRun("w1", "waiting", None, readable=False)
    r1 = overview(fleet, now=START, mask=_shown).runs[1]
    assert (r1.run_id, r1.phase, r1.turns) == ("r1", "unreadable", None)


def test_a_runs_status_is_masked_and_none_before_its_first_record() -> None:
    fleet = fleet_of_two()

    def mask(view: dict[str, Any]) -> dict[str, Any]:
        return {k: v.replace("SECRET", "***") if isinstance(v, str) else v for k, v in view.items()}

    found = status_view(look_up(fleet, "r1"), now=START, mask=mask)
    assert found is not None
    view = plain(found.to_json())
    assert (view["phase"], view["state"], view["worker"]) == ("waiting", "running", "w1")
    assert view["summary"] == "wrote a; the key is ***"
    assert status_view(look_up(fleet, "r2"), now=START, mask=mask) is None


def test_a_runs_record_its_worker_stored_unreadable_is_one_line_not_a_view() -> None:
    fleet = fleet_of_two()
    fleet.records["r1"] = StoredRun("w1", "waiting", None, readable=False)
    with pytest.raises(UsageError, match="run r1: the record its worker stored cannot be read"):
        status_view(look_up(fleet, "r1"), now=START, mask=_shown)


def test_an_unknown_run_is_named_with_the_fleet() -> None:
    with pytest.raises(UsageError, match=r"--run-id nope: no such run in the fleet of sqlite"):
        look_up(fleet_of_two(), "nope")


def test_cancel_gives_the_run_as_it_was_and_an_unknown_one_is_one_line() -> None:
    fleet = fleet_of_two()
    assert cancel(fleet, "r2").state == "queued"
    assert fleet.runs["r2"].state == "cancelled"
    with pytest.raises(UsageError, match=r"queue cancel nope: no such run in the queue"):
        cancel(fleet, "nope")


def test_only_a_running_run_is_asked_to_stop() -> None:
    fleet = fleet_of_two()
    assert control(fleet, "r1", ControlCommand.WIND_DOWN).worker == "w1"
    assert fleet.asked == [("r1", ControlCommand.WIND_DOWN)]
    with pytest.raises(UsageError, match=r"run r2 is queued, not running; nothing to stop"):
        control(fleet, "r2", ControlCommand.STOP)
    fleet.records["r1"] = replace(fleet.records["r1"], phase="complete")
    with pytest.raises(UsageError, match=r"run r1 has ended \(complete\); nothing to stop"):
        control(fleet, "r1", ControlCommand.STOP)
    fleet.runs["r1"] = replace(fleet.runs["r1"], state="exit 3")
    with pytest.raises(UsageError, match=r"run r1 has ended \(exit 3\)"):
        control(fleet, "r1", ControlCommand.STOP)
    assert len(fleet.asked) == 1


def test_the_events_of_an_ended_run_are_each_given_once() -> None:
    fleet = fleet_of_two()
    fleet.runs["r1"] = replace(fleet.runs["r1"], state="done")
    fleet.lines["r1"] = [b"one\n", b"two\n"]
    slept: list[float] = []
    assert list(events(fleet, look_up(fleet, "r1"), follow=True, sleep=slept.append)) == [
        b"one\n",
        b"two\n",
    ]
    assert slept == []


def test_following_a_run_gives_new_lines_once_until_the_queue_says_it_ended() -> None:
    fleet = fleet_of_two()
    fleet.lines["r1"] = [b"one\n"]
    polls = iter(range(100))

    def sleep(_seconds: float) -> None:
        match next(polls):
            case 0:
                fleet.lines["r1"].append(b"two\n")
            case 1:
                # A record that says it ended may be handed back: only the queue says so.
                fleet.records["r1"] = replace(fleet.records["r1"], phase="complete")
            case _:
                fleet.runs["r1"] = replace(fleet.runs["r1"], state="done")

    found = look_up(fleet, "r1")
    assert list(events(fleet, found, follow=True, sleep=sleep)) == [b"one\n", b"two\n"]


def test_a_queued_run_followed_gives_its_lines_once_a_worker_stored_them() -> None:
    fleet = fleet_of_two()
    found = look_up(fleet, "r2")
    polls = iter(range(100))

    def sleep(_seconds: float) -> None:
        match next(polls):
            case 0:
                fleet.records["r2"] = StoredRun("w1", "running", waiting_record("r2"))
                fleet.lines["r2"] = [b"started\n"]
                fleet.runs["r2"] = replace(fleet.runs["r2"], state="running")
            case n if n < 12:
                pass
            case _:
                fleet.runs["r2"] = replace(fleet.runs["r2"], state="cancelled")

    assert list(events(fleet, found, follow=True, sleep=sleep)) == [b"started\n"]
    assert next(polls) <= 25  # asked the queue now and then, not only at the end


# queue add and worker


def _support(used: set[tuple[Path, str]] | None = None) -> QueueSupport:
    return QueueSupport(
        new_run_id=lambda: "20261202-101500-a1b2c3",
        run_id_used=lambda cwd, run_id: (cwd, run_id) in (used or set()),
        account_of=lambda model: f"account-{model or 'default'}",
        masked_url=lambda url: url.replace("hunter2", "***"),
    )


def _queue(fleet: MemoryFleet, place: RunPlace, **given: Any) -> Queued:
    options: dict[str, Any] = {"plan": None, "run_id": None, "model": None, "arguments": []}
    return queue_run(fleet, _support(given.pop("used", None)), place=place, **(options | given))


def test_a_run_of_this_machine_is_queued_under_a_new_id_with_its_account() -> None:
    fleet = MemoryFleet(made=False)
    queued = _queue(fleet, InDirectory(Path("/src/app")), model="opus", arguments=["--prompt"])
    assert queued == Queued("20261202-101500-a1b2c3", "/src/app", "account-opus")
    assert fleet.runs[queued.run_id].state == "queued"
    assert fleet.given[queued.run_id] == (["--prompt"], None, None)


def test_a_run_id_a_run_of_the_directory_has_is_refused_before_queueing() -> None:
    fleet = MemoryFleet()
    with pytest.raises(UsageError, match="'nightly' is already used in /src/app"):
        _queue(
            fleet,
            InDirectory(Path("/src/app")),
            run_id="nightly",
            used={(Path("/src/app"), "nightly")},
        )
    assert fleet.runs == {}


@pytest.mark.parametrize("run_id", ["", " ", "a/b", ".hidden"])
def test_a_run_id_that_names_no_directory_is_refused(run_id: str) -> None:
    with pytest.raises(UsageError, match="use letters, digits"):
        _queue(MemoryFleet(), InCheckout("app"), run_id=run_id)


def test_a_run_id_already_queued_is_refused_naming_the_fleet() -> None:
    fleet = MemoryFleet()
    _queue(fleet, InCheckout("app"), run_id="nightly")
    with pytest.raises(UsageError, match="--run-id nightly: already in the queue of sqlite"):
        _queue(fleet, InCheckout("app"), run_id="nightly")


def test_a_clone_is_queued_with_its_repository_and_branch_and_not_looked_for() -> None:
    fleet = MemoryFleet()
    place = InClone("git@git.internal:app.git", "main")
    queued = _queue(fleet, place, plan=Path("PLAN.md"), used={(Path("x"), "y")})
    assert queued.cwd == "git@git.internal:app.git"
    assert fleet.given[queued.run_id][1:] == ("git@git.internal:app.git", "main")


def test_a_password_in_the_repository_url_is_refused_masked() -> None:
    with pytest.raises(UsageError) as refused:
        _queue(MemoryFleet(), InClone("https://me:hunter2@git.internal/app.git", None))
    assert "--repo https://me:***@git.internal/app.git: a password" in str(refused.value)
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize("name", ["", "/abs/app", "../app", "a/../../b"])
def test_a_checkout_is_a_relative_path_under_the_work_root(name: str) -> None:
    with pytest.raises(UsageError, match="a relative path under the workers' --work-root"):
        _queue(MemoryFleet(), InCheckout(name))


@pytest.mark.parametrize(
    ("place", "what"),
    [(InCheckout("app"), "checkout"), (InClone("git@h:app.git", None), "repository")],
)
def test_the_plan_of_a_run_elsewhere_is_named_relative_to_it(place: RunPlace, what: str) -> None:
    with pytest.raises(UsageError, match=f"name it relative to the {what}"):
        _queue(MemoryFleet(), place, plan=Path("/home/me/PLAN.md"))


def _place(**given: Any) -> RunPlace:
    options: dict[str, Any] = {
        "plan": Path("PLAN.md"),
        "prompt": None,
        "cwd": None,
        "checkout": None,
        "repo": None,
        "branch": None,
        "directory": lambda cwd: Path("/here") if cwd is None else Path("/src") / cwd,
    }
    return queued_place(**(options | given))


def test_a_run_is_placed_in_the_directory_found_a_checkout_or_a_clone() -> None:
    assert _place() == InDirectory(Path("/here"))
    assert _place(cwd=Path("app"), plan=None, prompt="go") == InDirectory(Path("/src/app"))
    assert _place(checkout="app") == InCheckout("app")
    assert _place(repo="git@h:app.git", branch="main") == InClone("git@h:app.git", "main")


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"plan": None}, "say what the run is to do: a PLAN file, or --prompt TEXT"),
        ({"prompt": "go"}, "give a PLAN file or --prompt TEXT, not both"),
        ({"branch": "main"}, "--branch names a branch of --repo URL; give --repo too"),
        ({"checkout": "app", "cwd": Path("app")}, "give one of --cwd PATH, --checkout NAME"),
        ({"checkout": "app", "repo": "git@h:app.git"}, "give one of --cwd PATH, --checkout"),
    ],
)
def test_a_run_without_one_task_or_one_place_is_refused_in_one_line(
    given: dict[str, Any], said: str
) -> None:
    def nowhere(cwd: Path | None) -> Path:
        raise AssertionError("no directory is looked for")

    with pytest.raises(UsageError, match=re.escape(said)):
        _place(**given, directory=nowhere)


def _serve(host: FakeWorkerHost, **given: Any) -> int:
    options: dict[str, Any] = {
        "slots": 2,
        "per_account": 1,
        "name": None,
        "lease": timedelta(seconds=30),
        "lease_shown": "30s",
        "work_root": None,
        "say": lambda _line: None,
    }
    return serve_worker(host, **(options | given))


def test_a_worker_serves_with_its_options_and_returns_its_exit_code() -> None:
    host = FakeWorkerHost(directories={Path("/src")}, code=130)
    said: list[str] = []
    code = _serve(host, name="second", work_root=Path("/src"), say=said.append)
    assert code == 130
    assert host.served == [WorkerOptions(2, 1, "second", 30.0, Path("/src"))]
    assert said == ["worker started"]


@pytest.mark.parametrize(
    ("given", "refusal"),
    [
        ({"name": "two words"}, "--name 'two words': use letters"),
        ({"name": "x" * 41}, "--name"),
        (
            {"lease": timedelta(milliseconds=500), "lease_shown": "0.5s"},
            "--lease 0.5s: at least 1s",
        ),
        ({"work_root": Path("/nowhere")}, "--work-root /nowhere: not a directory"),
    ],
)
def test_a_worker_refuses_what_it_cannot_serve_with_before_it_starts(
    given: dict[str, Any], refusal: str
) -> None:
    host = FakeWorkerHost()
    with pytest.raises(UsageError, match=re.escape(refusal)):
        _serve(host, **given)
    assert host.served == []


def test_requests_reach_only_a_running_run_and_a_cap_below_its_spend_none() -> None:
    fleet = fleet_of_two()
    now = START + timedelta(minutes=10)
    asked: list[Steer] = [RaiseCap(Cap.TURNS, 40), AddNote("use the staging db")]
    assert steer(fleet, "r1", asked, now=now).worker == "w1"
    assert fleet.steered == [("r1", RaiseCap(Cap.TURNS, 40)), ("r1", AddNote("use the staging db"))]
    with pytest.raises(UsageError, match=r"run r2 is queued, not running; nothing to probe now"):
        steer(fleet, "r2", [ProbeNow()], now=now)
    # r1's stored record says 2 turns were answered: 1 is below that, and nothing is asked.
    with pytest.raises(UsageError, match=r"run r1: --max-turns 1 turns is lower than"):
        steer(fleet, "r1", [RaiseCap(Cap.DOLLARS, 5), RaiseCap(Cap.TURNS, 1)], now=now)
    with pytest.raises(UsageError, match=r"give at least one of --max-turns"):
        steer(fleet, "r1", [], now=now)
    assert len(fleet.steered) == 2
