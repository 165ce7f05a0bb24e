"""The value a source gives a setting is of the type its description says: the cast in
`Configuration.of` is safe because the schema is made from the same descriptions."""

from __future__ import annotations

from pathlib import Path

from claudeloop.adapters.config.schema import ACCEPTED, RunSettings
from claudeloop.application.settings import PYTHON_TYPES, SETTING_KEYS, SETTINGS
from tests.config.sources import load

# One value of every setting, as claudeloop.toml writes it.
EVERY_KEY = """
profile = "default"
model = "qwen3"
permission_mode = "plan"
max_turns = 5
max_dollars = 2.5
max_attempts = 9
max_wait = "8h"
window_probe_interval = "2m"
credits_probe_interval = 30
credits_probe_ceiling = "10m"
reset_grace = "5s"
ready_ahead = "0"
done_marker = "DONE"
continue_prompt = "Keep going."
notify = ["json://127.0.0.1:9/hook"]
notify_on = ["done"]
dashboard_url = "https://box.tailnet.ts.net:8420"
update_plan = true
pause_at = "5h=90%"
limits = { five_hour = "wind-down" }
share_capacity = false
verify = ["make test"]
verify_timeout = "90s"
silence_timeout = "2m"
review = true
stall_turns = 0
same_failure = 4
worktree = true
worktree_from = "working-tree"
checkpoint = true
sandbox = "off"
sandbox_allow_domains = ["pypi.org", "*.npmjs.org"]
sandbox_allow_read = ["~/.m2"]
"""

# The same, as CLAUDELOOP_* variables write them.
EVERY_VARIABLE = {
    "CLAUDELOOP_PROFILE": "default",
    "CLAUDELOOP_MODEL": "qwen3",
    "CLAUDELOOP_PERMISSION_MODE": "plan",
    "CLAUDELOOP_MAX_TURNS": "5",
    "CLAUDELOOP_MAX_DOLLARS": "3",
    "CLAUDELOOP_MAX_ATTEMPTS": "9",
    "CLAUDELOOP_MAX_WAIT": "8h",
    "CLAUDELOOP_WINDOW_PROBE_INTERVAL": "2m",
    "CLAUDELOOP_CREDITS_PROBE_INTERVAL": "30",
    "CLAUDELOOP_CREDITS_PROBE_CEILING": "10m",
    "CLAUDELOOP_RESET_GRACE": "5s",
    "CLAUDELOOP_READY_AHEAD": "45s",
    "CLAUDELOOP_DONE_MARKER": "DONE",
    "CLAUDELOOP_CONTINUE_PROMPT": "Keep going.",
    "CLAUDELOOP_NOTIFY": "json://127.0.0.1:9/hook",
    "CLAUDELOOP_NOTIFY_ON": "done,failed",
    "CLAUDELOOP_DASHBOARD_URL": "http://127.0.0.1:8420/",
    "CLAUDELOOP_UPDATE_PLAN": "true",
    "CLAUDELOOP_PAUSE_AT": "5h=90%",
    "CLAUDELOOP_LIMITS": "five_hour=wind-down",
    "CLAUDELOOP_SHARE_CAPACITY": "false",
    "CLAUDELOOP_VERIFY": "make test",
    "CLAUDELOOP_VERIFY_TIMEOUT": "90s",
    "CLAUDELOOP_SILENCE_TIMEOUT": "2m",
    "CLAUDELOOP_REVIEW": "true",
    "CLAUDELOOP_STALL_TURNS": "0",
    "CLAUDELOOP_SAME_FAILURE": "4",
    "CLAUDELOOP_WORKTREE": "true",
    "CLAUDELOOP_WORKTREE_FROM": "working-tree",
    "CLAUDELOOP_CHECKPOINT": "true",
    "CLAUDELOOP_SANDBOX": "off",
    "CLAUDELOOP_SANDBOX_ALLOW_DOMAINS": "pypi.org, *.npmjs.org",
    "CLAUDELOOP_SANDBOX_ALLOW_READ": "~/.m2 /opt/sdk",
}


def test_the_schema_has_a_field_per_setting_in_their_order() -> None:
    assert tuple(RunSettings.model_fields) == SETTING_KEYS
    assert all(key in ACCEPTED for key in SETTING_KEYS)


def test_a_file_setting_every_key_gives_each_value_its_settings_type(tmp_path: Path) -> None:
    (tmp_path / "user").mkdir()
    config = load(tmp_path, tmp_path / "user", project_text=EVERY_KEY)
    for setting in SETTINGS:
        sourced = config.of(setting)
        assert sourced.origin.kind == "project", setting.key
        assert type(sourced.value) is PYTHON_TYPES[setting.kind], setting.key


def test_every_variable_gives_each_value_its_settings_type(tmp_path: Path) -> None:
    (tmp_path / "user").mkdir()
    config = load(tmp_path, tmp_path / "user", env=EVERY_VARIABLE)
    assert set(EVERY_VARIABLE) == {setting.variable for setting in SETTINGS}
    for setting in SETTINGS:
        sourced = config.of(setting)
        assert sourced.origin.describe() == f"env {setting.variable}", setting.key
        assert type(sourced.value) is PYTHON_TYPES[setting.kind], setting.key
