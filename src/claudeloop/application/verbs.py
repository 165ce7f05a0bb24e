"""The verbs a live run's page offers as buttons (the dashboard's): stop, wind down,
probe now, raise caps and add a note, each what its command does, on a run of this
machine (its `ProjectRuns`) or of a fleet (the `Fleet`). A new verb is one more entry
of `VERBS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from claudeloop.application.durations import parse_duration
from claudeloop.application.errors import UsageError
from claudeloop.application.fleet import control as fleet_control
from claudeloop.application.fleet import steer as fleet_steer
from claudeloop.application.inspection import control, takes_effect
from claudeloop.application.ports import Fleet, ProjectRuns
from claudeloop.application.steering import add_note, probe_now, raise_caps
from claudeloop.domain.loop import ControlCommand
from claudeloop.domain.steering import AddNote, Cap, ProbeNow, RaiseCap, Steer


@dataclass(frozen=True)
class Field:
    """A text field of a verb's form: its name in the form, what it is in words (its
    label), and an example of what it takes (its placeholder)."""

    name: str
    label: str
    example: str = ""


@dataclass(frozen=True)
class Verb:
    """A button of a live run's page: its name in the URL, its label, and what it asks
    of the run (given the run's directory's runs, the run id and the form's fields),
    returning what it said in words; a UsageError it raises is said on the page. A new
    verb is one more entry of `VERBS`."""

    name: str
    label: str
    ask: Callable[[ProjectRuns, str, Mapping[str, str]], str]
    # The text fields its form carries (a note's text, a cap's new value).
    fields: tuple[Field, ...] = ()
    # What it asks of a fleet's run (given the fleet, the run id and the form's fields);
    # None: a verb of this machine's runs only.
    ask_fleet: Callable[[Fleet, str, Mapping[str, str]], str] | None = None


def _controlled(command: ControlCommand) -> Callable[[ProjectRuns, str, Mapping[str, str]], str]:
    def ask(runs: ProjectRuns, run_id: str, _form: Mapping[str, str]) -> str:
        asked = control(runs, run_id, command)
        doing = command.value.replace("-", " ")
        return f"asked run {asked.run_id} to {doing}: {takes_effect(command)}"

    return ask


def _fleet_controlled(command: ControlCommand) -> Callable[[Fleet, str, Mapping[str, str]], str]:
    def ask(fleet: Fleet, run_id: str, _form: Mapping[str, str]) -> str:
        found = fleet_control(fleet, run_id, command)
        doing = command.value.replace("-", " ")  # "to wind down"
        return f"asked run {run_id} (on {found.worker or 'its worker'}) to {doing}"

    return ask


def _probe_now(runs: ProjectRuns, run_id: str, _form: Mapping[str, str]) -> str:
    sent = probe_now(runs, run_id)
    if sent.pid is None:  # nothing was sent: what it says names the run, as the command's
        return sent.will
    return f"asked run {sent.run_id} to probe now: {sent.will}"


def _caps(form: Mapping[str, str]) -> dict[Cap, float]:
    """The caps a raise form gives (empty fields left out); UsageError naming a field
    whose value is no positive number, or no duration."""
    caps: dict[Cap, float] = {}
    for cap, field in ((Cap.TURNS, "max_turns"), (Cap.DOLLARS, "max_dollars")):
        text = form.get(field, "").strip()
        if not text:
            continue
        try:
            value = float(int(text) if cap is Cap.TURNS else float(text))
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"{cap.value}: {text!r} is not a positive number")
        caps[cap] = value
    wait = form.get("max_wait", "").strip()
    if wait:
        try:
            caps[Cap.WAIT] = parse_duration(wait).total_seconds()
        except ValueError as error:
            raise UsageError(f"{Cap.WAIT.value}: {error}") from None
    if not caps:
        raise UsageError("give at least one of max-turns, max-dollars, max-wait")
    return caps


def _raise(runs: ProjectRuns, run_id: str, form: Mapping[str, str]) -> str:
    sent = raise_caps(runs, run_id, _caps(form), now=datetime.now(UTC))
    return "; ".join(f"asked run {each.run_id}: {each.will}" for each in sent)


def _note(runs: ProjectRuns, run_id: str, form: Mapping[str, str]) -> str:
    sent = add_note(runs, run_id, form.get("text", ""))
    return f"asked run {sent.run_id}: {sent.will}"


def _fleet_steered(
    asked: Callable[[Mapping[str, str]], list[Steer]],
) -> Callable[[Fleet, str, Mapping[str, str]], str]:
    def ask(fleet: Fleet, run_id: str, form: Mapping[str, str]) -> str:
        found = fleet_steer(fleet, run_id, asked(form), now=datetime.now(UTC))
        return (
            f"asked run {run_id} (on {found.worker or 'its worker'}); it applies it at a safe point"
        )

    return ask


def _fleet_note(form: Mapping[str, str]) -> list[Steer]:
    text = form.get("text", "")
    if not text.strip():
        raise UsageError("the note is empty; give the text to say to the next turn")
    return [AddNote(text)]


VERBS: tuple[Verb, ...] = (
    Verb(
        "stop",
        "Stop",
        _controlled(ControlCommand.STOP),
        ask_fleet=_fleet_controlled(ControlCommand.STOP),
    ),
    Verb(
        "wind-down",
        "Wind down",
        _controlled(ControlCommand.WIND_DOWN),
        ask_fleet=_fleet_controlled(ControlCommand.WIND_DOWN),
    ),
    Verb(
        "probe-now",
        "Probe now",
        _probe_now,
        ask_fleet=_fleet_steered(lambda _form: [ProbeNow()]),
    ),
    Verb(
        "raise",
        "Raise caps",
        _raise,
        fields=(
            Field("max_turns", "Most turns", "e.g. 40"),
            Field("max_dollars", "Most dollars", "e.g. 5.00"),
            Field("max_wait", "Longest wait", "e.g. 12h"),
        ),
        ask_fleet=_fleet_steered(lambda form: [RaiseCap(c, v) for c, v in _caps(form).items()]),
    ),
    Verb(
        "note",
        "Add note",
        _note,
        fields=(Field("text", "A note for the next turn", "e.g. use the new API"),),
        ask_fleet=_fleet_steered(_fleet_note),
    ),
)


def verb_named(name: str) -> Verb | None:
    return next((verb for verb in VERBS if verb.name == name), None)
