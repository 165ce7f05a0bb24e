"""`notify` and `notify_on` from every source, and one-line errors that keep the URLs'
secrets to themselves."""

from __future__ import annotations

from pathlib import Path

from claudeloop.application.settings import NOTIFY, NOTIFY_KINDS, NOTIFY_ON
from tests.config.sources import error_of, load


def test_by_default_nothing_is_notified_and_every_kind_would_be(
    project: Path, user_dir: Path
) -> None:
    config = load(project, user_dir)
    assert config.get(NOTIFY) is None
    assert config.get(NOTIFY_ON) == list(NOTIFY_KINDS)


def test_a_file_lists_urls_and_kinds(project: Path, user_dir: Path) -> None:
    config = load(
        project,
        user_dir,
        user_text='notify = ["ntfy://ntfy.sh/me", "json://127.0.0.1:8080/hook"]\n'
        'notify_on = ["done", "credits"]\n',
    )
    assert config.get(NOTIFY) == ["ntfy://ntfy.sh/me", "json://127.0.0.1:8080/hook"]
    assert config.get(NOTIFY_ON) == ["done", "credits"]
    assert config.settings["notify"].origin.where == str(user_dir / "config.toml")


def test_the_variable_takes_commas_or_blanks_and_ranks_over_the_files(
    project: Path, user_dir: Path
) -> None:
    in_file = 'notify = ["ntfy://ntfy.sh/project"]\n'
    for text in ("json://a.example/x,ntfy://ntfy.sh/me", "json://a.example/x  ntfy://ntfy.sh/me"):
        config = load(project, user_dir, env={"CLAUDELOOP_NOTIFY": text}, project_text=in_file)
        assert config.get(NOTIFY) == ["json://a.example/x", "ntfy://ntfy.sh/me"]
        assert config.settings["notify"].origin.describe() == "env CLAUDELOOP_NOTIFY"
    on = load(project, user_dir, env={"CLAUDELOOP_NOTIFY_ON": "done, failed"})
    assert on.get(NOTIFY_ON) == ["done", "failed"]


def test_the_flag_ranks_over_everything(project: Path, user_dir: Path) -> None:
    config = load(
        project,
        user_dir,
        flags={"notify": ["json://127.0.0.1:9/flag"]},
        env={"CLAUDELOOP_NOTIFY": "ntfy://ntfy.sh/env"},
    )
    assert config.get(NOTIFY) == ["json://127.0.0.1:9/flag"]
    assert config.settings["notify"].origin.describe() == "flag --notify"


def test_a_project_can_silence_the_users_notifications(project: Path, user_dir: Path) -> None:
    user_text = 'notify = ["ntfy://ntfy.sh/me"]\n'
    config = load(project, user_dir, user_text=user_text, project_text="notify = []\n")
    assert config.get(NOTIFY) == []


def test_a_bad_url_in_a_file_names_the_file_the_key_and_the_masked_value(
    project: Path, user_dir: Path
) -> None:
    message = error_of(
        project,
        user_dir,
        project_text='notify = ["ntfy://ntfy.sh/ok", "tgram//123456:SECRETTOKEN/42"]\n',
    )
    assert str(project / "claudeloop.toml") in message
    assert "notify.1" in message
    assert '"tgram/****"' in message
    assert "SECRETTOKEN" not in message
    assert "scheme://" in message


def test_a_bad_url_in_the_variable_is_named_without_its_secrets(
    project: Path, user_dir: Path
) -> None:
    message = error_of(
        project, user_dir, env={"CLAUDELOOP_NOTIFY": "ntfy://ntfy.sh/ok,discord:/1234/SECRETTOKEN"}
    )
    assert "CLAUDELOOP_NOTIFY" in message
    assert "SECRETTOKEN" not in message
    assert "discord:****" in message


def test_an_unknown_kind_lists_the_known_ones(project: Path, user_dir: Path) -> None:
    message = error_of(project, user_dir, project_text='notify_on = ["done", "always"]\n')
    assert "notify_on.1" in message
    assert '"always"' in message
    assert "done, blocked, failed, wait, credits" in message


def test_a_single_url_where_a_list_belongs_is_read_as_one(project: Path, user_dir: Path) -> None:
    config = load(project, user_dir, project_text='notify = "ntfy://ntfy.sh/me"\n')
    assert config.get(NOTIFY) == ["ntfy://ntfy.sh/me"]
    message = error_of(project, user_dir, project_text="notify = 5\n")
    assert "notify = 5" in message
