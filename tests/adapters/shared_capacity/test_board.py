"""The board: one record per account, replaced atomically under a lock, never fatal."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from claudeloop.adapters.shared_capacity.board import (
    BoardBusy,
    CapacityBoard,
    account_key,
    capacity_directory,
    sighting_from_json,
)
from claudeloop.domain.signals import TurnSignals, WindowUsage

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
TOKEN = "sk-ant-oat01-very-secret-token-value"
CLOSED = TurnSignals(
    rate_limit_status="rejected",
    rate_limit_type="five_hour",
    resets_at=NOW + timedelta(hours=2),
    utilization=1.0,
    api_error_status=429,
    assistant_error="rate_limit",
    result_text="API Error: 429 rate limited\nsecond line is the model's business",
    is_error=True,
    windows=(WindowUsage("five_hour", 1.0, NOW + timedelta(hours=2), "rejected"),),
)


def publish(board: CapacityBoard, signals: TurnSignals = CLOSED, writer: str = "w") -> int:
    written = board.publish(
        signals=signals, standing="closed", source="turn", writer=writer, now=NOW
    )
    assert written is not None
    return written.seq


def test_no_record_reads_as_none(tmp_path: Path) -> None:
    assert CapacityBoard(tmp_path / "capacity", "acct").read() is None


def test_a_record_reads_back_with_its_signals_first_line_only(tmp_path: Path) -> None:
    board = CapacityBoard(tmp_path / "capacity", "acct")
    assert publish(board) == 1
    sighting = board.read()
    assert sighting is not None
    assert (sighting.seq, sighting.at, sighting.pid, sighting.writer) == (1, NOW, os.getpid(), "w")
    assert (sighting.source, sighting.standing) == ("turn", "closed")
    assert sighting.signals.result_text == "API Error: 429 rate limited"
    assert sighting.signals == replace(CLOSED, result_text="API Error: 429 rate limited")


def test_each_publication_takes_the_next_sequence_number(tmp_path: Path) -> None:
    board = CapacityBoard(tmp_path, "acct")
    assert [publish(board) for _ in range(3)] == [1, 2, 3]


def test_unless_keeps_the_current_record(tmp_path: Path) -> None:
    board = CapacityBoard(tmp_path, "acct")
    publish(board)
    kept = board.publish(
        signals=TurnSignals(),
        standing="open",
        source="turn",
        writer="other",
        now=NOW,
        unless=lambda current: current is not None and current.standing == "closed",
    )
    assert kept is None
    current = board.read()
    assert current is not None
    assert (current.seq, current.standing) == (1, "closed")


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
    board = CapacityBoard(tmp_path, "acct")
    board.path.write_text(text)
    assert board.read() is None
    assert publish(board) == 1
    assert board.read() is not None


def test_undecodable_bytes_read_as_none(tmp_path: Path) -> None:
    board = CapacityBoard(tmp_path, "acct")
    board.path.write_bytes(b"\xff\xfe\x00garbage")
    assert board.read() is None


def test_a_write_that_fails_leaves_the_old_record_whole_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = CapacityBoard(tmp_path, "acct")
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
    board = CapacityBoard(tmp_path, key)
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


def test_without_credentials_the_account_is_the_login_the_cli_keeps() -> None:
    one = account_key({"HOME": "/home/ada"}, None)
    assert account_key({"HOME": "/home/ada"}, None) == one
    assert account_key({"HOME": "/home/bob"}, None) != one
    assert account_key({"HOME": "/home/ada", "CLAUDE_CONFIG_DIR": "/elsewhere"}, None) != one


def test_the_directory_is_the_state_dir_override_or_the_platforms(tmp_path: Path) -> None:
    assert capacity_directory({"CLAUDELOOP_STATE_DIR": str(tmp_path)}) == tmp_path / "capacity"
    assert capacity_directory({}).name == "capacity"
    assert "claudeloop" in str(capacity_directory({}))


def test_the_probe_lock_is_held_by_one_holder_at_a_time(tmp_path: Path) -> None:
    board = CapacityBoard(tmp_path / "capacity", "acct")
    other = CapacityBoard(tmp_path / "capacity", "acct")
    first = board.try_probe_lock()
    assert first is not None
    assert other.try_probe_lock() is None
    assert board.try_probe_lock() is None
    first.release()
    first.release()  # twice is harmless
    second = other.try_probe_lock()
    assert second is not None
    second.release()


def _hold_probe_lock(directory: str, ready: multiprocessing.synchronize.Event) -> None:
    lock = CapacityBoard(Path(directory), "acct").try_probe_lock()
    assert lock is not None
    ready.set()
    signal.pause()


def test_a_dead_holders_probe_lock_is_free(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    holder = context.Process(target=_hold_probe_lock, args=(str(tmp_path), ready))
    holder.start()
    try:
        assert ready.wait(10)
        assert CapacityBoard(tmp_path, "acct").try_probe_lock() is None
    finally:
        holder.kill()
        holder.join(10)
    lock = CapacityBoard(tmp_path, "acct").try_probe_lock()
    assert lock is not None
    lock.release()


def _publish_many(directory: str, writer: str, count: int, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    board = CapacityBoard(Path(directory), "acct")
    seqs = []
    for _ in range(count):
        written = board.publish(
            signals=CLOSED, standing="closed", source="probe", writer=writer, now=NOW
        )
        assert written is not None
        seqs.append(written.seq)
    results.put(seqs)


def test_two_processes_publishing_at_once_lose_no_update(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    results: multiprocessing.Queue = context.Queue()  # type: ignore[type-arg]
    count = 60
    workers = [
        context.Process(target=_publish_many, args=(str(tmp_path), name, count, results))
        for name in ("a", "b")
    ]
    for worker in workers:
        worker.start()
    seqs = results.get(timeout=30) + results.get(timeout=30)
    for worker in workers:
        worker.join(10)
        assert worker.exitcode == 0
    # Under the lock every publication read its predecessor: no number twice, none lost.
    assert sorted(seqs) == list(range(1, 2 * count + 1))
    final = CapacityBoard(tmp_path, "acct").read()
    assert final is not None
    assert final.seq == 2 * count
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_record_of_another_version_is_not_read() -> None:
    assert sighting_from_json('{"version": 2}') is None


def test_a_successs_result_text_is_not_kept(tmp_path: Path) -> None:
    board = CapacityBoard(tmp_path, "acct")
    board.publish(
        signals=TurnSignals(result_text="the model's work, which is no one else's business"),
        standing="open",
        source="turn",
        writer="w",
        now=NOW,
    )
    sighting = board.read()
    assert sighting is not None
    assert sighting.signals.result_text == ""


def test_a_writer_gives_up_on_a_lock_another_process_keeps(tmp_path: Path) -> None:
    board = CapacityBoard(tmp_path, "acct")
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
