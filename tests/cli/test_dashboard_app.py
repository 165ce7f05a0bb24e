"""The dashboard's web application on runs in memory: the token, the origin, the pages,
a damaged run and an engine away, the buttons, the live stream."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from claudeloop.application.dashboard import front_page, section_of
from claudeloop.application.ports import ProjectRuns
from claudeloop.application.records import RunRecord
from claudeloop.application.run_rows import RunPlace, RunRow
from claudeloop.application.run_status import run_status_of
from claudeloop.cli.dashboard import exposure
from claudeloop.cli.dashboard.app import Sources, cookie_name, dashboard_app
from claudeloop.domain.loop import ControlCommand, Outcome, Phase
from tests.application.fakes import START, MemoryBoards, MemoryFleet, MemoryIndex, MemoryRuns
from tests.application.test_dashboard import APP, entry, line
from tests.application.test_fleet import fleet_of_two, waiting_record

TOKEN = "t0ken-of-the-test"


def _mask(_cwd: Path) -> Any:
    return lambda view: {k: "***" if v == "s3cret" else v for k, v in view.items()}


def client_of(
    runs: MemoryRuns,
    index: MemoryIndex,
    *,
    fleet: Any = None,
    branches: Any = None,
    signed_in: bool = True,
) -> TestClient:
    def runs_of(cwd: Path) -> ProjectRuns:
        assert cwd == APP
        return runs

    sources = Sources(
        index=index,
        runs_of=runs_of,
        boards=MemoryBoards(),
        mask=_mask,
        fleet=fleet,
        branches=branches,
        now=lambda: START + timedelta(minutes=1),
    )
    client = TestClient(dashboard_app(sources, TOKEN, port=8420))
    if signed_in:
        client.cookies.set(cookie_name(8420), TOKEN)
    return client


def machine() -> tuple[MemoryRuns, MemoryIndex]:
    runs = MemoryRuns(waiting_record("r1"))
    runs.events["r1"] = line("run.started", 0) + line("wait.started", 0.5, capacity="window")
    return runs, MemoryIndex(entry("r1"))


@pytest.mark.parametrize("path", ["/", "/accounts", "/stream", "/static/dashboard.js"])
def test_a_request_without_the_token_gets_403(path: str) -> None:
    client = client_of(*machine(), signed_in=False)
    answer = client.get(path)
    assert answer.status_code == 403
    assert "token" in answer.text
    client.cookies.set(cookie_name(8420), "wrong")
    assert client.get(path).status_code == 403
    assert client.get(path, params={"token": "wrong"}).status_code == 403


def test_the_token_in_the_url_becomes_a_cookie_and_leaves_the_url() -> None:
    client = client_of(*machine(), signed_in=False)
    answer = client.get(
        "/accounts", params={"token": TOKEN, "part": "main"}, follow_redirects=False
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == "/accounts?part=main"
    cookie = answer.headers["set-cookie"]
    assert f"{cookie_name(8420)}={TOKEN}" in cookie
    assert "HttpOnly" in cookie
    assert "samesite=strict" in cookie.lower()
    assert "Max-Age=604800" in cookie  # a week, or until the dashboard stops
    assert "secure" not in cookie.lower()  # plain http here: a Secure cookie would be lost
    assert client.get("/").status_code == 200


def test_a_change_needs_the_same_origin() -> None:
    runs, index = machine()
    runs.drivers["r1"] = 7
    client = client_of(runs, index)
    where = f"/run/{entry('r1').key}/do/stop"
    assert client.post(where).status_code == 403
    assert client.post(where, headers={"Origin": "http://evil.example"}).status_code == 403
    assert runs.sent == []
    answer = client.post(where, headers={"Origin": "http://testserver"}, follow_redirects=False)
    assert answer.status_code == 303
    assert runs.sent == [("r1", ControlCommand.STOP)]
    shown = client.get(answer.headers["location"]).text
    assert "asked run r1 to stop" in shown


def test_a_verb_on_a_run_without_a_driver_or_unknown_says_so() -> None:
    client = client_of(*machine())
    origin = {"Origin": "http://testserver"}
    key = entry("r1").key
    assert "has no live driver" in client.post(f"/run/{key}/do/wind-down", headers=origin).text
    assert "no verb" in client.post(f"/run/{key}/do/dance", headers=origin).text


def test_the_list_the_run_and_its_main_part() -> None:
    runs, index = machine()
    runs.drivers["r1"] = 7
    client = client_of(runs, index)
    listing = client.get("/").text
    assert 'href="/static/dashboard.css"' in listing
    assert "http" not in listing.replace("http-equiv", "")  # nothing from elsewhere
    assert f'data-key="{entry("r1").key}"' in listing
    page = client.get(f"/run/{entry('r1').key}").text
    assert '<svg class="timeline"' in page
    assert 'class="stop"' in page  # a live run has its buttons
    assert f"/run/{entry('r1').key}/stream?offset={len(runs.events['r1'])}" in page
    main = client.get(f"/run/{entry('r1').key}", params={"part": "main"}).text
    assert main.startswith("<h1>Run r1")
    assert client.get("/run/nope").status_code == 404
    assert client.get("/static/other.js").status_code == 404
    assert "function" in client.get("/static/dashboard.js").text


def test_the_runs_page_says_a_note_waits_for_the_next_turn() -> None:
    runs, index = machine()
    before = runs.records["r1"]
    runs.records["r1"] = replace(before, state=replace(before.state, notes=("<mind> tests",)))
    page = client_of(runs, index).get(f"/run/{entry('r1').key}").text
    assert '<div class="note">note waiting for the next turn: &lt;mind&gt; tests</div>' in page


def test_a_damaged_run_and_an_engine_away_show_as_such() -> None:
    runs, index = machine()
    runs.unreadable.add("r1")

    class Away(MemoryFleet):
        def queue(self) -> Any:
            raise ConnectionError("connection refused")

    client = client_of(runs, index, fleet=Away())
    listing = client.get("/").text
    assert "unreadable (not JSON)" in listing
    assert "unreachable (ConnectionError: connection refused)" in listing
    assert "unreadable" in client.get(f"/run/{entry('r1').key}").text


def test_a_runs_stream_sends_each_new_event_masked() -> None:
    runs, index = machine()
    runs.events["r1"] += line("probe.finished", 1, capacity="s3cret")
    client = client_of(runs, index)
    offset = len(line("run.started", 0))
    with client.stream("GET", f"/run/{entry('r1').key}/stream?offset={offset}") as stream:
        seen: list[str] = []
        for text in stream.iter_lines():
            seen.append(text)
            if text.startswith("data:") and "probe.finished" in text:
                break
    data = [text for text in seen if text.startswith("data:")]
    assert '"type": "wait.started"' in data[0]
    assert '"capacity": "***"' in data[1]


def test_the_lists_stream_says_refresh_once_a_run_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dataclasses import replace

    from claudeloop.cli.dashboard import app
    from claudeloop.domain.loop import Outcome, Phase

    monkeypatch.setattr(app, "ROWS_POLL_SECONDS", 0.05)

    runs, index = machine()
    client = client_of(runs, index)
    ended = waiting_record("r1")
    with client.stream("GET", "/stream") as stream:
        for text in stream.iter_lines():
            if text.startswith("retry:"):
                state = replace(ended.state, phase=Phase.COMPLETE, outcome=Outcome.DONE)
                runs.records["r1"] = replace(ended, state=state)
            if text == "event: refresh":
                break
    assert "done" in client.get("/", params={"part": "main"}).text


def test_listening_beyond_this_machine_says_what_it_exposes() -> None:
    assert exposure("127.0.0.1", 1) is None
    assert exposure("::1", 1) is None
    assert exposure("localhost", 1) is None
    warning = exposure("0.0.0.0", 8420)
    assert warning is not None
    assert "0.0.0.0:8420" in warning
    assert "token" in warning
    assert exposure("box.example", 1) is not None


def test_a_verb_with_fields_gets_them_from_its_form() -> None:
    from claudeloop.domain.steering import AddNote, Cap, RaiseCap

    runs, index = machine()
    runs.drivers["r1"] = 7
    client = client_of(runs, index)
    page = client.get(f"/run/{entry('r1').key}").text
    assert '<input type="text" name="text"' in page
    assert '<input type="text" name="max_turns"' in page
    answer = client.post(
        f"/run/{entry('r1').key}/do/note",
        data={"text": "mind the tests"},
        headers={"Origin": "http://testserver"},
    )
    assert "the note waits for the next turn" in answer.text
    refused = client.post(
        f"/run/{entry('r1').key}/do/raise",
        data={"max_turns": "many"},
        headers={"Origin": "http://testserver"},
    )
    assert "max-turns: &#x27;many&#x27; is not a positive number" in refused.text
    client.post(
        f"/run/{entry('r1').key}/do/raise",
        data={"max_turns": "12"},
        headers={"Origin": "http://testserver"},
    )
    assert [asked for _, asked in runs.sent] == [
        AddNote("mind the tests"),
        RaiseCap(Cap.TURNS, 12.0),
    ]


def test_a_fleets_run_is_stopped_through_its_worker() -> None:
    fleet = fleet_of_two()
    origin = {"Origin": "http://testserver"}
    client = client_of(*machine(), fleet=fleet)
    listing = client.get("/").text
    assert 'action="/fleet/r1/do/stop"' in listing
    assert 'action="/fleet/r2/do/stop"' not in listing
    said = client.post("/fleet/r1/do/stop", headers=origin).text
    assert "asked run r1 (on w1) to stop" in said
    assert fleet.asked == [("r1", ControlCommand.STOP)]
    assert (
        "no verb &#x27;dance&#x27; for a fleet"
        in client.post("/fleet/r1/do/dance", headers=origin).text
    )
    alone = client_of(*machine())
    assert "shows no fleet" in alone.post("/fleet/r1/do/stop", headers=origin).text


def test_the_front_page_says_what_the_last_hours_did_and_links_the_morning_report() -> None:
    runs, index = machine()
    page = client_of(runs, index).get("/").text
    assert (
        "The last 12 h: 1 run(s) started (1 waiting); turns 3 sent, 2 answered, 1 refused; "
        "cost $0.42." in page
    )
    assert '<a href="/report">The morning report</a>' in page


def test_the_report_page_is_the_morning_report_of_every_run_of_the_machine() -> None:
    runs, index = machine()
    runs.events["r1"] += line("turn.finished", 0.2, turn=1, cost_usd=0.42)
    client = client_of(runs, index)
    page = client.get("/report").text
    assert "<h1>" in page
    assert "r1" in page
    assert "<svg" in page  # spend over time and the timeline, drawn by the server
    weekly = client.get("/report", params={"since": "7d"})
    assert weekly.status_code == 200
    bad = client.get("/report", params={"since": "soon"})
    assert bad.status_code == 400
    assert "&#x27;soon&#x27; is not a duration" in bad.text


def test_a_runs_page_says_where_its_commands_run_and_how_much_was_blocked() -> None:
    runs, index = machine()
    runs.records["r1"] = replace(
        runs.records["r1"], sandbox="sandbox: commands run confined: no network", blocked=3
    )
    page = client_of(runs, index).get(f"/run/{entry('r1').key}", params={"part": "main"}).text
    assert (
        '<div class="sandbox">sandbox: commands run confined: no network · blocked 3</div>' in page
    )


def _ended(run_id: str, outcome: Outcome, reason: str) -> RunRecord:
    record = waiting_record(run_id)
    state = replace(
        record.state, phase=Phase.COMPLETE, outcome=outcome, reason=reason, next_probe_at=None
    )
    return replace(record, state=state)


def test_the_front_page_puts_what_needs_a_person_first_in_red_and_folds_the_gone_runs() -> None:
    runs = MemoryRuns(
        _ended("r-auth", Outcome.AUTH_FAILED, "authentication failed: log in again"),
        _ended("r-done", Outcome.DONE, "all done"),
        waiting_record("r-wait"),
        _ended("r-blocked", Outcome.BLOCKED, "blocked on: the staging password"),
    )
    runs.drivers["r-wait"] = 7
    index = MemoryIndex(
        entry("r-done", 1), entry("r-auth", 2), entry("r-wait", 3), entry("r-blocked", 4)
    )
    index.entries[entry("r-gone", 5).key] = entry("r-gone", 5)
    index.gone.add(entry("r-gone", 5).key)
    page = client_of(runs, index).get("/", params={"part": "main"}).text
    order = [page.index(f'id="{name}"') for name in ("needs-you", "waiting", "done", "gone")]
    assert order == sorted(order)
    needs_you = page[order[0] : order[1]]
    assert "r-auth" in needs_you
    assert "r-blocked" in needs_you
    assert "log in again" in needs_you  # why it stopped, beside it
    assert 'class="phase complete auth_failed needs-you"' in needs_you
    assert "5-hour window closed" in page[order[1] : order[2]]  # what it waits for
    assert "r-done" in page[order[2] : order[3]]
    # The gone run: folded at the end, grey, never red.
    gone = page[order[3] :]
    assert gone.startswith('id="gone"><summary>Gone (directory removed) (1)</summary>')
    assert "r-gone" in gone
    assert 'class="problem"' not in gone
    assert page.index("Needs you: 2") < page.index("Waiting: 1") < page.index("Done: 1")


def _row(record: RunRecord, driver: int | None = None) -> RunRow:
    status = run_status_of(record, now=START, driver_pid=driver)
    return RunRow(record.run_id, RunPlace("/src/app"), status, status.facts.phase)


def test_a_run_killed_mid_run_needs_a_person_to_resume_it() -> None:
    record = waiting_record("r1")
    running = replace(record, state=replace(record.state, phase=Phase.RUNNING))
    assert section_of(_row(running)) == "needs-you"
    assert section_of(_row(running, driver=7)) == "running"
    assert section_of(_row(_ended("r1", Outcome.STOPPED, "stopped"))) == "ended"
    assert section_of(RunRow("r1", None, None, "unreadable", "cannot be read")) == "needs-you"
    assert [s.name for s in front_page([])] == []


def test_a_runs_events_read_as_the_logs_lines_with_the_json_one_click_away() -> None:
    from claudeloop.cli.display import log_line

    runs, index = machine()
    runs.events["r1"] += line("turn.started", 0.7, turn=2, session_id="s1")
    page = client_of(runs, index).get(f"/run/{entry('r1').key}", params={"part": "main"}).text
    item = page.split('data-type="turn.started"', 1)[1].split("</li>", 1)[0]
    # The words `claudeloop logs` prints for the event, and its JSON in a fold under them.
    started = {"ts": "2026-11-30T09:00:42+00:00", "type": "turn.started", "turn": 2}
    assert log_line({**started, "session_id": "s1"}).endswith("turn 2: started")
    assert '<span class="words">turn 2: started</span>' in item
    assert "<details" in item
    assert "&quot;session_id&quot;: &quot;s1&quot;" in item.split("<pre>", 1)[1]
    # A line an older claudeloop wrote (no field it needs now): its fields, as logs says.
    assert '<span class="words">capacity=window</span>' in page


def test_the_forms_say_in_words_what_each_field_is() -> None:
    runs, index = machine()
    runs.drivers["r1"] = 7
    page = client_of(runs, index).get(f"/run/{entry('r1').key}").text
    for label in ("Most turns", "Most dollars", "Longest wait", "A note for the next turn"):
        assert f"<span>{label}</span>" in page
    assert 'placeholder="max_turns"' not in page
    assert 'placeholder="text"' not in page


def test_a_runs_pictures_have_legends_and_a_one_second_run_two_instants() -> None:
    import re

    from claudeloop.application.run_page import Stretch
    from claudeloop.cli.dashboard.svg import spend_svg, timeline_svg

    quick = START + timedelta(milliseconds=400)
    timeline = timeline_svg([Stretch("turn", START, quick, "turn 1: done")])
    spend = spend_svg([(quick, 0.0016)])
    for both in (timeline, spend):
        # Drawn for a wide window and a narrow one, each with its legend and two instants.
        pictures = re.findall(r"<svg.*?</svg>", both)
        assert len(pictures) == 2
        for drawn in pictures:
            assert '<g class="legend">' in drawn
            instants = re.findall(r"\d\d:\d\d:\d\d", drawn)
            assert len(instants) == 2
            assert instants[0] != instants[1]
    assert "ended badly" in timeline
    assert "dollars spent so far" in spend


def test_a_runs_page_is_found_by_its_run_id_alone_and_an_id_of_two_runs_names_both() -> None:
    runs, index = machine()
    client = client_of(runs, index)
    page = client.get("/run/r1", params={"part": "main"})
    assert page.status_code == 200
    assert "<h1>Run r1 " in page.text
    # The same id in another directory: the id alone names no one run.
    other = replace(entry("r1"), directory=Path("/elsewhere/.claudeloop/runs/r1"))
    index.entries[other.key] = other
    both = client.get("/run/r1")
    assert both.status_code == 404
    assert "names 2 runs of this machine" in both.text
    assert entry("r1").key in both.text
    assert client.get(f"/run/{entry('r1').key}").status_code == 200


def test_a_kept_rehearsal_is_folded_grey_apart_from_the_runs_that_need_a_person() -> None:
    failed = _ended("r-rehearsed", Outcome.FAILED, "the rehearsal's scenario failed")
    failed = replace(failed, spec=replace(failed.spec, profile="rehearsal"))
    runs = MemoryRuns(failed, _ended("r-auth", Outcome.AUTH_FAILED, "log in again"))
    index = MemoryIndex(entry("r-rehearsed", 1), entry("r-auth", 2))
    page = client_of(runs, index).get("/", params={"part": "main"}).text
    needs_you = page[page.index('id="needs-you"') : page.index('id="rehearsals"')]
    assert "r-auth" in needs_you
    assert "r-rehearsed" not in needs_you
    rehearsals = page[page.index('id="rehearsals"') :]
    assert rehearsals.startswith('id="rehearsals"><summary>Rehearsals kept')
    assert "r-rehearsed" in rehearsals
    assert "needs-you" not in rehearsals  # never red
    assert page.index("Needs you: 1") < page.index("Rehearsals kept (rehearse --keep): 1")


def test_the_rehearsals_profiles_are_the_ones_a_rehearsal_runs_on() -> None:
    from claudeloop.adapters.claude_code.backend import Backend
    from claudeloop.adapters.claude_code.rehearsal_backends import profile_name
    from claudeloop.application.rehearsal import LOCAL_PROFILE
    from claudeloop.application.run_status import REHEARSAL_PROFILES

    assert profile_name(Backend(env={})) in REHEARSAL_PROFILES
    assert LOCAL_PROFILE in REHEARSAL_PROFILES


def test_only_a_page_that_follows_a_stream_says_whether_it_is_live() -> None:
    client = client_of(*machine())
    assert "not live" not in client.get("/").text
    assert 'id="live">connecting...</span>' in client.get("/").text
    report = client.get("/report").text
    assert 'id="live"' not in report  # no stream: it says when it was made instead
    assert "made " in report


def test_a_runs_spend_and_timeline_share_one_time_axis() -> None:
    runs, index = machine()
    runs.events["r1"] = (
        line("run.started", 0)
        + line("turn.started", 0.1, turn=1)
        + line("turn.finished", 0.2, turn=1, verdict="continue", cost_usd=0.1)
        + line("wait.started", 0.3, capacity="window")
        + line("probe.finished", 3, capacity="open", cost_usd=0.01)
    )
    import re

    page = client_of(runs, index).get("/run/r1", params={"part": "main"}).text
    timeline = page[page.index('<svg class="timeline"') : page.index('<svg class="spend"')]
    spend = page[page.index('<svg class="spend"') :]
    axis = r'class="axis"[^>]*>(\d\d:\d\d:\d\d)'
    # From the first event to the last, in both (each drawn wide and narrow): the spend
    # is not a picture of its own two costed instants beside a timeline of minutes.
    start, end = (START.strftime("%H:%M:%S"), (START + timedelta(minutes=3)).strftime("%H:%M:%S"))
    assert re.findall(axis, timeline) == [start, end] * 2
    assert re.findall(axis, spend) == [start, end] * 2


def test_the_report_page_colours_each_outcome_and_marks_a_refused_turn() -> None:
    runs = MemoryRuns(
        _ended("r-auth", Outcome.AUTH_FAILED, "log in again"),
        _ended("r-done", Outcome.DONE, "all done"),
        _ended("r-cap", Outcome.BUDGET_EXHAUSTED, "the turns cap"),
    )
    for run_id in ("r-auth", "r-done", "r-cap"):
        runs.events[run_id] = line(
            "turn.started", 0.1, run_id=run_id, turn=1, session_id=None
        ) + line(
            "turn.finished",
            0.2,
            turn=1,
            capacity="5-hour window closed",
            verdict="refused",
            summary="",
            cost_usd=0.0,
            session_id=None,
            denied_tools=[],
        )
    index = MemoryIndex(entry("r-auth"), entry("r-done", 1), entry("r-cap", 2))
    page = client_of(runs, index).get("/report", params={"since": "7d", "part": "main"}).text
    assert '<span class="phase auth_failed needs-you">auth_failed</span>' in page
    assert '<span class="phase done done">done</span>' in page
    assert '<span class="phase budget_exhausted ended">budget_exhausted</span>' in page
    assert 'class="n turns refused"' in page  # 3 sent, 2 answered, 1 refused
    assert 'class="span turn_refused"' in page
