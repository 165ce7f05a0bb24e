"""Each setting is described once; its type, its names and its words hold together."""

from __future__ import annotations

from datetime import timedelta

from claudeloop.application.settings import (
    PYTHON_TYPES,
    SETTING_KEYS,
    SETTINGS,
    Origin,
    short_duration,
)


def test_each_default_is_of_its_settings_kind_or_unset() -> None:
    for setting in SETTINGS:
        if setting.default is not None:
            # `type(...) is`: a bool is no whole number, an int no dollars.
            assert type(setting.default) is PYTHON_TYPES[setting.kind], setting.key


def test_a_setting_has_one_key_one_variable_and_at_most_one_flag_of_its_own() -> None:
    assert len(set(SETTING_KEYS)) == len(SETTINGS)
    variables = [setting.variable for setting in SETTINGS]
    assert variables == [f"CLAUDELOOP_{key.upper()}" for key in SETTING_KEYS]
    flags = [setting.option for setting in SETTINGS if setting.has_flag]
    assert len(set(flags)) == len(flags)
    assert all(flag.startswith("--") for flag in flags)


def test_the_flag_is_the_key_with_dashes_but_where_it_is_named() -> None:
    named = {s.key: s.option for s in SETTINGS if s.has_flag and s.flag is not None}
    # Repeatable flags of a list say one item each.
    assert named == {
        "limits": "--on-limit",
        "sandbox_allow_domains": "--sandbox-allow-domain",
        "sandbox_allow_read": "--sandbox-allow-read",
    }
    assert [s.key for s in SETTINGS if not s.has_flag] == ["notify_on", "dashboard_url"]


def test_every_setting_says_what_it_accepts_and_every_flag_has_help() -> None:
    for setting in SETTINGS:
        assert setting.accepted.strip(), setting.key
        assert setting.help.strip() or not setting.has_flag, setting.key
        assert bool(setting.choices) == (setting.kind in ("choice", "choices")), setting.key


def test_a_default_in_the_help_is_said_as_a_duration_is_written() -> None:
    assert short_duration(timedelta(minutes=5)) == "5m"
    assert short_duration(timedelta(seconds=2)) == "2s"
    assert short_duration(timedelta(seconds=90)) == "90s"


def test_an_origin_says_where_a_value_came_from() -> None:
    assert Origin("flag", "--max-turns").describe() == "flag --max-turns"
    assert Origin("env", "CLAUDELOOP_MAX_TURNS").describe() == "env CLAUDELOOP_MAX_TURNS"
    assert Origin("project", "/p/claudeloop.toml").describe() == "/p/claudeloop.toml"
    assert Origin("default").describe() == "default"
