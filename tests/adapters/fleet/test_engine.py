"""The engine URL: the SQLite default in the state directory, PostgreSQL when named,
and a bad URL refused in one line that never shows its password."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from claudeloop.adapters.fleet.engine import (
    Engine,
    engine_from,
    executor_id,
    masked,
    parse_engine,
)
from claudeloop.application.errors import BadEngine


def test_without_an_engine_the_fleet_is_a_sqlite_file_in_the_state_directory(
    tmp_path: Path,
) -> None:
    engine = engine_from(None, {"CLAUDELOOP_STATE_DIR": str(tmp_path)})
    assert engine == Engine("sqlite", f"sqlite:///{tmp_path / 'fleet.sqlite'}")
    assert engine.sqlite_file == tmp_path / "fleet.sqlite"


def test_the_option_wins_over_the_variable() -> None:
    environ = {"CLAUDELOOP_ENGINE": "postgresql://a@env-host/fleet"}
    assert engine_from(None, environ).url == "postgresql://a@env-host/fleet"
    chosen = engine_from("postgresql://a@flag-host/fleet", environ)
    assert chosen == Engine("postgresql", "postgresql://a@flag-host/fleet")
    assert chosen.sqlite_file is None


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("postgresql://u:p@db:5433/fleet", "postgresql://u:p@db:5433/fleet"),
        ("postgres://u@db/fleet", "postgresql://u@db/fleet"),
        (
            "postgresql+psycopg://u@db/fleet?sslmode=require",
            "postgresql://u@db/fleet?sslmode=require",
        ),
        (
            "sqlite:////var/lib/claudeloop/fleet.sqlite",
            "sqlite:////var/lib/claudeloop/fleet.sqlite",
        ),
    ],
)
def test_accepted_engines(text: str, url: str) -> None:
    assert parse_engine(text, "--engine").url == url


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("mysql://u:hunter2@db/fleet", "is not an engine URL"),
        ("db.internal:5432", "is not an engine URL"),
        ("postgresql:///fleet", "names no host"),
        ("postgresql://u:hunter2@db", "names no database"),
        ("postgresql://u:hunter2@db/a/b", "names no database"),
        ("postgresql://u:hunter2@db:port/fleet", "is not a URL"),
        ("sqlite://fleet.sqlite", "three slashes"),
        ("sqlite:///", "three slashes"),
    ],
)
def test_a_bad_engine_is_one_line_naming_where_and_what_is_accepted(text: str, said: str) -> None:
    with pytest.raises(BadEngine) as refused:
        parse_engine(text, "CLAUDELOOP_ENGINE")
    message = str(refused.value)
    assert said in message
    assert message.startswith("CLAUDELOOP_ENGINE ")
    assert "postgresql://USER" in message
    assert "\n" not in message
    assert "hunter2" not in message


def test_a_password_is_masked_when_shown() -> None:
    engine = parse_engine("postgresql://fleet:s3cret@db:5432/claudeloop", "--engine")
    assert engine.masked_url == "postgresql://fleet:***@db:5432/claudeloop"
    assert masked("postgresql://fleet@db/claudeloop") == "postgresql://fleet@db/claudeloop"


def test_the_worker_keeps_its_name_on_this_machine_and_state_directory(tmp_path: Path) -> None:
    here = {"CLAUDELOOP_STATE_DIR": str(tmp_path / "a")}
    elsewhere = {"CLAUDELOOP_STATE_DIR": str(tmp_path / "b")}
    assert executor_id(here) == executor_id(dict(here))
    assert executor_id(here) != executor_id(elsewhere)
    assert executor_id(here, "second") == f"{executor_id(here)}-second"


def test_every_connection_gives_up_on_a_silent_server_unless_the_url_says_otherwise() -> None:
    given = parse_engine("postgresql://a:s3cret@db/fleet?options=-csearch_path%3Dx", "test")
    assert given.connect_url == (
        "postgresql://a:s3cret@db/fleet?options=-csearch_path%3Dx"
        "&connect_timeout=5&tcp_user_timeout=10000&application_name=claudeloop"
    )
    assert given.masked_url == "postgresql://a:***@db/fleet?options=-csearch_path%3Dx"
    own = parse_engine("postgresql://a@db/fleet?connect_timeout=30&application_name=x", "test")
    assert own.connect_url == (
        "postgresql://a@db/fleet?connect_timeout=30&application_name=x&tcp_user_timeout=10000"
    )
    worker = replace(own, application="claudeloop worker")
    assert worker.connect_url.endswith("application_name=x&tcp_user_timeout=10000")
    named = replace(given, application="claudeloop worker")
    assert named.connect_url.endswith("&application_name=claudeloop%20worker")
    sqlite = parse_engine("sqlite:////tmp/fleet.sqlite", "test")
    assert sqlite.connect_url == sqlite.url
