"""A run's record and transcript, moved to another machine's checkout: the same files,
pointing at the new directory, and nothing written outside the run's directory."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from claudeloop.adapters.fleet.run_archive import (
    ledger_of,
    pack_record,
    pack_transcript,
    phase_of,
    read_state,
    relocate,
    session_of,
    state_in,
    transcript_path,
    unpack_record,
    unpack_transcript,
)
from claudeloop.domain.budget import BudgetLedger


def record(run: Path, cwd: Path) -> None:
    run.mkdir(parents=True)
    state = {
        "session_id": "s-1",
        "spec": {"cwd": str(cwd), "plan_path": str(cwd / "PLAN.md")},
        "state": {"phase": "waiting"},
    }
    (run / "state.json").write_text(json.dumps(state))
    (run / "events.jsonl").write_text('{"type": "run.started"}\n')
    (run / "driver.pid").write_text("123")  # the machine's own: it does not travel


def test_the_record_moves_whole_and_names_the_new_checkout(tmp_path: Path) -> None:
    old, new = tmp_path / "a" / "app", tmp_path / "b" / "app"
    record(old / ".claudeloop" / "runs" / "r1", old)
    moved = new / ".claudeloop" / "runs" / "r1"
    unpack_record(pack_record(old / ".claudeloop" / "runs" / "r1"), moved)
    assert sorted(p.name for p in moved.iterdir()) == ["events.jsonl", "state.json"]
    assert relocate(moved, new) == old
    state = read_state(moved)
    assert state is not None
    assert state["spec"] == {"cwd": str(new), "plan_path": str(new / "PLAN.md")}
    assert (session_of(state), phase_of(state)) == ("s-1", "waiting")
    assert (moved / "events.jsonl").read_text() == '{"type": "run.started"}\n'


def test_an_archive_cannot_write_outside_the_run_directory(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name in ("../escaped", "state.json"):
            data = b"{}"
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    unpack_record(buffer.getvalue(), tmp_path / "run")
    assert not (tmp_path / "escaped").exists()
    assert (tmp_path / "run" / "state.json").read_text() == "{}"


def test_the_transcript_goes_where_the_cli_looks_and_names_the_new_checkout(
    tmp_path: Path,
) -> None:
    old, new = Path("/a/work/app"), Path("/b/work/app")
    environ = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    source = tmp_path / "old.jsonl"
    source.write_text(json.dumps({"cwd": str(old), "file_path": f"{old}/step1.txt"}) + "\n")
    data = pack_transcript(source)
    assert data is not None
    target = transcript_path(environ, new, "s-1")
    assert target == tmp_path / "claude" / "projects" / "-b-work-app" / "s-1.jsonl"
    unpack_transcript(data, target, (old, new))
    assert json.loads(target.read_text()) == {"cwd": str(new), "file_path": f"{new}/step1.txt"}
    assert pack_transcript(tmp_path / "none.jsonl") is None


def test_a_packed_records_ledger_is_read_without_unpacking_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    counts = {"turns": 2, "attempts": 3, "dollars": 0.5}
    (run / "state.json").write_text(json.dumps({"state": counts}))
    assert ledger_of(state_in(pack_record(run))) == BudgetLedger(turns=2, attempts=3, dollars=0.5)
    assert state_in(b"not an archive") is None


@pytest.mark.parametrize(
    "state",
    [None, {}, {"state": []}, {"state": {"turns": "2", "attempts": 3, "dollars": 0.5}},
     {"state": {"turns": 2, "attempts": 3, "dollars": None}},
     {"state": {"turns": -1, "attempts": 3, "dollars": 0.5}}],
)  # fmt: skip
def test_a_record_without_a_ledger_of_counts_has_none(state: dict[str, object] | None) -> None:
    assert ledger_of(state) is None
