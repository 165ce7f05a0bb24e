"""The folder `claudeloop rehearse --keep` leaves, as `claudeloop resume` finds it: read
before anything else a resume imports, so a resume elsewhere costs nothing for it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from claudeloop.application.errors import UsageError
from claudeloop.cli.output import json_line

# Written beside a kept rehearsal's project: the scenario it played.
KEPT = "rehearsal.json"


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
