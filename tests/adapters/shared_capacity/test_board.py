"""The file board: one record per account, replaced atomically under a lock, never fatal.

What every board does is in test_board_contract.py; here is what only a file can get wrong."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from claudeloop.adapters.shared_capacity.board import (
    BoardBusy,
    FileCapacityBoard,
    account_key,
    capacity_directory,
    sighting_from_json,
)
from tests.adapters.shared_capacity.test_board_contract import CLOSED, NOW, TOKEN, publish


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        '{"version": 1, "seq": 3',  # cut short mid-write
        "[]",
        '{"version": 99, "seq": 1}',
        '{"version": 1, "seq": 1, "at": "2026-11-30T10:00:00", "pid": 1, "writer": "w", '
        '"source": "turn", "standing": "closed", "signals": {}}',  # a naive instant
        '{"version": 1, "seq": 1, "at": "2026-11-30T10:00:00+00:00", "pid": 1, "writer": "w",'
        ' "source": "gossip", "standing": "closed", "signals": {}}',
        '{"version": 1, "seq": "x", "at": "2026-11-30T10:00:00+00:00", "pid": 1, "writer": "w",'
        ' "source": "turn", "standing": "closed", "signals": {}}',
    ],
)
def test_a_corrupt_record_reads_as_none_and_the_next_publication_replaces_it(
    tmp_path: Path, text: str
) -> None:
    board = FileCapacityBoard(tmp_path, "acct")
    board.path.write_text(text)
    assert board.read() is None
    assert publish(board) == 1
    assert board.read() is not None


def test_undecodable_bytes_read_as_none(tmp_path: Path) -> None:
    board = FileCapacityBoard(tmp_path, "acct")
    board.path.write_bytes(b"\xff\xfe\x00garbage")
    assert board.read() is None


def test_a_write_that_fails_leaves_the_old_record_whole_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = FileCapacityBoard(tmp_path, "acct")
    publish(board)
    before = board.path.read_text()

    def crash(_source: str, _target: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        publish(board)
    assert board.path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["acct.json", "acct.lock"]


def test_the_record_holds_no_credential_and_its_name_is_a_short_hash(tmp_path: Path) -> None:
    environment = {"CLAUDE_CODE_OAUTH_TOKEN": TOKEN, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    key = account_key(environment, "claude-sonnet-4-5")
    assert len(key) == 16
    assert int(key, 16) >= 0
    assert TOKEN not in key
    board = FileCapacityBoard(tmp_path, key)
    publish(board)
    for path in tmp_path.iterdir():
        assert TOKEN not in path.name
        assert TOKEN not in path.read_text()


def test_the_account_is_the_base_url_the_credential_and_the_model() -> None:
    base = {"ANTHROPIC_API_KEY": "key-a"}
    key = account_key(base, None)
    assert account_key(dict(base), None) == key
    assert account_key({**base, "ANTHROPIC_BASE_URL": "https://api.anthropic.com/"}, None) == key
    assert account_key({"ANTHROPIC_API_KEY": "key-b"}, None) != key
    assert account_key({**base, "ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"}, None) != key
    assert account_key(base, "claude-opus-4-1") != key
    assert account_key({**base, "ANTHROPIC_MODEL": "claude-opus-4-1"}, None) == account_key(
        base, "claude-opus-4-1"
    )
    # A variable blanked (as a profile hides an inherited one) is not a credential.
    assert account_key({**base, "CLAUDE_CODE_OAUTH_TOKEN": ""}, None) == key
    assert account_key({**base, "CLAUDE_CODE_USE_BEDROCK": "1"}, None) != key


def test_a_foundry_account_is_not_the_anthropic_account_of_the_same_key() -> None:
    base = {"ANTHROPIC_API_KEY": "key-a"}
    assert account_key({**base, "CLAUDE_CODE_USE_FOUNDRY": "1"}, None) != account_key(base, None)


def test_the_account_key_is_the_one_earlier_versions_wrote() -> None:
    # Loops of an older claudeloop on the same account keep sharing the same record.
    every = {
        "ANTHROPIC_API_KEY": "key-a",
        "CLAUDE_CODE_OAUTH_TOKEN": "tok",
        "ANTHROPIC_AUTH_TOKEN": "auth",
        "CLAUDE_CODE_USE_VERTEX": "1",
        "CLAUDE_CODE_USE_BEDROCK": "1",
    }
    assert account_key(every, "claude-sonnet-4-5") == "da26d2eb9fccf4d8"
    assert account_key({"HOME": "/home/ada"}, "claude-sonnet-4-5") == "6f6c0b7cb84a95fa"


def test_without_credentials_the_account_is_the_login_the_cli_keeps() -> None:
    one = account_key({"HOME": "/home/ada"}, None)
    assert account_key({"HOME": "/home/ada"}, None) == one
    assert account_key({"HOME": "/home/bob"}, None) != one
    assert account_key({"HOME": "/home/ada", "CLAUDE_CONFIG_DIR": "/elsewhere"}, None) != one


def test_the_directory_is_the_state_dir_override_or_the_platforms(tmp_path: Path) -> None:
    assert capacity_directory({"CLAUDELOOP_STATE_DIR": str(tmp_path)}) == tmp_path / "capacity"
    assert capacity_directory({}).name == "capacity"
    assert "claudeloop" in str(capacity_directory({}))


def test_a_record_of_another_version_is_not_read() -> None:
    assert sighting_from_json('{"version": 2}') is None


def test_a_writer_gives_up_on_a_lock_another_process_keeps(tmp_path: Path) -> None:
    board = FileCapacityBoard(tmp_path, "acct")
    publish(board)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(tmp_path / "acct.lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(BoardBusy, match=r"acct\.lock: held by another process"):
            board.publish(
                signals=CLOSED, standing="closed", source="turn", writer="w", now=NOW, patience=0
            )
    finally:
        holder.kill()
        holder.wait(10)
    sighting = board.read()
    assert sighting is not None
    assert sighting.seq == 1
    # Its holder gone, the lock is the next writer's.
    assert publish(board) == 2


_HOLD_LOCK = """
import fcntl, os, sys, time
descriptor = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o600)
fcntl.flock(descriptor, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def test_a_record_written_before_records_named_their_run_reads_without_one(
    tmp_path: Path,
) -> None:
    # An older claudeloop on the same machine wrote it: no run id, no host. It was
    # written here, so whether its process runs can still be told.
    pid = os.getpid()
    text = json.dumps(
        {
            "version": 1,
            "seq": 4,
            "at": "2026-11-30T10:00:00+00:00",
            "pid": pid,
            "writer": f"{pid}:abcd",
            "source": "turn",
            "standing": "closed",
            "signals": {},
        }
    )
    board = FileCapacityBoard(tmp_path / "capacity", "acct")
    board.directory.mkdir(parents=True)
    board.path.write_text(text)
    read = board.read()
    assert read is not None
    assert (read.seq, read.run_id, read.host) == (4, None, None)
    assert board.writer_alive(read) is True
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert board.writer_alive(replace(read, pid=int(gone.stdout))) is False


def test_a_record_naming_its_run_is_still_read_by_a_reader_of_before(tmp_path: Path) -> None:
    # The run id and host are keys of version 1, which an older reader skips.
    board = FileCapacityBoard(tmp_path / "capacity", "acct")
    publish(board)
    data = json.loads(board.path.read_text())
    assert data["version"] == 1
    assert set(data) >= {"seq", "at", "pid", "writer", "source", "standing", "signals"}
    assert data["host"] == socket.gethostname()


def test_the_overage_signals_survive_the_board_and_an_older_record_has_none() -> None:
    from datetime import UTC, datetime

    from claudeloop.adapters.shared_capacity.record import signals_from_dict, signals_to_dict
    from claudeloop.domain.signals import TurnSignals

    until = datetime(2026, 12, 31, 0, 0, tzinfo=UTC)
    signals = TurnSignals(
        rate_limit_type="overage", overage_disabled_reason="org_level_disabled_until",
        overage_resets_at=until, overage_in_use=True,
    )  # fmt: skip
    data = json.loads(json.dumps(signals_to_dict(signals)))
    assert signals_from_dict(data) == signals
    del data["overage_resets_at"], data["overage_in_use"]
    older = signals_from_dict(data)
    assert older.overage_resets_at is None
    assert older.overage_in_use is False


def test_a_window_claudeloop_does_not_know_is_on_the_board_by_the_services_name() -> None:
    """An older claudeloop on the account reads what this one writes, and the other way
    round: the window is the name the service gave it."""
    from claudeloop.adapters.shared_capacity.record import signals_from_dict, signals_to_dict
    from claudeloop.domain.capacity import UnknownWindow
    from claudeloop.domain.signals import TurnSignals, WindowUsage

    cowork = UnknownWindow("seven_day_cowork")
    signals = TurnSignals(
        rate_limit_status="rejected", rate_limit_type=cowork,
        windows=(WindowUsage(cowork, 1.0), WindowUsage("five_hour", 0.5)),
    )  # fmt: skip
    data = json.loads(json.dumps(signals_to_dict(signals)))
    assert data["rate_limit_type"] == "seven_day_cowork"
    assert [window["window"] for window in data["windows"]] == ["seven_day_cowork", "five_hour"]
    assert signals_from_dict(data) == signals


def test_a_grace_period_and_a_daily_cap_survive_the_board_so_other_runs_read_them_alike() -> None:
    from datetime import UTC, datetime

    from claudeloop.adapters.shared_capacity.record import signals_from_dict, signals_to_dict
    from claudeloop.domain.capacity import Available, WindowExhausted
    from claudeloop.domain.classify import classify
    from claudeloop.domain.signals import TurnSignals

    reset = datetime(2026, 12, 2, 20, 0, tzinfo=UTC)
    grace = TurnSignals(
        rate_limit_status="rejected", rate_limit_type="five_hour", resets_at=reset,
        utilization=1.1, grace_active=True,
    )  # fmt: skip
    capped = TurnSignals(
        rate_limit_status="rejected", rate_limit_type="overage", api_error_status=429,
        assistant_error="rate_limit", is_error=True, daily_cap_paused=True,
        overage_disabled_reason="org_level_disabled",
    )  # fmt: skip
    for signals, capacity in ((grace, Available()), (capped, WindowExhausted("daily_cap"))):
        data = json.loads(json.dumps(signals_to_dict(signals)))
        shared = signals_from_dict(data)
        assert shared == replace(signals, result_text=shared.result_text)
        assert classify(shared) == capacity
        for flag in ("grace_active", "daily_cap_paused"):  # written only when set
            data.pop(flag, None)
        older = signals_from_dict(data)
        assert not older.grace_active
        assert not older.daily_cap_paused
