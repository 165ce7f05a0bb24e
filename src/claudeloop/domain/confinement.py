"""Where the model's commands and the checks run: inside a boundary, by default.

An unattended model must be able to run what its task needs (tests, builds, linters) and
unable to harm what is not its task. A run asks for a `Boundary` (on unless the user
said `--sandbox off`); what it gets at each start is a `Posture`, which depends on what
the machine can build:

- `Confined`: the sandbox runs. Commands are allowed inside it and never outside: writes
  only in the working tree and temp, the home hidden but for the toolchains named, no
  secret in their environment, no network but the allowed domains.
- `CommandsRefused`: the sandbox cannot run here. Shell commands are refused (they would
  otherwise run unconfined), and so is a run whose checks would execute the model's
  code: never an unconfined fallback.
- `Unconfined`: the user said `--sandbox off`, knowingly.

What the boundary stopped is `BlockedAction`, told as it happens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, assert_never

SANDBOX_SWITCHES: tuple[str, ...] = ("on", "off")
BlockedKind = Literal["read", "write", "network", "escape", "command"]
BLOCKED_KINDS: tuple[BlockedKind, ...] = ("read", "write", "network", "escape", "command")


@dataclass(frozen=True, slots=True)
class Boundary:
    """What a run asked for: the sandbox on (the default) or off, and how far it is
    widened: domains commands may reach, home folders they may read."""

    on: bool = True
    allow_domains: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Unavailable:
    """Why the sandbox cannot run on this machine, and the command that fixes it."""

    why: str
    fix: str


@dataclass(frozen=True, slots=True)
class Confined:
    allow_domains: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CommandsRefused:
    why: str
    fix: str


@dataclass(frozen=True, slots=True)
class Unconfined:
    pass


Posture = Confined | CommandsRefused | Unconfined


@dataclass(frozen=True, slots=True)
class BlockedAction:
    """One thing the boundary stopped: what kind, and the path, host or command (as the
    run's redaction leaves it)."""

    kind: BlockedKind
    target: str


_LABEL = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DOMAIN = re.compile(rf"(\*\.)?{_LABEL}(\.{_LABEL})*")


def domain_problem(text: str) -> str | None:
    """Why `text` is not a domain commands may be allowed to reach (None: it is)."""
    if _DOMAIN.fullmatch(text) is None:
        return "not a domain name such as pypi.org or *.npmjs.org"
    return None


def read_path_problem(text: str) -> str | None:
    """Why `text` is not a folder commands may be allowed to read (None: it is)."""
    if not (text.startswith("/") or text == "~" or text.startswith("~/")):
        return "not a folder given absolute or under ~, such as ~/.m2 or /opt/sdk"
    return None


def posture(boundary: Boundary, unavailable: Unavailable | None) -> Posture:
    """What a start gets: off when asked, confined when the sandbox runs, else refused."""
    if not boundary.on:
        return Unconfined()
    if unavailable is not None:
        return CommandsRefused(why=unavailable.why, fix=unavailable.fix)
    return Confined(allow_domains=boundary.allow_domains)


def posture_line(chosen: Posture) -> str:
    """The one line said at start, in `status` and in the summary."""
    match chosen:
        case Confined(allow_domains=domains):
            network = "no network" if not domains else "the network only to " + ", ".join(domains)
            return (
                "sandbox: commands run confined: writes only in the working tree and temp, "
                f"no reads of your home's secrets, {network}"
            )
        case CommandsRefused(why=why, fix=fix):
            return (
                f"sandbox unavailable: {why}; shell commands are refused "
                f"(fix: {fix}; or --sandbox off to run them unconfined)"
            )
        case Unconfined():
            return "sandbox off (--sandbox off): commands and checks run unconfined"
        case _:
            assert_never(chosen)


def posture_name(chosen: Posture) -> str:
    """confined, refused or off: the posture in one word, for events and JSON."""
    match chosen:
        case Confined():
            return "confined"
        case CommandsRefused():
            return "refused"
        case Unconfined():
            return "off"
        case _:
            assert_never(chosen)


def checks_refusal(chosen: Posture, *, has_checks: bool) -> str | None:
    """Why a run's checks cannot run (None: they can). Checks execute code the model
    wrote: where no sandbox can hold them, the run is refused rather than run them
    unconfined."""
    match chosen:
        case CommandsRefused(why=why, fix=fix) if has_checks:
            return (
                f"--verify runs code the model wrote, and the sandbox cannot run here: {why}; "
                f"fix: {fix}, or say --sandbox off to run the checks unconfined"
            )
        case Confined() | CommandsRefused() | Unconfined():
            return None
        case _:
            assert_never(chosen)


def blocked_line(blocked: BlockedAction) -> str:
    """`sandbox blocked a read: ~/.ssh/id_rsa`: the screen's line for one."""
    match blocked.kind:
        case "read":
            what = "a read"
        case "write":
            what = "a write"
        case "network":
            what = "a connection"
        case "escape":
            what = "a command asking to leave the sandbox"
        case "command":
            what = "a command that needs approval"
        case _:
            assert_never(blocked.kind)
    return f"sandbox blocked {what}: {blocked.target}"
