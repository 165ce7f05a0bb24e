"""Errors a user can cause end in one line that names the culprit, with exit 2."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Invocation
from tests.cli.test_run_directory_commands import waiting_run

Invoke = Callable[..., Invocation]


def assert_one_line_error(result: Invocation, *needles: str) -> None:
    assert result.exit_code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("claudeloop: error:")
    for needle in needles:
        assert needle in lines[0]
    assert "Traceback" not in result.err


def test_missing_plan_file(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("run", tmp_path / "NOPE.md", "--cwd", tmp_path)
    assert_one_line_error(result, "NOPE.md", "not found")


def test_empty_plan_file(claudeloop: Invoke, tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    plan.write_text("  \n")
    result = claudeloop("run", plan, "--cwd", tmp_path)
    assert_one_line_error(result, "PLAN.md", "empty")


def test_both_plan_and_prompt(claudeloop: Invoke, tmp_path: Path) -> None:
    plan = tmp_path / "PLAN.md"
    plan.write_text("- [ ] a\n")
    result = claudeloop("run", plan, "--prompt", "x", "--cwd", tmp_path)
    assert_one_line_error(result, "PLAN", "--prompt")


def test_neither_plan_nor_prompt(claudeloop: Invoke, tmp_path: Path) -> None:
    assert_one_line_error(claudeloop("run", "--cwd", tmp_path), "PLAN", "--prompt")


@pytest.mark.parametrize("value", ["5x", "h", "-3m", "5h30", ""])
def test_malformed_duration(claudeloop: Invoke, tmp_path: Path, value: str) -> None:
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path, "--max-wait", value)
    assert_one_line_error(result, "--max-wait", "90s")


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--max-turns", "-1"),
        ("--max-turns", "0"),
        ("--max-dollars", "-0.5"),
        ("--max-attempts", "x"),
    ],
)
def test_negative_or_zero_cap(claudeloop: Invoke, tmp_path: Path, flag: str, value: str) -> None:
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path, flag, value)
    accepted = "a number above 0" if flag == "--max-dollars" else "a whole number above 0"
    assert_one_line_error(result, flag, accepted)
    # The command named once, after the one prefix.
    assert result.err.startswith(f"claudeloop: error: run: Invalid value for '{flag}'")


def test_cwd_that_does_not_exist(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path / "gone")
    assert_one_line_error(result, "gone", "no such directory")


def test_unknown_session_id(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("resume", "--session-id", "0000-nope", "--cwd", tmp_path)
    assert_one_line_error(result, "0000-nope")


def test_resume_with_no_run(claudeloop: Invoke, tmp_path: Path) -> None:
    assert_one_line_error(claudeloop("resume", "--cwd", tmp_path), "no claudeloop run")


def test_unknown_option(claudeloop: Invoke) -> None:
    assert_one_line_error(claudeloop("run", "--max-turn", "3"), "--max-turn")


def test_status_without_runs(claudeloop: Invoke, tmp_path: Path) -> None:
    # Nothing to show is no usage error (README, exit codes): one line, exit 0.
    shown = claudeloop("status", "--cwd", tmp_path)
    assert shown.exit_code == 0
    assert shown.out.startswith("claudeloop: no claudeloop run")
    # logs needs a run to show: there it stays a usage error.
    assert_one_line_error(claudeloop("logs", "--cwd", tmp_path), "no claudeloop run")


@pytest.mark.parametrize("url", ["not a url", "ftp://host", "http://", "http://host:99999"])
def test_a_base_url_that_is_no_url_is_refused_before_any_turn(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    assert_one_line_error(
        result,
        f"environment variable ANTHROPIC_BASE_URL={url!r}",
        "expected an http:// or https://",
    )
    assert not (tmp_path / ".claudeloop").exists()


def test_a_profiles_base_url_in_its_extra_env_is_checked_too(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    (tmp_path / "claudeloop.toml").write_text(
        '[profiles.proxy]\nextra_env = { ANTHROPIC_BASE_URL = "localhost:4000" }\n'
    )
    result = claudeloop("run", "--prompt", "x", "--profile", "proxy", "--cwd", tmp_path)
    assert_one_line_error(
        result, "extra_env.ANTHROPIC_BASE_URL in [profiles.proxy] in", "'localhost:4000'"
    )


def test_resume_refuses_a_base_url_that_is_no_url_before_any_turn(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = waiting_run(tmp_path)
    before = (run.path / "state.json").read_text()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "not a url")
    result = claudeloop("resume", "--cwd", tmp_path)
    assert_one_line_error(result, "ANTHROPIC_BASE_URL='not a url'")
    assert (run.path / "state.json").read_text() == before


@pytest.mark.parametrize(
    ("flag", "key"), [("--continue-prompt", "continue_prompt"), ("--done-marker", "done_marker")]
)
def test_a_blank_text_setting_is_refused_alike_from_a_flag_a_variable_and_the_file(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str, key: str
) -> None:
    from_flag = claudeloop("run", "--prompt", "x", flag, " ", "--cwd", tmp_path)
    assert_one_line_error(from_flag, f'flag {flag}=" ": expected non-empty text')
    monkeypatch.setenv(f"CLAUDELOOP_{key.upper()}", " ")
    from_variable = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    assert_one_line_error(
        from_variable, f'environment variable CLAUDELOOP_{key.upper()}=" ": expected non-empty'
    )
    monkeypatch.delenv(f"CLAUDELOOP_{key.upper()}")
    (tmp_path / "claudeloop.toml").write_text(f'{key} = " "\n')
    from_file = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    assert_one_line_error(from_file, f'{key} = " ": expected non-empty text')
    assert not (tmp_path / ".claudeloop").exists()


def test_a_plan_without_checklist_items_is_said_not_to_be_tracked(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    (tmp_path / "PLAN.md").write_text("# Task\n\nPort the parser to Rust.\n")
    # A bad setting ends the run right after the plan was read: the warning came first.
    (tmp_path / "claudeloop.toml").write_text("max_turns = 0\n")
    result = claudeloop("run", tmp_path / "PLAN.md", "--cwd", tmp_path)
    first = result.err.splitlines()[0]
    assert first.startswith("claudeloop: warning: PLAN.md has no checklist items (- [ ] ...)")
    assert "plan progress is not tracked" in first
    (tmp_path / "PLAN.md").write_text("# Task\n\n- [ ] Port the parser\n")
    assert "warning" not in claudeloop("run", tmp_path / "PLAN.md", "--cwd", tmp_path).err


def test_a_damaged_kept_rehearsal_record_is_one_line(claudeloop: Invoke, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "rehearsal.json").write_text("{not json")
    result = claudeloop("resume", "--cwd", project)
    assert_one_line_error(result, "rehearsal.json", "rehearse --keep")
