"""The flags of `run` and `resume` are made from the settings' descriptions."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import click
import pytest

from claudeloop.application.settings import SETTINGS
from claudeloop.cli.main import cli, resume, run


def test_run_and_resume_take_every_settings_flag_with_its_help() -> None:
    for command in (run, resume):
        options = {param.name: param for param in command.params if isinstance(param, click.Option)}
        for setting in SETTINGS:
            if not setting.has_flag:
                assert setting.key not in options
                continue
            option = options[setting.key]
            assert setting.option in option.opts, setting.key
            assert option.help == setting.help, setting.key


# One command line giving every settings flag of `run`.
EVERY_FLAG = [
    "--profile", "default", "--model", "qwen3", "--permission-mode", "plan",
    "--max-turns", "5", "--max-dollars", "2.5", "--max-attempts", "9", "--max-wait", "8h",
    "--window-probe-interval", "2m", "--credits-probe-interval", "30",
    "--credits-probe-ceiling", "10m", "--reset-grace", "5s", "--ready-ahead", "0",
    "--done-marker", "DONE",
    "--continue-prompt", "Keep going.", "--notify", "json://127.0.0.1:9/hook",
    "--update-plan", "--pause-at", "5h=90%", "--on-limit", "five_hour=wind-down",
    "--no-share-capacity", "--verify", "make test", "--verify-timeout", "90s",
    "--silence-timeout", "2m", "--review",
    "--stall-turns", "0", "--same-failure", "4", "--worktree",
    "--worktree-from", "working-tree", "--checkpoint", "--sandbox", "off",
    "--sandbox-allow-domain", "pypi.org", "--sandbox-allow-read", "~/.m2",
]  # fmt: skip


def test_every_flag_reaches_its_setting_as_a_value_of_the_settings_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claudeloop.adapters.config.reading import configuration
    from claudeloop.application.settings import PYTHON_TYPES

    monkeypatch.setenv("CLAUDELOOP_CONFIG_DIR", str(tmp_path / "user"))
    # Under the group, as the real command line parses it (click keeps the first help
    # option it makes for a command: one made without the group's `-h` would stay).
    group = cli.make_context("claudeloop", ["run"], resilient_parsing=True)
    parsed = run.make_context("run", ["--prompt", "x", *EVERY_FLAG], parent=group).params
    config = configuration(tmp_path, parsed)
    for setting in SETTINGS:
        sourced = config.of(setting)
        if not setting.has_flag:
            assert sourced.origin.kind == "default", setting.key
            continue
        assert sourced.origin.describe() == f"flag {setting.option}", setting.key
        assert type(sourced.value) is PYTHON_TYPES[setting.kind], setting.key


def test_a_duration_that_may_be_off_takes_zero_where_the_others_refuse_it() -> None:
    group = cli.make_context("claudeloop", ["run"], resilient_parsing=True)
    off = run.make_context("run", ["--prompt", "x", "--ready-ahead", "0"], parent=group)
    assert off.params["ready_ahead"] == timedelta(0)
    with pytest.raises(click.BadParameter, match="'0' must be longer than 0"):
        run.make_context("run", ["--prompt", "x", "--reset-grace", "0"], parent=group)
