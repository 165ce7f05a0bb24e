"""The `RunIndex` port on the user state directory: `runs/` under it holds one small
JSON file per run a driver on this machine registered, named by the run's id and a hash
of its directory. One file per run, each replaced atomically: runs registering at once
never meet, and a file a crash left half-written is one unreadable entry, left out."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from claudeloop.adapters.atomic_file import write_atomically
from claudeloop.adapters.private_file import make_private_directory
from claudeloop.adapters.shared_capacity.board import STATE_DIR_VARIABLE
from claudeloop.application.ports import IndexedRun
from claudeloop.application.records import RunRecord


def state_directory(environ: Mapping[str, str]) -> Path:
    """CLAUDELOOP_STATE_DIR, else the platform's user state directory of claudeloop."""
    override = environ.get(STATE_DIR_VARIABLE)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_state_dir("claudeloop"))


class RunIndexDirectory:
    """The machine's index of runs: a directory of one entry per run."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        # Each entry as last read, by its file's inode and time: a page listing a
        # thousand runs reads only the entries written since it last looked.
        self._read: dict[str, tuple[tuple[int, int], IndexedRun | None]] = {}

    @classmethod
    def of_environment(cls, environ: Mapping[str, str] = os.environ) -> RunIndexDirectory:
        return cls(state_directory(environ) / "runs")

    def register(self, run: IndexedRun) -> None:
        make_private_directory(self.directory)
        entry = {
            "run_id": run.run_id,
            "directory": str(run.directory),
            "cwd": str(run.cwd),
            "account": run.account,
            "host": run.host,
            "registered_at": run.registered_at.isoformat(),
        }
        write_atomically(self.directory / f"{run.key}.json", json.dumps(entry, sort_keys=True))

    def forget(self, run_id: str, directory: Path) -> None:
        """The entry of the run in `directory` taken out: a run whose folder was removed
        on purpose (a rehearsal without --keep) is no run to list as gone."""
        key = IndexedRun(run_id, directory, directory, None, "", datetime.min).key
        (self.directory / f"{key}.json").unlink(missing_ok=True)

    def runs(self) -> list[IndexedRun]:
        try:
            files = [item for item in os.scandir(self.directory) if item.name.endswith(".json")]
        except OSError:
            return []
        found: list[IndexedRun] = []
        for item in files:
            try:
                seen = item.stat()
            except OSError:
                continue
            version = (seen.st_ino, seen.st_mtime_ns)
            cached = self._read.get(item.name)
            if cached is None or cached[0] != version:
                cached = self._read[item.name] = (version, _entry(Path(item.path)))
            if cached[1] is not None:
                found.append(cached[1])
        return sorted(found, key=lambda run: (run.registered_at, run.run_id), reverse=True)

    def present(self, run: IndexedRun) -> bool:
        return run.directory.is_dir()


def _entry(path: Path) -> IndexedRun | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        account = data.get("account")
        return IndexedRun(
            run_id=str(data["run_id"]),
            directory=Path(data["directory"]),
            cwd=Path(data["cwd"]),
            account=None if account is None else str(account),
            host=str(data["host"]),
            registered_at=datetime.fromisoformat(data["registered_at"]),
        )
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return None


def register_run(directory: Path, record: RunRecord, *, account: str | None) -> None:
    """The run in `directory` into the machine's index of runs (`runs --all`, the
    dashboard), with the account whose capacity board it shares (None: none); an index
    that cannot be written costs the run nothing."""
    from claudeloop.adapters.shared_capacity.record import this_host

    entry = IndexedRun(
        run_id=record.run_id,
        directory=directory.absolute(),
        cwd=record.spec.cwd.absolute(),
        account=account,
        host=this_host(),
        registered_at=record.started_at,
    )
    with contextlib.suppress(OSError):
        RunIndexDirectory.of_environment().register(entry)


def unregister_run(run_id: str, directory: Path) -> None:
    """The run out of the machine's index again, its folder removed on purpose."""
    with contextlib.suppress(OSError):
        RunIndexDirectory.of_environment().forget(run_id, directory.absolute())
