"""Where a fleet keeps its queue and run records: the engine URL.

Without one, DBOS runs on a SQLite file in the user state directory (one machine, no
server); `--engine postgresql://...` or CLAUDELOOP_ENGINE puts everything in PostgreSQL.
Parsing needs no database driver, so a bad URL is refused before anything is imported
or connected, and a password never appears in what is shown.
"""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from claudeloop.adapters.shared_capacity.board import STATE_DIR_VARIABLE
from claudeloop.application.errors import BadEngine

ENGINE_VARIABLE = "CLAUDELOOP_ENGINE"
SQLITE_FILE = "fleet.sqlite"
ACCEPTED = "postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE or sqlite:///PATH"
# libpq waits for a server that accepts and never answers (a black-holed port, a
# firewall that drops) for minutes: every connection of the fleet gives up after this,
# unless the URL sets its own connect_timeout. tcp_user_timeout (ms) ends a connection
# whose packets go unacknowledged that long (the network gone mid-statement).
CONNECT_TIMEOUT_SECONDS = 5
_CONNECT_PARAMETERS = {
    "connect_timeout": str(CONNECT_TIMEOUT_SECONDS),
    "tcp_user_timeout": str(CONNECT_TIMEOUT_SECONDS * 2000),
}


def engine_error(error: BaseException) -> str:
    """The first line of what the database said (SQLAlchemy appends SQL and links); a
    server that accepted the connection and never answered, in those words."""
    cause = getattr(error, "orig", None) or error
    if type(cause).__name__ == "ConnectionTimeout":  # psycopg's, named not imported
        return (
            f"does not answer (no reply within {CONNECT_TIMEOUT_SECONDS} s of connecting); "
            "check that the host and port are a PostgreSQL server's and reachable"
        )
    lines = [line for line in str(cause).strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else type(cause).__name__


@dataclass(frozen=True)
class Engine:
    kind: Literal["sqlite", "postgresql"]
    url: str
    # Who connects, as PostgreSQL's pg_stat_activity shows it (unless the URL says).
    application: str = "claudeloop"

    @property
    def masked_url(self) -> str:
        """The URL with its password masked: safe for output and logs."""
        return masked(self.url)

    @property
    def connect_url(self) -> str:
        """The URL every connection of the fleet uses: on PostgreSQL with a connect
        timeout, a TCP timeout and who connects, unless the URL gives its own."""
        if self.kind != "postgresql":
            return self.url
        parts = urlsplit(self.url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        given = {name for name, _ in query}
        ours = {**_CONNECT_PARAMETERS, "application_name": self.application}
        query += [(k, v) for k, v in ours.items() if k not in given]
        return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))

    @property
    def sqlite_file(self) -> Path | None:
        """The SQLite database's file; None for PostgreSQL."""
        return Path(self.url.removeprefix("sqlite:///")) if self.kind == "sqlite" else None


def state_directory(environ: Mapping[str, str]) -> Path:
    """CLAUDELOOP_STATE_DIR, else the platform's user state directory (like the
    capacity records)."""
    override = environ.get(STATE_DIR_VARIABLE)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_state_dir("claudeloop"))


def engine_from(option: str | None, environ: Mapping[str, str]) -> Engine:
    """The engine `--engine` names, else CLAUDELOOP_ENGINE's, else the SQLite default."""
    if option is not None:
        return parse_engine(option, "--engine")
    if environ.get(ENGINE_VARIABLE):
        return parse_engine(environ[ENGINE_VARIABLE], ENGINE_VARIABLE)
    path = state_directory(environ) / SQLITE_FILE
    return Engine("sqlite", f"sqlite:///{path}")


def parse_engine(text: str, where: str) -> Engine:
    """`text` as an engine URL; BadEngine names `where` it came from and what is accepted."""
    value = text.strip()
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise BadEngine(f"{where} {masked(value)!r} is not a URL; use {ACCEPTED}") from None
    scheme = parts.scheme.lower()
    if scheme in ("postgresql", "postgres", "postgresql+psycopg"):
        if not parts.hostname:
            raise BadEngine(f"{where} {masked(value)!r} names no host; use {ACCEPTED}")
        if port == 0:
            raise BadEngine(f"{where} {masked(value)!r}: port 0; use {ACCEPTED}")
        if parts.path.strip("/") == "" or "/" in parts.path.strip("/"):
            raise BadEngine(f"{where} {masked(value)!r} names no database; use {ACCEPTED}")
        return Engine("postgresql", urlunsplit(("postgresql", *parts[1:])))
    if scheme == "sqlite":
        if parts.netloc or not parts.path.startswith("/") or parts.path == "/":
            raise BadEngine(
                f"{where} {masked(value)!r}: a SQLite engine is sqlite:///PATH "
                f"(three slashes, then the file); use {ACCEPTED}"
            )
        return Engine("sqlite", value)
    raise BadEngine(f"{where} {masked(value)!r} is not an engine URL; use {ACCEPTED}")


def masked(url: str) -> str:
    """`url` with the password between `:` and `@` replaced by ***."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url.split("@", 1)[-1] if "@" in url else url
    if not password:
        return url
    user_part, _, host_part = parts.netloc.rpartition("@")
    user = user_part.split(":", 1)[0]
    return urlunsplit((parts.scheme, f"{user}:***@{host_part}", *parts[2:]))


def executor_id(environ: Mapping[str, str], name: str | None = None) -> str:
    """The same name every time a worker starts on this machine with this state
    directory (and `name`, which tells two workers of one machine apart): DBOS recovers
    the runs a dead worker of that name left unfinished."""
    directory = str(state_directory(environ).resolve())
    digest = hashlib.sha256(directory.encode()).hexdigest()[:8]
    base = f"{socket.gethostname()}-{digest}"
    return f"{base}-{name}" if name else base
