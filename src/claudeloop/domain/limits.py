"""What to do when a limit is met: wait (the default), wind down, or go on with another
profile until the limit lifts; an answer on paid overage may also just go on."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, assert_never, get_args

from claudeloop.domain.capacity import (
    CreditsExhausted,
    WaitableState,
    WaitKind,
    WindowExhausted,
    wait_kind,
)
from claudeloop.domain.overage import PAID_OVERAGE, is_paid_overage

# The limits a person can give a policy: every kind of closed window or wait
# (domain.capacity.WaitKind: the service's windows, paid overage in use, a window
# unnamed or unknown, the daily cap, a full local queue, the outages), then an empty
# credit balance (an account's or a proxy's budget). Each is a kind of
# domain.capacity.CapacityKind. The configuration's schema and the flags' help take them
# from here.
LimitKind = Literal[WaitKind, "credits"]
LIMIT_KINDS: tuple[LimitKind, ...] = get_args(LimitKind)
_SWITCH = re.compile(r"^switch-profile\s+(?P<name>[A-Za-z0-9_-]{1,64})$")
# A model name or alias as Claude Code takes it (`sonnet`, `claude-sonnet-4-5`, `opus[1m]`).
# The actions that take a name, and what it names.
_NAMED = {"switch-profile": "profile", "switch-model": "model"}
_SWITCH_MODEL = re.compile(r"^switch-model\s+(?P<model>[A-Za-z0-9._:/\[\]-]{1,100})$")


@dataclass(frozen=True, slots=True)
class Wait:
    """Wait for the limit to lift, probing (the default)."""


@dataclass(frozen=True, slots=True)
class WindDown:
    """End the run with a handoff (exit 75): someone else will pick it up."""


@dataclass(frozen=True, slots=True)
class SwitchProfile:
    """Go on with another backend profile until the limit lifts, then switch back."""

    profile: str


@dataclass(frozen=True, slots=True)
class SwitchModel:
    """Go on, on the same backend and session, with another model until the limit lifts
    (a model's own weekly window: `seven_day_opus=switch-model sonnet`), then back."""

    model: str


@dataclass(frozen=True, slots=True)
class GoOn:
    """Keep sending turns: only for paid overage, where the answers still come (and are
    billed to the account's extra usage)."""


LimitAction = Wait | WindDown | SwitchProfile | SwitchModel | GoOn


def parse_action(text: str) -> LimitAction:
    """`wait`, `wind-down`, `go-on`, `switch-profile NAME` or `switch-model MODEL`;
    ValueError says what is accepted."""
    words = " ".join(text.split())
    if words == "wait":
        return Wait()
    if words == "wind-down":
        return WindDown()
    if words == "go-on":
        return GoOn()
    match = _SWITCH.match(words)
    if match is not None:
        return SwitchProfile(match["name"])
    model = _SWITCH_MODEL.match(words)
    if model is not None:
        return SwitchModel(model["model"])
    if words in _NAMED:
        raise ValueError(
            f"{text!r} names no {_NAMED[words]}: write {words} {_NAMED[words].upper()}"
        )
    raise ValueError(
        f"{text!r} is not an action; use wait, wind-down, go-on ({PAID_OVERAGE} only), "
        "switch-profile NAME or switch-model MODEL"
    )


def render_action(action: LimitAction) -> str:
    match action:
        case Wait():
            return "wait"
        case WindDown():
            return "wind-down"
        case SwitchProfile(profile=name):
            return f"switch-profile {name}"
        case SwitchModel(model=model):
            return f"switch-model {model}"
        case GoOn():
            return "go-on"
        case _:
            assert_never(action)


def limit_kind(capacity: WaitableState) -> LimitKind:
    """The limit a waitable state is, one of LIMIT_KINDS (a window the service named that
    this claudeloop does not know is `unknown`)."""
    match capacity:
        case CreditsExhausted():
            return "credits"
        case WindowExhausted():
            return wait_kind(capacity)
        case _:
            assert_never(capacity)


def limit_named(text: str) -> LimitKind:
    """The limit kind a person wrote (a key of `on_limit`, a flag's LIMIT); ValueError
    names the ones accepted."""
    name = text.strip()
    for kind in LIMIT_KINDS:
        if name == kind:
            return kind
    raise ValueError(f"unknown limit {text!r}; limits: {', '.join(LIMIT_KINDS)}")


@dataclass(frozen=True, slots=True)
class LimitPolicies:
    """Per limit kind, the action; any limit not named waits."""

    actions: tuple[tuple[LimitKind, LimitAction], ...] = ()

    def __post_init__(self) -> None:
        for kind, action in self.actions:
            # Only an answer on paid overage still comes: a closed window has no going on.
            if isinstance(action, GoOn) and kind != PAID_OVERAGE:
                raise ValueError(f"go-on is only for {PAID_OVERAGE}, not {kind!r}")

    def switch_to_itself(self, own_profile: str) -> LimitKind | None:
        """The limit whose policy switches to the run's own profile, if one does: a detour
        to where the limit was met goes nowhere, so such a policy is refused."""
        return next(
            (
                kind
                for kind, action in self.actions
                if isinstance(action, SwitchProfile) and action.profile == own_profile
            ),
            None,
        )

    def action_for(self, capacity: WaitableState) -> LimitAction:
        # A pause before the wall is the user's own choice: it always waits (an answer
        # on paid overage is not the user's pause: its policy decides).
        if (
            isinstance(capacity, WindowExhausted)
            and capacity.paused_at is not None
            and not is_paid_overage(capacity)
        ):
            return Wait()
        kind = limit_kind(capacity)
        return next((action for name, action in self.actions if name == kind), Wait())
