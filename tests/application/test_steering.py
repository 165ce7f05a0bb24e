"""probe-now, raise and note on a project's runs in memory: only a live run is asked,
a cap below what was spent is refused before anything is sent."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from claudeloop.application.errors import UsageError
from claudeloop.application.steering import add_note, probe_now, raise_caps
from claudeloop.domain.capacity import describe
from claudeloop.domain.loop import Outcome, Phase
from claudeloop.domain.steering import AddNote, Cap, ProbeNow, RaiseCap
from tests.application.fakes import START
from tests.application.test_inspection import two_runs

NOW = START + timedelta(minutes=10)  # r2 has waited ten minutes


def test_a_probe_now_of_a_waiting_run_is_sent_and_says_it_will_end_the_wait() -> None:
    runs = two_runs()
    runs.drivers["r2"] = 99
    sent = probe_now(runs, None)
    assert runs.sent == [("r2", ProbeNow())]
    assert sent.effective
    assert sent.will == "the wait ends and the run probes within a second"


def test_a_probe_now_of_a_run_not_waiting_is_sent_but_said_to_do_nothing() -> None:
    runs = two_runs()
    runs.drivers["r1"] = 7  # r1's record says it is complete
    sent = probe_now(runs, "r1")
    assert not sent.effective
    assert sent.will == "the run is complete, not waiting: a probe now does nothing"
    assert runs.sent == [("r1", ProbeNow())]


def test_no_request_reaches_a_run_cut_off_and_each_answer_says_how_it_goes_on() -> None:
    runs = two_runs()  # r2 was waiting when its driver died: no outcome
    probed = probe_now(runs, None)
    assert (probed.pid, probed.effective) == (None, False)
    assert probed.will == (
        "run r2 has no live driver (cut off before it ended): a probe now does nothing; "
        "`claudeloop resume r2` goes on"
    )
    with pytest.raises(UsageError, match=r"no turn will read a note; `claudeloop resume r2`"):
        add_note(runs, None, "hello")
    with pytest.raises(
        UsageError,
        match=r"its caps change as it resumes; `claudeloop resume r2 --max-turns 50 "
        r"--max-dollars 2.5 --max-wait 3600s` goes on",
    ):
        raise_caps(runs, None, {Cap.TURNS: 50, Cap.DOLLARS: 2.5, Cap.WAIT: 3600}, now=NOW)
    assert runs.sent == []


def test_a_run_done_is_never_told_to_resume_but_to_start_a_new_run() -> None:
    runs = two_runs()  # r1 is done
    new_run = "; more work is a new run (`claudeloop run`)"
    assert probe_now(runs, "r1").will == "run r1 is done: a probe now does nothing" + new_run
    for asking in (
        lambda: add_note(runs, "r1", "hello"),
        lambda: raise_caps(runs, "r1", {Cap.TURNS: 50}, now=NOW),
    ):
        with pytest.raises(UsageError) as refused:
            asking()
        assert str(refused.value).startswith("run r1 is done: ")
        assert str(refused.value).endswith(new_run)
        assert "resume" not in str(refused.value)
    assert runs.sent == []


def test_a_run_ended_short_of_done_says_its_outcome() -> None:
    runs = two_runs()
    record = runs.record("r2")
    ended = replace(record.state, phase=Phase.FAILED, outcome=Outcome.BUDGET_EXHAUSTED)
    runs.records["r2"] = replace(record, state=ended)
    assert probe_now(runs, "r2").will.startswith(
        "run r2 has ended (budget_exhausted) and nothing drives it: a probe now does nothing"
    )


def test_caps_are_raised_each_as_a_request() -> None:
    runs = two_runs()
    runs.drivers["r2"] = 99
    sent = raise_caps(runs, None, {Cap.TURNS: 50, Cap.WAIT: 3600}, now=NOW)
    assert runs.sent == [("r2", RaiseCap(Cap.TURNS, 50)), ("r2", RaiseCap(Cap.WAIT, 3600))]
    assert sent[0].will == "max-turns none -> 50 turns at the next safe point (kept by a resume)"


@pytest.mark.parametrize(
    ("caps", "said"),
    [
        ({Cap.TURNS: 1}, "run r2: --max-turns 1 turns is lower than what the run has spent"),
        ({Cap.WAIT: 60}, "run r2: --max-wait 60 s is lower than what the run has spent (600 s)"),
        ({Cap.TURNS: 50, Cap.DOLLARS: 0.1}, "run r2: --max-dollars $0.10 is lower"),
    ],
)
def test_a_cap_below_what_was_spent_is_refused_and_none_is_sent(
    caps: dict[Cap, float], said: str
) -> None:
    runs = two_runs()
    runs.drivers["r2"] = 99
    with pytest.raises(UsageError) as refused:
        raise_caps(runs, None, caps, now=NOW)
    assert said in str(refused.value)
    assert runs.sent == []


@pytest.mark.parametrize(
    ("cap", "to", "said"),
    [
        (Cap.TURNS, 2, "the run ends there, budget_exhausted (at once if it is waiting)"),
        (Cap.WAIT, 600, "the wait ends there, max_wait_exceeded"),
    ],
)
def test_a_cap_set_to_what_was_spent_says_it_is_reached(cap: Cap, to: float, said: str) -> None:
    runs = two_runs()
    runs.drivers["r2"] = 99
    (sent,) = raise_caps(runs, None, {cap: to}, now=NOW)
    assert sent.will.endswith(f"(kept by a resume); reached: {said}")


def test_raise_without_a_cap_is_refused() -> None:
    with pytest.raises(UsageError, match="give at least one of --max-turns"):
        raise_caps(two_runs(), None, {}, now=NOW)


def test_a_note_is_sent_and_an_empty_one_refused() -> None:
    runs = two_runs()
    runs.drivers["r2"] = 99
    runs.drivers["r1"] = 7
    # r2 waits for capacity: the note waits for the turn after the wait.
    assert add_note(runs, "r2", "use the staging db").will == (
        "the note waits for the next turn, once the run has capacity again "
        f"({describe(runs.record('r2').state.capacity)}); `claudeloop status` shows it "
        "till then"
    )
    assert add_note(runs, "r1", "and the logs").will == (
        "the note waits for the next turn, said with its prompt"
    )
    assert runs.sent == [("r2", AddNote("use the staging db")), ("r1", AddNote("and the logs"))]
    with pytest.raises(UsageError, match="the note is empty"):
        add_note(runs, "r2", "  ")


def test_a_control_file_that_cannot_be_written_is_named() -> None:
    runs = two_runs()
    runs.drivers["r2"] = 99
    runs.refuse_writes = True
    with pytest.raises(UsageError, match=r"runs/r2/control: cannot be written \(Permission"):
        add_note(runs, "r2", "x")
