"""Which source wins, where each value came from, and one-line errors that name the file,
the key, the value and what would be accepted."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest

from claudeloop.adapters.config.files import user_config_dir
from claudeloop.adapters.config.loading import (
    OTHER_VARIABLES,
)
from claudeloop.application.settings import (
    CONTINUE_PROMPT,
    DONE_MARKER,
    MAX_ATTEMPTS,
    MAX_DOLLARS,
    MAX_TURNS,
    MAX_WAIT,
    MODEL,
    PERMISSION_MODE,
    RESET_GRACE,
    SETTING_KEYS,
    WINDOW_PROBE_INTERVAL,
)
from claudeloop.domain.waiting import WaitPolicyConfig
from tests.config.sources import error_of, load


def test_nothing_configured_gives_the_built_in_defaults(project: Path, user_dir: Path) -> None:
    config = load(project, user_dir)
    assert config.profile_name == "default"
    assert config.profile is None
    assert config.get(PERMISSION_MODE) == "acceptEdits"
    assert config.get(MAX_TURNS) is None
    assert config.get(WINDOW_PROBE_INTERVAL) == WaitPolicyConfig().window_probe_interval
    assert config.get(DONE_MARKER) == "CLAUDELOOP_TASK_FULLY_COMPLETE"
    assert {s.origin.describe() for s in config.settings.values()} == {"default"}
    assert config.files == ()


def test_each_source_outranks_the_ones_below_it(project: Path, user_dir: Path) -> None:
    config = load(
        project,
        user_dir,
        user_text="max_turns = 1\nmax_dollars = 1.5\nmax_attempts = 1\nmax_wait = 60\n",
        project_text="max_turns = 2\nmax_dollars = 2\nmax_attempts = 2\n",
        env={"CLAUDELOOP_MAX_TURNS": "3", "CLAUDELOOP_MAX_DOLLARS": "3.5"},
        flags={"max_turns": 4, "max_dollars": None},
    )
    project_file = project / "claudeloop.toml"
    user_file = user_dir / "config.toml"
    assert config.get(MAX_TURNS) == 4
    assert config.settings["max_turns"].origin.describe() == "flag --max-turns"
    assert config.get(MAX_DOLLARS) == 3.5
    assert config.settings["max_dollars"].origin.describe() == "env CLAUDELOOP_MAX_DOLLARS"
    assert config.get(MAX_ATTEMPTS) == 2
    assert config.settings["max_attempts"].origin.describe() == str(project_file)
    assert config.get(MAX_WAIT) == timedelta(seconds=60)
    assert config.settings["max_wait"].origin.describe() == str(user_file)
    assert config.files == (project_file, user_file)


@pytest.mark.parametrize(
    ("written", "seconds"),
    [("90", 90), ('"90"', 90), ('"90s"', 90), ('"5m"', 300), ('"1h30m"', 5400), ('"2d"', 172800)],
)
def test_durations_are_seconds_or_the_flag_forms(
    project: Path, user_dir: Path, written: str, seconds: int
) -> None:
    config = load(project, user_dir, project_text=f"reset_grace = {written}\n")
    assert config.get(RESET_GRACE) == timedelta(seconds=seconds)


def test_environment_variables_are_read_as_text(project: Path, user_dir: Path) -> None:
    config = load(
        project,
        user_dir,
        env={
            "CLAUDELOOP_MAX_ATTEMPTS": "9",
            "CLAUDELOOP_MAX_WAIT": "8h",
            "CLAUDELOOP_PERMISSION_MODE": "plan",
            "CLAUDELOOP_CONTINUE_PROMPT": "Keep going.",
            "CLAUDELOOP_MAX_TURNS": "",  # empty is unset
        },
    )
    assert config.get(MAX_ATTEMPTS) == 9
    assert config.get(MAX_WAIT) == timedelta(hours=8)
    assert config.get(PERMISSION_MODE) == "plan"
    assert config.get(CONTINUE_PROMPT) == "Keep going."
    assert config.get(MAX_TURNS) is None


PROFILES = """
[profiles.local]
preset = "ollama"
model = "qwen3"

[profiles.big]
base_url = "http://gpu-box:8000"
model = "qwen3-235b"
"""


def test_a_selected_profiles_model_beats_the_files_model_but_not_a_flag(
    project: Path, user_dir: Path
) -> None:
    text = 'profile = "local"\nmodel = "claude-sonnet-4-5"\n' + PROFILES
    config = load(project, user_dir, project_text=text)
    assert config.get(MODEL) == "qwen3"
    assert config.settings["model"].origin.describe().startswith("[profiles.local] in ")
    flagged = load(project, user_dir, flags={"model": "qwen3-coder"})
    assert flagged.get(MODEL) == "qwen3-coder"
    from_env = load(project, user_dir, env={"CLAUDELOOP_MODEL": "qwen3-8b"})
    assert from_env.get(MODEL) == "qwen3-8b"


def test_the_profile_is_chosen_by_flag_env_or_file(project: Path, user_dir: Path) -> None:
    config = load(project, user_dir, project_text=PROFILES, env={"CLAUDELOOP_PROFILE": "big"})
    assert config.profile_name == "big"
    assert config.profile is not None
    assert config.profile.table.base_url == "http://gpu-box:8000"
    assert load(project, user_dir, flags={"profile": "local"}).profile_name == "local"


def test_a_projects_profile_replaces_the_users_table_of_that_name(
    project: Path, user_dir: Path
) -> None:
    config = load(
        project,
        user_dir,
        user_text='[profiles.local]\npreset = "ollama"\nmodel = "a"\nauth_token = "tok-123456"\n'
        '[profiles.mine]\npreset = "vllm"\nmodel = "m"\n',
        project_text='[profiles.local]\npreset = "lmstudio"\nmodel = "b"\n',
    )
    local = config.profiles["local"]
    assert local.table.preset == "lmstudio"
    assert local.table.auth_token is None  # not merged from the user's table
    assert local.source == project / "claudeloop.toml"
    assert config.profiles["mine"].source == user_dir / "config.toml"


def test_claudeloop_config_dir_moves_the_user_file(tmp_path: Path) -> None:
    assert user_config_dir({"CLAUDELOOP_CONFIG_DIR": str(tmp_path)}) == tmp_path
    assert user_config_dir({}).name == "claudeloop"


# -- errors -------------------------------------------------------------------------


def test_an_unknown_key_is_named_with_the_accepted_ones(project: Path, user_dir: Path) -> None:
    message = error_of(project, user_dir, project_text="max_turn = 5\n")
    assert message.startswith(f"{project / 'claudeloop.toml'}: unknown key max_turn; accepted: ")
    assert "max_turns" in message


def test_an_unknown_key_in_a_profile_lists_the_profile_keys(project: Path, user_dir: Path) -> None:
    message = error_of(
        project, user_dir, user_text='[profiles.x]\npreset = "ollama"\nmodel = "m"\nurl = "u"\n'
    )
    assert f"{user_dir / 'config.toml'}: unknown key profiles.x.url; accepted: preset" in message
    assert "base_url" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('max_turns = "5"', 'max_turns = "5": expected a whole number above 0'),
        ("max_turns = 0", "max_turns = 0: expected a whole number above 0"),
        ("max_turns = true", "max_turns = true: expected a whole number above 0"),
        ("max_dollars = -1", "max_dollars = -1: expected a number above 0"),
        ("max_dollars = inf", "max_dollars = inf: a number too large to hold"),
        ('max_wait = "5x"', 'max_wait = "5x": expected a duration above 0'),
        ("max_wait = 0", "max_wait = 0: expected a duration above 0"),
        ('max_wait = "400d"', 'max_wait = "400d": expected a duration above 0 and at most 365'),
        ("ready_ahead = -5", "ready_ahead = -5: expected 0 (off) or a duration above 0"),
        ('ready_ahead = "400d"', 'ready_ahead = "400d": expected 0 (off) or a duration'),
        ('permission_mode = "yolo"', 'permission_mode = "yolo": expected one of default, '),
        ('done_marker = "  "', 'done_marker = "  ": expected non-empty text'),
        ("model = 3", "model = 3: expected a model name"),
        ('profile = "no spaces"', 'profile = "no spaces": expected the name of a [profiles.NAME]'),
    ],
)
def test_a_wrong_value_names_file_key_value_and_what_is_accepted(
    project: Path, user_dir: Path, text: str, expected: str
) -> None:
    message = error_of(project, user_dir, project_text=text + "\n")
    assert message.startswith(f"{project / 'claudeloop.toml'}: {expected}")


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('preset = "olama"\nmodel = "m"', 'profiles.p.preset = "olama": expected one of ollama, '),
        ('base_url = "localhost:11434"\nmodel = "m"', 'profiles.p.base_url = "localhost:11434"'),
        ('preset = "ollama"', '[profiles.p]: preset "ollama" needs model = "NAME"'),
        ('base_url = "http://h:1"', "[profiles.p]: a profile with base_url needs model"),
        ('preset = "vllm"\nmodel = "m"\ncost = "free"', 'profiles.p.cost = "free": expected "rep'),
        ('preset = "vllm"\nmodel = "m"\ncontext_window = 0', "profiles.p.context_window = 0"),
        ('preset = "vllm"\nmodel = "m"\ndone_marker_fallback = "yes"', "done_marker_fallback"),
        ('preset = "vllm"\nmodel = "m"\nextra_env = { "A-B" = "1" }', "the name 'A-B' is not"),
        ('preset = "vllm"\nmodel = "m"\nextra_env = { A = 1 }', "profiles.p.extra_env.A = 1"),
        (
            'preset = "vllm"\nmodel = "m"\nauth_token = "t"\nauth_token_env = "T"',
            "[profiles.p]: set auth_token or auth_token_env, not both",
        ),
    ],
)
def test_a_wrong_profile_names_the_table_and_key(
    project: Path, user_dir: Path, table: str, expected: str
) -> None:
    message = error_of(project, user_dir, project_text=f"[profiles.p]\n{table}\n")
    assert message.startswith(f"{project / 'claudeloop.toml'}: "), message
    assert expected in message


def test_a_token_of_the_wrong_type_is_never_shown(project: Path, user_dir: Path) -> None:
    message = error_of(
        project, user_dir, project_text='[profiles.p]\npreset = "vllm"\nmodel = "m"\nauth_token=7\n'
    )
    assert "auth_token = ****" in message
    assert "7" not in message.split("auth_token")[1]


def test_default_is_not_a_profile_a_file_may_define(project: Path, user_dir: Path) -> None:
    message = error_of(project, user_dir, project_text='[profiles.default]\nmodel = "m"\n')
    assert "[profiles.default] is reserved" in message


def test_a_file_that_is_not_toml_says_where(project: Path, user_dir: Path) -> None:
    message = error_of(project, user_dir, user_text="max_turns = 3\nmodel = = 1\n")
    assert message == (
        f"{user_dir / 'config.toml'}: line 2, column 9: not valid TOML (invalid value)"
    )


def test_a_file_cut_off_says_its_end(project: Path, user_dir: Path) -> None:
    message = error_of(project, user_dir, user_text="max_turns = [1\n")
    assert message.startswith(f"{user_dir / 'config.toml'}: line 2, column 1: not valid TOML (")


def test_a_profile_nobody_defined_is_named_with_its_source(project: Path, user_dir: Path) -> None:
    message = error_of(project, user_dir, project_text=PROFILES, env={"CLAUDELOOP_PROFILE": "gpu"})
    assert message.startswith(
        "profile 'gpu' (from env CLAUDELOOP_PROFILE) is not defined; defined profiles: big, local"
    )


def test_a_bad_variable_is_named_with_its_value(project: Path, user_dir: Path) -> None:
    message = error_of(project, user_dir, env={"CLAUDELOOP_MAX_WAIT": "soon"})
    assert message.startswith('environment variable CLAUDELOOP_MAX_WAIT="soon": expected a dur')


def test_an_unknown_variable_is_refused_by_name_with_what_is_accepted(
    project: Path, user_dir: Path
) -> None:
    message = error_of(project, user_dir, env={"CLAUDELOOP_MAX_TURN": "5"})
    assert message.startswith(
        "environment variable CLAUDELOOP_MAX_TURN is unknown (did you mean "
        "CLAUDELOOP_MAX_TURNS?); a setting is CLAUDELOOP_ and its key in capitals"
    )
    assert "CLAUDELOOP_CLI_PATH, CLAUDELOOP_CONFIG_DIR, CLAUDELOOP_ENGINE" in message


def test_the_variables_that_are_no_setting_are_accepted(project: Path, user_dir: Path) -> None:
    env = {name: "x" for name in OTHER_VARIABLES if name != "CLAUDELOOP_CONFIG_DIR"}
    load(project, user_dir, env={**env, "CLAUDELOOP_MAX_TURNS": "4", "CLAUDELOOP_UNSET": ""})


# Where claudeloop or its tests read a CLAUDELOOP_* variable by name.
_READ = re.compile(
    r'(?:_VARIABLE\s*=\s*|environ(?:\.get)?\(\s*|environ\[\s*|setenv\(\s*)"(CLAUDELOOP_[A-Z_]+)"'
)


def test_every_variable_claudeloop_or_its_tests_read_is_accepted() -> None:
    root = Path(__file__).resolve().parents[2]
    read = {
        name
        for top in ("src", "tests", "bench")
        for path in (root / top).rglob("*.py")
        for name in _READ.findall(path.read_text(encoding="utf-8"))
    }
    settings = {f"CLAUDELOOP_{key.upper()}" for key in SETTING_KEYS}
    assert {"CLAUDELOOP_CLI_PATH", "CLAUDELOOP_ENGINE", "CLAUDELOOP_TEST_POSTGRES"} <= read
    assert read - settings - OTHER_VARIABLES == set()
