"""The signals of today's Claude Code (2.1.332), through the real CLI: an account the
service will not serve ends 77 with its own fix, a 429 the CLI retries on its own is no
plan limit, and a turn the CLI cut at its inner-turn cap goes on."""

from __future__ import annotations

import os

import pytest

from tests.e2e.conftest import FAST_WAITS, Rehearsal, write_plan
from tests.e2e.patience import COMMAND

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("reason", "fix"),
    [
        pytest.param(
            "the organization does not allow its subscription login in Claude Code",
            "use an Anthropic API key (ANTHROPIC_API_KEY)",
            marks=pytest.mark.scenario("org_not_allowed"),
            id="oauth_org_not_allowed",
        ),
        pytest.param(
            "the account must be verified",
            "verify the account at the page Claude Code named (Claude Code said: API Error: "
            "Verify your account to keep using Claude Code: https://claude.ai/verify)",
            marks=pytest.mark.scenario("verification_required"),
            id="verification_required",
        ),
    ],
)
def test_an_account_the_service_will_not_serve_ends_77_with_its_own_fix(
    rehearsal: Rehearsal, reason: str, fix: str
) -> None:
    finished = rehearsal.run("--prompt", "Write hello.txt", *FAST_WAITS, timeout=COMMAND)
    assert finished.exit_code == 77, finished.stderr
    result = finished.result
    assert result["outcome"] == "auth_failed"
    assert result["reason"].startswith(f"authentication failed: {reason}: "), result["reason"]
    assert fix in result["reason"]
    # One turn, no wait and no probe: a person must act first.
    assert result["attempts"] == 1
    assert [r for r in rehearsal.requests() if r["kind"] == "probe"] == []
    assert "wait.started" not in finished.event_types()
    summary = (finished.run_directory() / "summary.md").read_text()
    assert reason in summary
    status = rehearsal.claudeloop("status")
    assert status.exit_code == 0, status.stderr
    assert reason in status.stdout


@pytest.mark.scenario("transient_429_at_2")
def test_a_429_the_cli_retries_on_its_own_is_no_plan_limit(rehearsal: Rehearsal) -> None:
    rehearsal.env["CLAUDE_CODE_MAX_RETRIES"] = "1"
    write_plan(rehearsal.project, items=2)
    finished = rehearsal.run("PLAN.md", *FAST_WAITS, timeout=COMMAND)
    assert finished.exit_code == 0, finished.stderr
    result = finished.result
    assert result["outcome"] == "done"
    # The CLI retried the 429 once and was answered: two turns, two attempts, no wait.
    statuses = [r["status"] for r in rehearsal.requests() if r["kind"] == "turn"]
    assert statuses.count(429) == 1
    assert result["turns"] == 2
    assert result["attempts"] == 2
    types = finished.event_types()
    assert "wait.started" not in types
    assert "probe.finished" not in types
    (retrying,) = [e for e in finished.events() if e["type"] == "turn.retrying"]
    assert retrying["error_status"] == 429
    capacities = [e["capacity"] for e in finished.events() if e["type"] == "turn.finished"]
    assert capacities == ["available", "available"]


@pytest.mark.scenario("max_turns_cut")
def test_a_turn_cut_at_the_clis_inner_turn_cap_goes_on(rehearsal: Rehearsal) -> None:
    # CLAUDE_CODE_MAX_TURNS caps the CLI's inner agent turns: it ends the turn with
    # error_max_turns (terminal_reason max_turns), which is no failure of the run.
    rehearsal.env["CLAUDE_CODE_MAX_TURNS"] = "1"
    finished = rehearsal.run("--prompt", "Write step1.txt", *FAST_WAITS, timeout=COMMAND)
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    assert (rehearsal.project / "step1.txt").read_text() == "step 1\n"
    types = finished.event_types()
    assert "turn.failed" not in types
    assert types.count("turn.finished") == 2
    errors = [e["error"] for e in finished.events() if e["type"] == "turn.finished"]
    assert errors == [None, None]


@pytest.mark.scenario("one_step")
def test_a_cli_that_refuses_to_start_says_why_and_the_fix(rehearsal: Rehearsal) -> None:
    # bypassPermissions as root without IS_SANDBOX (CI runs as root; skip elsewhere):
    # the CLI exits 1 before any request, with startup_failure_reason bypass_root.
    if os.geteuid() != 0:
        pytest.skip("the CLI refuses bypassPermissions only to root")
    rehearsal.env.pop("IS_SANDBOX")
    finished = rehearsal.run(
        "--prompt",
        "Write step1.txt",
        "--permission-mode",
        "bypassPermissions",
        *FAST_WAITS,
        timeout=COMMAND,
    )
    assert finished.exit_code == 1, finished.stderr
    result = finished.result
    assert result["outcome"] == "failed"
    assert result["reason"] == (
        "Claude Code refused to start (bypass_root): bypassPermissions was asked for while "
        "running as root: run as another user, set IS_SANDBOX=1 inside a container or "
        "sandbox, or use another --permission-mode"
    )
    assert rehearsal.requests() == []
    assert result["attempts"] == 0
    summary = (finished.run_directory() / "summary.md").read_text()
    assert "refused to start (bypass_root)" in summary


@pytest.mark.scenario("max_tokens_three_turns")
def test_answers_cut_at_the_output_cap_are_no_error_turns(rehearsal: Rehearsal) -> None:
    # Measured: the CLI resumes a cut answer three times on its own ("Output token limit
    # hit. Resume directly"), then ends the turn with the assistant error
    # max_output_tokens. Three such turns in a row are no "3 turns ended in an error":
    # each wrote its file, and the fourth finishes the task.
    finished = rehearsal.run(
        "--prompt", "Write step1.txt to step4.txt", *FAST_WAITS, timeout=COMMAND
    )
    assert finished.exit_code == 0, finished.stderr
    assert finished.result["outcome"] == "done"
    for n in range(1, 5):
        assert (rehearsal.project / f"step{n}.txt").read_text() == f"step {n}\n"
    cut = [r for r in rehearsal.requests() if r["gate"] == "max_tokens"]
    assert len(cut) == 12
    ends = [e for e in finished.events() if e["type"] == "turn.finished"]
    assert [e["error"] for e in ends] == [None] * 4
    assert [e["capacity"] for e in ends] == ["available"] * 4
    assert "wait.started" not in finished.event_types()


@pytest.mark.scenario("org_not_allowed_from_start")
def test_doctor_says_an_organization_allows_no_subscription_login(
    rehearsal: Rehearsal,
) -> None:
    rehearsal.env["CLAUDELOOP_CONFIG_DIR"] = str(rehearsal.project.parent / "user-config")
    finished = rehearsal.claudeloop("doctor")
    assert finished.exit_code == 77, finished.stdout
    (model,) = [c for c in finished.result["checks"] if c["name"] == "model"]
    assert model["status"] == "fail"
    assert model["detail"] == (
        "the organization does not allow its subscription login in Claude Code"
    )
    assert model["fix"].startswith("use an Anthropic API key (ANTHROPIC_API_KEY)")


# Measured (CLI 2.1.332): `cloud_credential_error` is never derived from an API answer
# (the CLI's check returns null for any error with an HTTP status); it is what the CLI
# says when a cloud provider's credentials cannot be loaded. Bedrock with no AWS
# credentials anywhere (no files, no variables, no instance metadata) makes it so.
NO_AWS_CREDENTIALS = {
    "CLAUDE_CODE_USE_BEDROCK": "1",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
}


@pytest.mark.scenario("one_step")
def test_cloud_credentials_that_cannot_be_loaded_end_77_with_the_fix(
    rehearsal: Rehearsal,
) -> None:
    for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        rehearsal.env.pop(name, None)
    rehearsal.env.update(
        NO_AWS_CREDENTIALS, ANTHROPIC_BEDROCK_BASE_URL=rehearsal.env["ANTHROPIC_BASE_URL"]
    )
    finished = rehearsal.run("--prompt", "Write hello.txt", *FAST_WAITS, timeout=COMMAND)
    assert finished.exit_code == 77, finished.stderr
    result = finished.result
    assert result["outcome"] == "auth_failed"
    reason = "authentication failed: the cloud provider's credentials could not be loaded"
    assert result["reason"].startswith(reason), result["reason"]
    assert "aws sso login" in result["reason"]
    assert result["attempts"] == 1
    assert rehearsal.requests() == []
    assert "wait.started" not in finished.event_types()


@pytest.mark.scenario("blocking_limit")
def test_a_conversation_at_the_blocking_limit_ends_78_with_the_fix(
    rehearsal: Rehearsal,
) -> None:
    """Measured (CLI 2.1.332): the CLI checks the last answer's input tokens against its
    blocking limit before each request; with automatic compaction off
    (DISABLE_AUTO_COMPACT) it ends the turn with terminal_reason `blocking_limit` and
    "Prompt is too long" instead of sending. The test lowers the limit
    (CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE) under the 199,000 tokens every answer reports;
    the same prompt would meet it again, so the backend cannot serve the run: 78."""
    rehearsal.env.update(DISABLE_AUTO_COMPACT="1", CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE="50000")
    finished = rehearsal.run("--prompt", "Write hello.txt", *FAST_WAITS, timeout=COMMAND)
    assert finished.exit_code == 78, finished.stderr
    result = finished.result
    assert result["outcome"] == "backend_misconfigured"
    assert result["reason"].startswith(
        "the prompt is too long for the model's context window: the conversation reached "
        "it and Claude Code could not compact it"
    ), result["reason"]
    assert "give a shorter task" in result["reason"]
    # The first request was answered; the turn's second one was never sent.
    assert [r["kind"] for r in rehearsal.requests()] == ["turn"]
    assert result["attempts"] == 1
    assert result["turns"] == 0
    assert "wait.started" not in finished.event_types()


@pytest.mark.scenario("model_refusal_at_2")
def test_a_turn_the_model_refuses_ends_the_run_blocked_with_the_category(
    rehearsal: Rehearsal,
) -> None:
    # The API ends turn 2's stream with stop_reason "refusal" (stop_details: cyber, ...).
    # Measured (CLI 2.1.332): with no fallback model the CLI sends
    # model_refusal_no_fallback and ends the turn with an error result ("API Error: ...
    # safeguards flagged this message"). The same prompt would be refused again: the run
    # ends blocked at once, not after three error turns.
    plan = write_plan(rehearsal.project)
    finished = rehearsal.run(str(plan), *FAST_WAITS, timeout=COMMAND)
    assert finished.exit_code == 1, finished.stderr
    assert finished.result["outcome"] == "blocked"
    assert "the model refused to answer: cyber" in finished.result["reason"]
    assert (rehearsal.project / "step1.txt").exists()
    ends = [e for e in finished.events() if e["type"] == "turn.finished"]
    assert [e["turn"] for e in ends] == [1, 2]
    summary = (finished.run_directory() / "summary.md").read_text()
    assert "the model refused to answer" in summary
