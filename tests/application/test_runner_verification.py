"""The runner verifies a Done: it runs the checks through the Checks port, the review on a
fresh session, and stops a run whose turns change nothing."""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from pathlib import Path

from claudeloop.application.records import RunRecord
from claudeloop.domain.budget import Budget
from claudeloop.domain.loop import ControlCommand, Outcome, Phase, VerifyRules, reopen
from claudeloop.domain.stagnation import StagnationSettings
from claudeloop.domain.verification import CheckCommand, CheckFailed
from tests.application.fakes import FakeChecks, FakeGateway, verdict_turn
from tests.application.test_runner import OK, WINDOW_REJECTED, Harness, drive, harness, record

STEP_3 = "test -f step-3.txt"
LOGS = Path("/runs/r1/checks")


def verified(
    h: Harness,
    *,
    checks: tuple[str, ...] = (STEP_3,),
    review: bool = False,
    stall: int = 3,
    same: int = 3,
    endings: dict[str, list[int | None]] | None = None,
    reviews: list | None = None,  # type: ignore[type-arg]
    rec: RunRecord | None = None,
) -> tuple[RunRecord, FakeChecks, FakeGateway]:
    fake = FakeChecks(endings=endings or {})
    reviewer = FakeGateway(turns=deque(reviews or []), clock=h.clock)
    h.runner.checks = fake
    h.runner.check_logs = LOGS
    h.runner.reviewer = reviewer
    rec = rec or record()
    rules = VerifyRules(
        checks=tuple(CheckCommand.parse(text) for text in checks),
        review=review,
        stagnation=StagnationSettings(stall_turns=stall, same_failure=same),
    )
    return replace(rec, spec=replace(rec.spec, verify=rules)), fake, reviewer


def test_a_done_claimed_early_is_rejected_by_its_failing_check_then_accepted() -> None:
    h = harness(
        [
            verdict_turn(complete=True, summary="all three written", session_id="s-1"),
            verdict_turn(complete=True, summary="step 3 written now", session_id="s-1"),
        ]
    )
    rec, checks, _ = verified(h, endings={STEP_3: [1, 0]})
    final = drive(h, rec)

    assert final.state.outcome is Outcome.DONE
    assert final.state.reason == "step 3 written now"
    assert checks.ran == [STEP_3, STEP_3]
    assert h.gateway.sessions == [None, "s-1"]  # the same session went on
    rejection = h.gateway.prompts[1]
    assert "a verification command failed: `test -f step-3.txt` exited with code 1" in rejection
    assert "test -f step-3.txt: 1 failed" in rejection  # the tail of its output
    assert checks.outputs == [LOGS / "turn-1-check-1.log", LOGS / "turn-2-check-1.log"]
    finished = h.events.of("verify.finished")
    assert [(e["turn"], e["passed"], e["exit_code"]) for e in finished] == [
        (1, False, 1),
        (2, True, 0),
    ]
    assert finished[0]["output"] == str(LOGS / "turn-1-check-1.log")
    types = h.events.types()
    assert types.index("verify.started") < types.index("verify.finished")
    assert final.state.last_checks[0].passed


def test_checks_run_in_order_and_the_first_failure_skips_the_rest() -> None:
    h = harness([verdict_turn(complete=True), verdict_turn(complete=True)])
    rec, checks, _ = verified(
        h, checks=("make test", "ruff check ."), endings={"make test": [2, 0]}
    )
    final = drive(h, rec)
    assert checks.ran == ["make test", "make test", "ruff check ."]
    assert final.state.outcome is Outcome.DONE


def test_a_check_that_times_out_is_a_failure_said_so() -> None:
    h = harness([verdict_turn(complete=True), verdict_turn(complete=True)])
    rec, _, _ = verified(h, endings={STEP_3: [None, 0]})
    final = drive(h, rec)
    assert final.state.outcome is Outcome.DONE
    assert "`test -f step-3.txt` timed out after 600 s" in h.gateway.prompts[1]
    assert h.events.of("verify.finished")[0]["timed_out"] is True


def test_a_rejected_done_checks_no_plan_item_and_an_accepted_one_checks_them_all(
    tmp_path: Path,
) -> None:
    plan_path = tmp_path / "PLAN.md"
    h = harness([verdict_turn(complete=True), verdict_turn(complete=True)])
    h.plans.files[plan_path] = "- [ ] write a\n- [ ] write b\n"
    rec, _, _ = verified(h, endings={STEP_3: [1, 0]}, rec=record(plan_path=plan_path))
    seen_plans: list[tuple[int, int] | None] = []
    h.gateway.on_turn = lambda n: seen_plans.append(h.store.last.plan_progress)
    final = drive(h, rec)
    assert seen_plans == [(0, 2), (0, 2)]  # the first Done checked nothing
    assert final.plan_progress == (2, 2)


def test_the_same_failure_three_times_ends_the_run_failed_naming_it() -> None:
    h = harness([verdict_turn(complete=True, remaining=()) for _ in range(5)])
    rec, checks, _ = verified(h, stall=0, endings={STEP_3: [1]})
    final = drive(h, rec)
    assert final.state.outcome is Outcome.FAILED
    assert final.state.outcome.exit_code == 1
    assert final.state.reason == (
        "the same verification failure 3 times in a row: `test -f step-3.txt` exited with code 1"
    )
    assert len(checks.ran) == 3
    assert final.state.ledger.turns == 3


def test_a_stop_asked_for_before_a_check_stops_the_run() -> None:
    h = harness([verdict_turn(complete=True)])
    rec, checks, _ = verified(h)
    h.gateway.on_turn = lambda n: setattr(h.control, "command", ControlCommand.STOP)
    final = drive(h, rec)
    assert final.state.outcome is Outcome.STOPPED
    assert checks.ran == []


def test_a_stop_during_a_check_ends_the_check_and_stops_the_run_resumable() -> None:
    h = harness([verdict_turn(complete=True, summary="all three written")])
    rec, checks, _ = verified(h, checks=("sleep 300", STEP_3))
    checks.hang = {"sleep 300"}
    checks.on_run = lambda text: setattr(h.control, "command", ControlCommand.STOP)
    final = drive(h, rec)

    assert final.state.outcome is Outcome.STOPPED
    assert final.state.outcome.exit_code == 130
    assert checks.ran == ["sleep 300"]  # the second check never started
    assert checks.cancelled == ["sleep 300"]
    types = h.events.types()
    assert types[-2:] == ["verify.started", "run.finished"]  # it did not finish
    # The Done is still to be verified: a resume runs its round again.
    assert final.state.verifying is not None
    assert final.state.verifying.summary == "all three written"
    assert final.state.verifying.results == ()
    assert h.store.saved[-1].state.outcome is Outcome.STOPPED

    h.control.command = None  # a driver that starts clears the control file
    checks.hang = set()
    checks.on_run = None
    resumed = drive(h, replace(final, state=reopen(final.state)), resumed=True)
    assert resumed.state.outcome is Outcome.DONE
    assert checks.ran == ["sleep 300", "sleep 300", STEP_3]
    assert len(h.gateway.prompts) == 1  # the turn was not sent again


def test_a_wind_down_during_a_check_lets_it_finish_then_winds_down() -> None:
    h = harness([verdict_turn(complete=True)])
    rec, checks, _ = verified(h, checks=("make test", STEP_3))
    checks.on_run = lambda text: setattr(h.control, "command", ControlCommand.WIND_DOWN)
    final = drive(h, rec)

    assert final.state.outcome is Outcome.WOUND_DOWN
    assert checks.ran == ["make test"]
    finished = h.events.of("verify.finished")
    assert [(e["command"], e["passed"]) for e in finished] == [("make test", True)]


def test_checks_configured_without_a_way_to_run_them_fail_the_run() -> None:
    h = harness([verdict_turn(complete=True)])
    rec, _, _ = verified(h)
    h.runner.checks = None
    final = drive(h, rec)
    assert final.state.outcome is Outcome.FAILED
    assert "cannot run them" in final.state.reason


# The review -----------------------------------------------------------------------------


def test_a_reviewer_who_disagrees_once_sends_the_work_back_then_agrees() -> None:
    h = harness(
        [
            verdict_turn(complete=True, summary="done", session_id="s-1"),
            verdict_turn(complete=True, summary="tests added", session_id="s-1"),
        ]
    )
    rec, checks, reviewer = verified(
        h,
        review=True,
        reviews=[
            verdict_turn(remaining=("add the tests",), summary="no tests", session_id="r-1"),
            verdict_turn(complete=True, summary="complete", session_id="r-2"),
        ],
    )
    final = drive(h, rec)

    assert final.state.outcome is Outcome.DONE
    assert reviewer.sessions == [None, None]  # a fresh session each time
    assert "another session's work" in reviewer.prompts[0]
    assert "Build it." in reviewer.prompts[0]  # the task
    assert "done" in reviewer.prompts[0]  # the claimed summary
    assert h.gateway.sessions == [None, "s-1"]
    assert "an independent review found it is not" in h.gateway.prompts[1]
    assert "- add the tests" in h.gateway.prompts[1]
    assert checks.ran == [STEP_3, STEP_3]
    assert final.state.ledger.turns == 4  # two working turns, two reviews
    reviews = h.events.of("review.finished")
    assert [(e["turn"], e["verdict"]) for e in reviews] == [(2, "continue"), (4, "done")]
    assert h.events.of("review.started")[0]["turn"] == 2
    assert reviewer.closed  # its process goes with the run


def test_a_wind_down_during_the_review_lets_it_answer_then_winds_down() -> None:
    h = harness([verdict_turn(complete=True, session_id="s-1")])
    rec, _, reviewer = verified(
        h,
        review=True,
        reviews=[verdict_turn(remaining=("add the tests",), summary="no tests")],
    )
    reviewer.on_turn = lambda n: setattr(h.control, "command", ControlCommand.WIND_DOWN)
    final = drive(h, rec)

    assert final.state.outcome is Outcome.WOUND_DOWN
    assert [e["verdict"] for e in h.events.of("review.finished")] == ["continue"]
    assert len(h.gateway.prompts) == 1  # no turn after it
    assert final.state.remaining_work == ("add the tests",)  # the handoff says what is left


def test_a_limit_met_during_the_review_is_waited_out_and_the_review_runs_again() -> None:
    h = harness([verdict_turn(complete=True)], probes=[OK])
    rec, checks, reviewer = verified(
        h,
        review=True,
        reviews=[
            verdict_turn(signals=WINDOW_REJECTED, cost=0.0),
            verdict_turn(complete=True),
        ],
    )
    final = drive(h, rec)
    assert final.state.outcome is Outcome.DONE
    assert len(reviewer.prompts) == 2
    assert checks.ran == [STEP_3]  # the checks had passed: not run again
    assert (final.state.ledger.turns, final.state.ledger.attempts) == (2, 3)
    reviews = h.events.of("review.finished")
    assert [e["verdict"] for e in reviews] == ["refused", "done"]
    # Each review says the kind of the capacity it met, as a turn does.
    assert [e["capacity_kind"] for e in reviews] == ["five_hour", "available"]
    assert "wait.started" in h.events.types()


def test_a_review_counts_against_the_turn_cap() -> None:
    h = harness([verdict_turn(complete=True)])
    rec, _, reviewer = verified(h, review=True, reviews=[verdict_turn(complete=True)])
    rec = replace(rec, spec=replace(rec.spec, budget=Budget(max_turns=1)))
    rec = replace(
        rec, state=replace(rec.state, ledger=replace(rec.state.ledger, budget=rec.spec.budget))
    )
    final = drive(h, rec)
    assert final.state.outcome is Outcome.BUDGET_EXHAUSTED
    assert reviewer.prompts == []


def test_a_review_without_a_reviewer_fails_the_run() -> None:
    h = harness([verdict_turn(complete=True)])
    rec, _, _ = verified(h, checks=(), review=True)
    h.runner.reviewer = None
    final = drive(h, rec)
    assert final.state.outcome is Outcome.FAILED
    assert "no reviewer" in final.state.reason


def test_a_review_the_cli_could_not_answer_fails_the_run_naming_the_review() -> None:
    h = harness([verdict_turn(complete=True)])
    rec, _, _ = verified(
        h, checks=(), review=True, reviews=[replace(verdict_turn(), failure="the CLI crashed")]
    )
    final = drive(h, rec)
    assert final.state.outcome is Outcome.FAILED
    assert final.state.reason == "the review failed: the CLI crashed"


# The stagnation brake -------------------------------------------------------------------


def test_turns_that_change_nothing_end_the_run_failed_with_no_progress() -> None:
    h = harness([verdict_turn(remaining=("write step 3",)) for _ in range(10)])
    h.tree.changing = False
    rec, _, _ = verified(h, checks=())
    final = drive(h, rec)
    assert final.state.outcome is Outcome.FAILED
    assert final.state.reason == "no progress in 3 turns"
    # The first turn listed the work (a change from nothing); three more changed nothing.
    assert final.state.ledger.turns == 4
    counted = [e["turns_without_progress"] for e in h.events.of("progress.none")]
    assert counted == [1, 2, 3]
    assert h.events.of("run.finished")[0]["exit_code"] == 1


def test_a_changing_tree_keeps_the_run_going() -> None:
    h = harness(
        [verdict_turn(remaining=("more",)) for _ in range(6)] + [verdict_turn(complete=True)]
    )
    rec, _, _ = verified(h, checks=())
    final = drive(h, rec)
    assert final.state.outcome is Outcome.DONE
    assert h.events.of("progress.none") == []


def test_a_refused_turn_is_no_turn_for_the_brake() -> None:
    h = harness(
        [verdict_turn(remaining=("x",))]
        + [verdict_turn(signals=WINDOW_REJECTED, cost=0.0) for _ in range(4)]
        + [verdict_turn(complete=True)],
        probes=[OK] * 4,
    )
    h.tree.changing = False
    rec, _, _ = verified(h, checks=())
    final = drive(h, rec)
    assert final.state.outcome is Outcome.DONE


def test_stall_turns_zero_turns_the_brake_off() -> None:
    h = harness([verdict_turn(remaining=("x",)) for _ in range(6)] + [verdict_turn(complete=True)])
    h.tree.changing = False
    rec, _, _ = verified(h, checks=(), stall=0)
    assert drive(h, rec).state.outcome is Outcome.DONE


def test_the_rejection_is_saved_for_a_resume_and_cleared_once_answered() -> None:
    h = harness([verdict_turn(complete=True), verdict_turn(complete=True)])
    rec, _, _ = verified(h, endings={STEP_3: [1, 0]})
    drive(h, rec)
    rejected = [r for r in h.store.saved if r.state.rejection is not None]
    assert isinstance(rejected[0].state.rejection, CheckFailed)
    assert rejected[0].state.phase is Phase.RUNNING
    assert h.store.last.state.rejection is None


class Killed(BaseException):
    """kill -9: nothing after it runs."""


def test_a_kill_during_a_check_then_resume_runs_the_checks_again_and_resends_no_turn() -> None:
    h = harness([verdict_turn(complete=True, summary="all done", cost=0.25, session_id="s-1")])
    rec, checks, _ = verified(h, checks=("make test", "ruff check ."))
    ran_before_kill: list[str] = []

    def kill_in_the_second_check(text: str) -> None:
        ran_before_kill.append(text)
        if len(ran_before_kill) == 2:
            raise Killed

    checks.on_run = kill_in_the_second_check
    try:
        drive(h, rec)
    except Killed:
        pass
    else:
        raise AssertionError("the kill should have stopped the driver")
    saved = h.store.last
    assert saved.state.phase is Phase.VERIFYING
    assert saved.turn_in_flight is None  # the turn's result was recorded

    checks.on_run = None
    checks.ran.clear()
    h.events.events.clear()
    final = drive(h, saved, resumed=True)

    assert final.state.outcome is Outcome.DONE
    assert checks.ran == ["make test", "ruff check ."]  # the round from its first check
    assert len(h.gateway.prompts) == 1  # the turn was not sent again
    assert (final.state.ledger.turns, final.state.ledger.attempts) == (1, 1)
    assert final.state.ledger.dollars == 0.25
    assert "turn.interrupted" not in h.events.types()
    assert "turn.finished" not in h.events.types()


def test_a_run_resumed_before_its_first_turn_weighs_that_turn_as_a_fresh_run_does() -> None:
    # Killed before its first turn, it is resumed (said as a resume), and still begins
    # where a fresh run begins: the first turn's change of the tree is progress.
    for resumed in (False, True):
        h = harness([verdict_turn(), verdict_turn(complete=True)])
        rec, _, _ = verified(h, checks=(), stall=1)
        assert rec.state.phase is Phase.PREFLIGHT
        final = drive(h, rec, resumed=resumed)
        assert final.state.outcome is Outcome.DONE, (resumed, final.state.reason)
        assert h.events.of("progress.none") == []
        assert h.events.of("run.resumed" if resumed else "run.started")
