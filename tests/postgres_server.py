"""A throwaway PostgreSQL server for the tests that need a real one.

The machine's own binaries (PATH, else /usr/lib/postgresql/*/bin), a data directory in
a temporary folder, 127.0.0.1 on a free port, no fsync, torn down at the end. initdb
refuses to run as root, and CI runs as root: then the server runs as the `postgres`
system user the Debian package creates.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

_SYSTEM_DIRECTORIES = Path("/usr/lib/postgresql")
SERVER_USER = "postgres"
SUPERUSER = "claudeloop"


class NoPostgres(RuntimeError):
    """No PostgreSQL binaries on this machine (or no user to run them as)."""


def binaries() -> Path:
    """The directory holding initdb and pg_ctl."""
    on_path = shutil.which("initdb")
    if on_path is not None and shutil.which("pg_ctl") is not None:
        return Path(on_path).resolve().parent
    versions = sorted(
        (p for p in _SYSTEM_DIRECTORIES.glob("*/bin") if (p / "initdb").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if not versions:
        raise NoPostgres(
            "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in "
            f"{_SYSTEM_DIRECTORIES}; install the postgresql package"
        )
    return versions[-1]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self._bin = binaries()
        self._as: list[str] = []
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam(SERVER_USER)
            except KeyError:
                raise NoPostgres(f"running as root and there is no {SERVER_USER} user") from None
            os.chown(root, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", SERVER_USER, "--"]

    @property
    def dsn(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        data = self.root / "data"
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", SUPERUSER, "--no-sync")
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        log = self.root / "server.log"
        self._run("pg_ctl", "-D", str(data), "-o", options, "-l", str(log), "-w", "start")

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "stop")

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
