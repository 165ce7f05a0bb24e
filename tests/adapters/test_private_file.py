"""What claudeloop makes for itself is owner-only whatever the umask: each directory on
the way 0700, each file 0600."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from claudeloop.adapters.fleet.engine import parse_engine
from claudeloop.adapters.fleet.lease_file import write_lease
from claudeloop.adapters.fleet.queue import init_schema
from claudeloop.adapters.private_file import make_private_directory


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    was = os.umask(0o022)  # what most users have: files readable by all
    yield
    os.umask(was)


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_every_directory_made_on_the_way_is_owner_only(tmp_path: Path) -> None:
    (tmp_path / "there").mkdir(mode=0o755)
    make_private_directory(tmp_path / "there" / "state" / "claudeloop" / "capacity")
    assert mode(tmp_path / "there") == 0o755  # not made here: left as it was
    for made in ("state", "state/claudeloop", "state/claudeloop/capacity"):
        assert mode(tmp_path / "there" / made) == 0o700, made
    make_private_directory(tmp_path / "there" / "state")  # there already: no error


def test_a_file_where_a_directory_goes_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("")
    with pytest.raises(FileExistsError):
        make_private_directory(tmp_path / "state" / "claudeloop")


def test_the_fleets_sqlite_file_and_its_directories_are_owner_only(tmp_path: Path) -> None:
    engine = parse_engine(f"sqlite:///{tmp_path / 'state' / 'claudeloop' / 'fleet.sqlite'}", "t")
    init_schema(engine)
    assert mode(tmp_path / "state") == mode(tmp_path / "state" / "claudeloop") == 0o700
    files = list((tmp_path / "state" / "claudeloop").iterdir())
    assert tmp_path / "state" / "claudeloop" / "fleet.sqlite" in files
    assert {path.name: mode(path) for path in files} == {path.name: 0o600 for path in files}


def test_a_lease_file_is_owner_only(tmp_path: Path) -> None:
    write_lease(tmp_path / "lease", 1.0)
    assert mode(tmp_path / "lease") == 0o600
