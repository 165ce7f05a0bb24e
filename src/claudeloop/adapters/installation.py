"""How claudeloop was installed, and the command that adds one of its extras there.

A hint for a missing extra (the fleet's DBOS, notifications' apprise) must name a
command that works for the way this copy was installed: `uv tool install` and pipx keep
it in an environment of their own that `pip install` does not reach, and an editable
checkout is installed from its folder. The name `claudeloop` on the package index is
another project's, so no command here fetches claudeloop by name unless this copy came
from an index: an extra's own requirements are added beside it, or it is installed again
from the path it came from.

`detect` reads a prefix (its files are the evidence: uv's `uv-receipt.toml`, pipx's
`pipx_metadata.json`, the `direct_url.json` of the installed distribution);
`install_command` is the rule, a pure function of what was found.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Literal, assert_never
from urllib.parse import unquote, urlparse

DISTRIBUTION = "claudeloop"

Kind = Literal["uv-tool", "pipx", "editable", "environment"]


@dataclass(frozen=True, slots=True)
class Installation:
    """Where and how this claudeloop is installed."""

    kind: Kind
    # The environment's interpreter.
    python: str
    # The local path claudeloop was installed from (a checkout or a wheel); None when
    # it came from a package index.
    source: str | None
    # Who installed it (the distribution's INSTALLER file): "pip", "uv", ...
    installer: str
    # Whether `pip` on PATH is this environment's own.
    pip_on_path: bool


def install_command(installation: Installation, extra: str, requirements: list[str]) -> str:
    """The one command that adds `extra` (whose requirements are `requirements`) to
    this installation."""
    source = installation.source
    named = f"{source or DISTRIBUTION}[{extra}]"
    quoted = " ".join(shlex.quote(requirement) for requirement in requirements or [named])
    match installation.kind:
        case "uv-tool":
            # `uv tool install` with other extras installs the tool again, in place.
            return f"uv tool install {shlex.quote(named)}"
        case "pipx":
            return f"pipx inject {DISTRIBUTION} {quoted}"
        case "editable":
            where = source if source is not None else "."
            return f"{_pip_install(installation)} -e {shlex.quote(f'{where}[{extra}]')}"
        case "environment":
            return f"{_pip_install(installation)} {quoted}"
        case _:
            assert_never(installation.kind)


def _pip_install(installation: Installation) -> str:
    """`pip install` as it reaches this environment."""
    if installation.installer == "uv":
        return f"uv pip install --python {shlex.quote(installation.python)}"
    if installation.pip_on_path:
        return "pip install"
    return f"{shlex.quote(installation.python)} -m pip install"


def detect(
    prefix: Path,
    python: str,
    direct_url: str | None,
    installer: str | None,
    pip_on_path: bool,
) -> Installation:
    """The installation whose environment is `prefix`, from the files there and the
    distribution's `direct_url.json` and INSTALLER texts (None when absent)."""
    editable, source = _origin(direct_url)
    kind: Kind
    if (prefix / "uv-receipt.toml").is_file() or _under(prefix, ("uv", "tools")):
        kind = "uv-tool"
    elif (prefix / "pipx_metadata.json").is_file() or _under(prefix, ("pipx", "venvs")):
        kind = "pipx"
    elif editable:
        kind = "editable"
    else:
        kind = "environment"
    return Installation(
        kind=kind,
        python=python,
        source=source,
        installer=(installer or "pip").strip() or "pip",
        pip_on_path=pip_on_path,
    )


def _under(prefix: Path, parents: tuple[str, str]) -> bool:
    """`prefix` is `.../uv/tools/claudeloop` or `.../pipx/venvs/claudeloop`."""
    parts = prefix.parts
    return len(parts) >= 3 and parts[-3:-1] == parents and parts[-1] == DISTRIBUTION


def _origin(direct_url: str | None) -> tuple[bool, str | None]:
    """Whether the install is editable, and the local path it came from."""
    if direct_url is None:
        return False, None
    try:
        record = json.loads(direct_url)
    except ValueError:
        return False, None
    if not isinstance(record, dict):
        return False, None
    dir_info = record.get("dir_info")
    editable = isinstance(dir_info, dict) and dir_info.get("editable") is True
    url = record.get("url")
    if not isinstance(url, str):
        return editable, None
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return editable, None
    return editable, str(PurePosixPath(unquote(parsed.path)))


def current() -> Installation:
    """This process's claudeloop."""
    try:
        distribution = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        direct_url = installer = None
    else:
        direct_url = distribution.read_text("direct_url.json")
        installer = distribution.read_text("INSTALLER")
    pip = shutil.which("pip")
    own_bin = os.path.realpath(os.path.dirname(sys.executable))
    pip_on_path = pip is not None and os.path.realpath(os.path.dirname(pip)) == own_bin
    return detect(Path(sys.prefix), sys.executable, direct_url, installer, pip_on_path)


def extra_requirements(extra: str) -> list[str]:
    """The requirements the installed claudeloop declares for `extra`."""
    try:
        declared = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        declared = []
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    return [line.split(";")[0].strip() for line in declared if marker.search(line)]


def extra_hint(extra: str) -> str:
    """The command that adds `extra` to this claudeloop."""
    return install_command(current(), extra, extra_requirements(extra))


def require_fleet_extra() -> None:
    """Exit 2, with the command that adds it, when the queue's engine (the `fleet` extra)
    is missing: what every fleet command needs before it reads anything."""
    from claudeloop.adapters.fleet.queue_engine import ENGINE_NAME, engine_installed

    if not engine_installed():
        from claudeloop.application.errors import UsageError

        raise UsageError(
            f"the fleet commands need {ENGINE_NAME} (the fleet extra): {extra_hint('fleet')}",
            exit_code=2,
        )
