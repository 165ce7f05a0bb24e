"""A scripted Anthropic Messages API on 127.0.0.1 that plays a model and every failure.

`with RehearsalServer(builtin_scenario("window")) as server:` serves at `server.base_url`
(point ANTHROPIC_BASE_URL at it); `server.state()` tells what was asked and what
answered, `server.lift()` ends the gates waiting for a lift. `load_scenario(path)` reads
a TOML or JSON scenario; `python -m claudeloop.rehearsal --help` documents the format.
"""

from claudeloop.rehearsal.loading import (
    BUILTIN_SCENARIOS,
    ScenarioError,
    builtin_scenario,
    load_scenario,
    parse_scenario,
    resolve_scenario,
)
from claudeloop.rehearsal.scenario import DEFAULT_DONE_MARKER, GATE_KINDS, Scenario
from claudeloop.rehearsal.server import RehearsalServer

__all__ = [
    "BUILTIN_SCENARIOS",
    "DEFAULT_DONE_MARKER",
    "GATE_KINDS",
    "RehearsalServer",
    "Scenario",
    "ScenarioError",
    "builtin_scenario",
    "load_scenario",
    "parse_scenario",
    "resolve_scenario",
]
