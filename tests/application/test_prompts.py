"""The words said to the model: the task of a plan, and a rejected Done explained."""

from __future__ import annotations

from claudeloop.application.prompts import first_prompt, plan_task, rejection_prompt, review_prompt
from claudeloop.domain.plan import WorkPlan
from claudeloop.domain.verification import CheckCommand, CheckFailed, CheckResult, ReviewDisagreed

CHECK = CheckCommand.parse("test -f step-3.txt")


def test_a_failed_check_is_named_with_its_exit_code_and_output() -> None:
    result = CheckResult(
        command=CHECK, exit_code=1, seconds=0.1, output_tail="step-3.txt: missing\n"
    )
    prompt = rejection_prompt(CheckFailed(result))
    assert "`test -f step-3.txt` exited with code 1" in prompt
    assert "```\nstep-3.txt: missing\n```" in prompt
    assert "last lines" not in prompt


def test_a_timeout_is_said_so_with_its_seconds() -> None:
    result = CheckResult(command=CHECK, exit_code=None, seconds=600.02, timed_out=True)
    prompt = rejection_prompt(CheckFailed(result))
    assert "timed out after 600 s" in prompt
    assert "Its output" not in prompt  # nothing printed, no empty block


def test_a_command_that_cannot_start_shows_why() -> None:
    result = CheckResult(
        command=CHECK, exit_code=None, seconds=0, start_error="No such file or directory: 'test'"
    )
    prompt = rejection_prompt(CheckFailed(result))
    assert "could not start" in prompt
    assert "No such file or directory: 'test'" in prompt


def test_the_output_is_bounded_to_its_last_characters() -> None:
    tail = "".join(f"line {n}\n" for n in range(2000)) + "FAILED the last line"
    result = CheckResult(
        command=CHECK, exit_code=2, seconds=1, output_tail=tail, output_bytes=len(tail)
    )
    prompt = rejection_prompt(CheckFailed(result), tail_chars=500)
    assert "FAILED the last line" in prompt
    assert "line 0\n" not in prompt
    assert "(its last lines)" in prompt
    assert len(prompt) < 1000


def test_output_with_a_fence_inside_stays_fenced() -> None:
    result = CheckResult(command=CHECK, exit_code=1, seconds=1, output_tail="```python\nboom\n```")
    prompt = rejection_prompt(CheckFailed(result))
    assert "````\n```python\nboom\n```\n````" in prompt


def test_a_disagreeing_review_passes_on_its_remaining_work() -> None:
    prompt = rejection_prompt(
        ReviewDisagreed(
            remaining_work=("handle an empty file", "document --strict"),
            summary="The parser works for the happy path only.",
        )
    )
    assert "independent review found it is not" in prompt
    assert "- handle an empty file\n- document --strict" in prompt
    assert "happy path only" in prompt


def test_a_blocked_review_says_what_it_could_not_confirm() -> None:
    prompt = rejection_prompt(ReviewDisagreed(blocked_on="the plan file is missing"))
    assert "could not confirm it: the plan file is missing" in prompt
    assert "still to do" not in prompt


def test_a_plans_task_names_its_file_and_the_first_prompt_carries_its_text_once() -> None:
    task = plan_task("PLAN.md")
    assert task == "Carry out the plan in PLAN.md."
    plan = WorkPlan.parse("# Plan\n\nPort the parser.\n\n- [ ] Write step1.txt\n\n")
    prompt = first_prompt(task, plan=plan, plan_name="PLAN.md", marker=None)
    assert prompt.startswith(
        "Carry out the plan in PLAN.md.\n\nIts text:\n\n# Plan\n\nPort the parser.\n\n"
        "- [ ] Write step1.txt\n\nThe plan is in PLAN.md; its checklist has 1 item"
    )
    assert prompt.count("Port the parser.") == 1


def test_the_review_sees_the_plans_whole_text_with_its_marks() -> None:
    plan = WorkPlan.parse("# Plan\n\nPort the parser.\n\n- [x] Write step1.txt\n- [ ] Two")
    prompt = review_prompt(plan_task("PLAN.md"), plan=plan, summary="", marker=None)
    assert "The task:\nCarry out the plan in PLAN.md." in prompt
    assert (
        "The plan (1/2 checked):\n# Plan\n\nPort the parser.\n\n- [x] Write step1.txt\n- [ ] Two"
        in prompt
    )
    prose_only = review_prompt(
        "x", plan=WorkPlan.parse("Port the parser."), summary="", marker=None
    )
    assert "The plan:\nPort the parser." in prose_only
