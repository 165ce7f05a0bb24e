"""--pause-at and --on-limit: refused in one line before a run starts when wrong."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Invocation

Invoke = Callable[..., Invocation]


def test_a_bad_pause_threshold_is_refused(claudeloop: Invoke, tmp_path: Path) -> None:
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path, "--pause-at", "5h=200%")
    assert result.exit_code == 2
    assert len(result.err.strip().splitlines()) == 1
    assert "--pause-at" in result.err
    assert "at most 100%" in result.err


def test_switching_to_a_profile_that_does_not_exist_is_refused_before_the_run(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    result = claudeloop(
        "run", "--prompt", "x", "--cwd", tmp_path, "--on-limit", "five_hour=switch-profile nope"
    )
    assert result.exit_code == 2
    assert len(result.err.strip().splitlines()) == 1
    assert "limits.five_hour" in result.err
    assert "nope" in result.err
    assert not (tmp_path / ".claudeloop").exists()  # no run was started


def test_an_on_limit_for_a_limit_that_does_not_exist_names_those_that_do(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path, "--on-limit", "ten_hour=wait")
    assert result.exit_code == 2
    assert len(result.err.strip().splitlines()) == 1
    assert "'ten_hour=wait' is not LIMIT=ACTION" in result.err
    assert "five_hour" in result.err
    assert "unknown" in result.err  # a window not named, or one claudeloop does not know
    assert not (tmp_path / ".claudeloop").exists()


def test_a_switch_whose_name_the_shell_cut_off_says_to_quote_it(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    """`--on-limit five_hour=switch-profile local` unquoted: `local` is a word of its own."""
    result = claudeloop(
        "run", "--prompt", "x", "--cwd", tmp_path, "--on-limit", "five_hour=switch-profile", "local"
    )
    assert result.exit_code == 2
    (line,) = result.err.splitlines()
    assert line.endswith(
        "'switch-profile' names no profile: write switch-profile PROFILE, quoted as one "
        "argument: --on-limit 'five_hour=switch-profile PROFILE'"
    )
    assert "is not an action" not in line
    assert not (tmp_path / ".claudeloop").exists()


def test_config_show_names_the_pause_and_the_policies(claudeloop: Invoke, tmp_path: Path) -> None:
    (tmp_path / "claudeloop.toml").write_text(
        'pause_at = "5h=90%"\n[limits]\ncredits = "wind-down"\n'
    )
    shown = claudeloop("config", "show", "--cwd", tmp_path)
    assert shown.exit_code == 0
    assert '"five_hour=90%"' in shown.out
    assert '{ credits = "wind-down" }' in shown.out


def test_on_limit_errors_name_the_flag_and_key_that_exist(
    claudeloop: Invoke, tmp_path: Path
) -> None:
    result = claudeloop(
        "run", "--prompt", "x", "--cwd", tmp_path, "--on-limit", "five_hour=switch-profile nope"
    )
    line = result.err.strip()
    assert result.exit_code == 2
    assert "flag --on-limit" in line
    assert "[profiles.nope]" in line
    # Neither --limits nor --profile was typed, and --limits does not exist.
    assert "--limits" not in line
    assert "--profile" not in line


def test_a_bad_limits_variable_says_how_each_source_writes_it(
    claudeloop: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDELOOP_LIMITS", "five_hour=explode")
    result = claudeloop("run", "--prompt", "x", "--cwd", tmp_path)
    assert result.exit_code == 2
    assert "CLAUDELOOP_LIMITS" in result.err
    # One --on-limit takes one LIMIT=ACTION, not a comma-separated list.
    assert "each --on-limit LIMIT=ACTION" in result.err
    assert "--on-limit as LIMIT=ACTION separated by commas" not in result.err
