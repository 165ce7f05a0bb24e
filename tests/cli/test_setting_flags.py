"""The flags of `run` and `resume` are made from the settings' descriptions."""

from __future__ import annotations

import click

from claudeloop.application.settings import SETTINGS
from claudeloop.cli.main import resume, run


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
