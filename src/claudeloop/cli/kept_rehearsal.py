"""The folder `claudeloop rehearse --keep` leaves, as `claudeloop resume` finds it: read
before anything else a resume imports, so a resume elsewhere costs nothing for it. And
the rehearsal's servers, as a rehearsal or a kept one's resume serves them."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claudeloop.application.errors import UsageError
from claudeloop.cli.output import json_line

# Written beside a kept rehearsal's project: the scenario it played.
KEPT = "rehearsal.json"
# The profile a rehearsal of a local server plays, and a switch-profile policy goes to.
LOCAL_PROFILE = "rehearsal-local"


@dataclass(frozen=True, slots=True)
class KeptRehearsal:
    """The folder `rehearse --keep` keeps (its project, its run, the CLI's home) and the
    scenario it played, written beside the project so `claudeloop resume` there knows
    what to serve again."""

    workdir: Path
    scenario: str  # a built-in's name, or a scenario file's absolute path

    def write(self) -> None:
        (self.workdir / KEPT).write_text(
            json_line({"scenario": self.scenario}) + "\n", encoding="utf-8"
        )


def kept_rehearsal(cwd: Path) -> KeptRehearsal | None:
    """The kept rehearsal whose project `cwd` is, or None for any other directory."""
    marker = cwd.parent / KEPT
    if cwd.name != "project" or not marker.is_file():
        return None
    try:
        scenario = json.loads(marker.read_text(encoding="utf-8"))["scenario"]
    except (OSError, ValueError, KeyError, TypeError):
        scenario = None
    if not isinstance(scenario, str):
        raise UsageError(f"{marker}: not what `rehearse --keep` writes; expected a scenario")
    return KeptRehearsal(cwd.parent, scenario)


@dataclass(frozen=True, slots=True)
class RehearsalServers:
    """The rehearsal API serving (and the local profile's, for the switch-profile
    scenario) and where: a run on it is wired with the backend and the detour to the
    local profile they serve, and the rehearsal folder's own home and capacity record,
    never the machine's (cli/bootstrap/rehearsal.py)."""

    base_url: str
    local_url: str | None
    on_local_profile: bool
    workdir: Path
    state: Callable[[], dict[str, Any]]

    @property
    def home(self) -> Path:
        return self.workdir / "home"

    @property
    def capacity_dir(self) -> Path:
        return self.workdir / "state" / "capacity"
