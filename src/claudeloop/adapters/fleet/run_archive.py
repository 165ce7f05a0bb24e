"""What of a run travels through the engine, so another machine can resume it: the
run's record (state.json and events.jsonl) and its Claude session's transcript.

The transcript is where Claude Code keeps it,
`$CLAUDE_CONFIG_DIR/projects/<the cwd, non-alphanumerics as '-'>/<session id>.jsonl`
(claude-code-facts), and a session resumes only from the same cwd and config
directory: a takeover writes it under its own.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
from collections.abc import Mapping
from pathlib import Path

from claudeloop.adapters.atomic_file import write_atomically
from claudeloop.adapters.claude_code.transcript import config_directory
from claudeloop.adapters.private_file import make_private_directory
from claudeloop.adapters.run_directory.codec import CorruptRecordError, record_from_json
from claudeloop.application.codec import Codec, DecodeError, Shape
from claudeloop.application.ports import RunSummary
from claudeloop.application.summary import run_summary
from claudeloop.domain.budget import BudgetLedger

RECORD_FILES = ("state.json", "events.jsonl")


def transcript_path(environ: Mapping[str, str], cwd: Path, session_id: str) -> Path:
    name = re.sub(r"[^A-Za-z0-9]", "-", str(cwd))
    return config_directory(environ) / "projects" / name / f"{session_id}.jsonl"


def fingerprint(paths: list[Path]) -> tuple[tuple[int, int] | None, ...]:
    """What changes when any of `paths` is written (size and modification time)."""
    marks: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            marks.append(None)
        else:
            marks.append((stat.st_mtime_ns, stat.st_size))
    return tuple(marks)


def read_state(run_directory: Path) -> dict[str, object] | None:
    try:
        data = json.loads((run_directory / "state.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def session_of(state: Mapping[str, object] | None) -> str | None:
    session = state.get("session_id") if state else None
    return session if isinstance(session, str) and session else None


def phase_of(state: Mapping[str, object] | None) -> str | None:
    inner = state.get("state") if state else None
    phase = inner.get("phase") if isinstance(inner, dict) else None
    return phase if isinstance(phase, str) else None


def ledger_of(state: Mapping[str, object] | None) -> BudgetLedger | None:
    """The counts of the record's ledger (None: not a record of this claudeloop's)."""
    inner = state.get("state") if state else None
    if not isinstance(inner, dict):
        return None
    turns, attempts, dollars = (inner.get(key) for key in ("turns", "attempts", "dollars"))
    if not (isinstance(turns, int) and isinstance(attempts, int)):
        return None
    if not isinstance(dollars, int | float):
        return None
    try:
        return BudgetLedger(turns=turns, attempts=attempts, dollars=float(dollars))
    except ValueError:  # negative counts
        return None


# A run's summary in the engine (its line in `status --engine`): plan progress only
# when the run has a plan, the next probe only while it waits; the counts a summary
# of before lacks are left out while unknown.
SUMMARY_CODEC = Codec(
    shapes={
        RunSummary: Shape(
            sparse=frozenset(
                {
                    "next_probe_at",
                    "plan_done",
                    "plan_total",
                    "sent",
                    "probes",
                    "probe_dollars",
                    "estimated_dollars",
                }
            )
        )
    }
)


def summary_of(state: Mapping[str, object] | None) -> str | None:
    """The summary of a run's state.json, as the engine keeps it (None: not a record
    this claudeloop reads; the overview then says it is unreadable)."""
    if not isinstance(state, dict):
        return None
    try:
        record = record_from_json(state)
    except (CorruptRecordError, ValueError):
        return None
    return json.dumps(SUMMARY_CODEC.encode(run_summary(record)), sort_keys=True)


def summary_in(text: str) -> RunSummary | None:
    """A summary the engine keeps, read (None: one this claudeloop cannot read)."""
    try:
        summary = SUMMARY_CODEC.decode(json.loads(text), RunSummary, "summary")
    except (DecodeError, ValueError):
        return None
    return summary if isinstance(summary, RunSummary) else None


def state_in(record: bytes) -> dict[str, object] | None:
    """The state.json of a packed record, read without writing it anywhere."""
    try:
        with tarfile.open(fileobj=io.BytesIO(record), mode="r:gz") as archive:
            content = archive.extractfile("state.json")
            data = json.loads(content.read()) if content is not None else None
    except (OSError, KeyError, ValueError, tarfile.TarError):
        return None
    return data if isinstance(data, dict) else None


def pack_record(run_directory: Path) -> bytes:
    """The run's record files, as one compressed archive."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name in RECORD_FILES:
            path = run_directory / name
            if path.is_file():
                archive.add(path, arcname=name)
    return buffer.getvalue()


def pack_files(files: Mapping[str, bytes]) -> bytes:
    """Record files given by name and content, as one compressed archive (what
    `pack_record` makes of them on disk)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(content)
            member.mode = 0o600
            archive.addfile(member, io.BytesIO(content))
    return buffer.getvalue()


def member_of(record: bytes, name: str) -> bytes | None:
    """One file of a packed record, read in memory; None when it has no such file."""
    try:
        with tarfile.open(fileobj=io.BytesIO(record), mode="r:gz") as archive:
            content = archive.extractfile(name)
            return content.read() if content is not None else None
    except (OSError, KeyError, tarfile.TarError):
        return None


def grown(base: bytes, chunks: list[tuple[int, bytes]]) -> bytes:
    """An append-only file: `base` (its first bytes) and the chunks appended since,
    each (the byte it starts at, its bytes), in order. A chunk that overlaps what is
    there adds only what lies past it; one past a gap ends it (nothing after a gap is
    the file's)."""
    data = bytearray(base)
    for byte, chunk in sorted(chunks):
        if byte > len(data):
            break
        data += chunk[len(data) - byte :]
    return bytes(data)


def grown_record(
    record: bytes | None, state: bytes | None, events: list[tuple[int, bytes]]
) -> bytes:
    """The record as the last store left it: the one stored whole, its state.json
    replaced by `state` (compressed, stored on its own since) and its events.jsonl
    grown by the chunks appended since."""
    files: dict[str, bytes] = {}
    if record is not None:
        for name in RECORD_FILES:
            content = member_of(record, name)
            if content is not None:
                files[name] = content
    if state is not None:
        files["state.json"] = gzip.decompress(state)
    files["events.jsonl"] = grown(files.get("events.jsonl", b""), events)
    return pack_files(files)


def grown_transcript(transcript: bytes | None, chunks: list[tuple[int, bytes]]) -> bytes:
    """The transcript stored whole (compressed), grown by the chunks appended since."""
    base = gzip.decompress(transcript) if transcript is not None else b""
    return gzip.compress(grown(base, chunks))


def unpack_record(data: bytes, run_directory: Path) -> None:
    """Write the record files of `data` into `run_directory`, replacing what is there
    (each file whole; only the names a record has, so an archive cannot write
    elsewhere)."""
    make_private_directory(run_directory)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for member in archive.getmembers():
            if member.name not in RECORD_FILES or not member.isfile():
                continue
            content = archive.extractfile(member)
            if content is not None:
                write_atomically(run_directory / member.name, content.read().decode())


def relocate(run_directory: Path, cwd: Path) -> Path | None:
    """Point the record at this machine's copy of the run's directory: its cwd, and
    its plan when the plan is in the run's directory. Returns the cwd it had."""
    state = read_state(run_directory)
    spec = state.get("spec") if state else None
    if state is None or not isinstance(spec, dict) or not isinstance(spec.get("cwd"), str):
        return None
    was = Path(spec["cwd"])
    plan = spec.get("plan_path")
    if isinstance(plan, str) and Path(plan).is_relative_to(was):
        spec["plan_path"] = str(cwd / Path(plan).relative_to(was))
    spec["cwd"] = str(cwd)
    write_atomically(run_directory / "state.json", json.dumps(state, indent=2, sort_keys=True))
    return was


def pack_transcript(path: Path) -> bytes | None:
    try:
        return gzip.compress(path.read_bytes())
    except OSError:
        return None


def unpack_transcript(data: bytes, path: Path, moved: tuple[Path, Path] | None = None) -> None:
    """Write the transcript at `path`. `moved` (the run's directory on the machine that
    wrote it, and here): the session's messages name files by absolute path (the
    environment it described, each tool call), so they are made to name this
    machine's copy; the model goes on in the directory it is in."""
    text = gzip.decompress(data).decode()
    if moved is not None and moved[0] != moved[1]:
        # JSON writes a path's slashes as they are: the same text in every line.
        text = text.replace(json.dumps(str(moved[0]))[1:-1], json.dumps(str(moved[1]))[1:-1])
    make_private_directory(path.parent)
    write_atomically(path, text)
