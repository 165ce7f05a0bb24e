"""Parameter types for the command line: durations, positive numbers, apprise URLs, the
working directory."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from claudeloop.application.codec import LARGEST_WHOLE
from claudeloop.application.durations import parse_duration
from claudeloop.application.errors import UsageError
from claudeloop.application.run_link import dashboard_url_problem
from claudeloop.domain.confinement import domain_problem, read_path_problem

__all__ = [
    "APPRISE_URL",
    "DURATION",
    "DURATION_OR_ZERO",
    "POSITIVE_FLOAT",
    "POSITIVE_INT",
    "AppriseUrl",
    "Duration",
    "OneLineChoice",
    "Positive",
    "parse_duration",
    "working_directory",
]


class OneLineChoice(click.Choice):  # type: ignore[type-arg]
    """A choice whose missing value is said on one line, naming the choices (click's own
    puts each choice on a line of its own)."""

    def get_missing_message(
        self,
        param: click.Parameter,  # noqa: ARG002 (click's signature)
        ctx: click.Context | None,  # noqa: ARG002
    ) -> str:
        return "Give one of: " + ", ".join(str(choice) for choice in self.choices) + "."


class Duration(click.ParamType):  # type: ignore[type-arg]
    """A duration as people write it; `zero`: 0 is one too (a setting's off)."""

    name = "DUR"

    def __init__(self, *, zero: bool = False) -> None:
        self.zero = zero

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, timedelta):
            return value
        try:
            duration = parse_duration(str(value))
        except ValueError as error:
            self.fail(str(error), param, ctx)
        if duration < timedelta(0) or (duration == timedelta(0) and not self.zero):
            self.fail(f"{value!r} must be longer than 0", param, ctx)
        return duration


class Positive(click.ParamType):  # type: ignore[type-arg]
    """A number above zero (a cap of zero or less means nothing)."""

    def __init__(self, kind: type[int] | type[float]) -> None:
        self.kind = kind
        self.name = "N" if kind is int else "X"

    @property
    def accepted(self) -> str:
        return "a whole number above 0" if self.kind is int else "a number above 0"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            number = self.kind(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number; use {self.accepted}", param, ctx)
        largest = LARGEST_WHOLE if self.kind is int else math.inf
        if math.isinf(number) or number > largest:
            self.fail(f"{value!r} is a number too large to hold; use {self.accepted}", param, ctx)
        if not (number > 0 and math.isfinite(number) and number <= largest):
            self.fail(f"{value!r} must be {self.accepted}", param, ctx)
        return number


class WholeOrZero(click.ParamType):  # type: ignore[type-arg]
    """A whole number, 0 for off (a count of turns or rounds that stops a run)."""

    name = "N"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            number = int(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a whole number; use one, 0 for off", param, ctx)
        if number > LARGEST_WHOLE:
            self.fail(f"{value!r} is a number too large to hold", param, ctx)
        if number < 0:
            self.fail(f"{value!r} is below 0; use a whole number, 0 for off", param, ctx)
        return number


WHOLE_OR_ZERO = WholeOrZero()


# Letters, dots, dashes: a topic or host name typed without its scheme, never a token.
_PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z._-]{0,39}")


class AppriseUrl(click.ParamType):  # type: ignore[type-arg]
    """scheme://... as apprise reads it; a bad one is named with its secrets masked."""

    name = "URL"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from claudeloop.cli.bootstrap import masking

        text, rules = str(value), masking()
        if not rules.looks_like_apprise_url(text):
            # A plain word is shown as typed; anything that could hold a secret is masked.
            shown = text if _PLAIN_WORD.fullmatch(text) else rules.masked_url(text)
            self.fail(
                f"{shown!r} is not an apprise URL; use scheme://..., such as "
                "ntfy://ntfy.sh/my-topic or json://127.0.0.1:8080/hook",
                param,
                ctx,
            )
        return text


DURATION = Duration()
DURATION_OR_ZERO = Duration(zero=True)
APPRISE_URL = AppriseUrl()
POSITIVE_INT = Positive(int)
POSITIVE_FLOAT = Positive(float)


class PauseAt(click.ParamType):  # type: ignore[type-arg]
    """`5h=90%,7d=95%`, read in the domain's words."""

    name = "WINDOW=PCT,..."

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from claudeloop.domain.pause import PauseThresholds

        try:
            return PauseThresholds.parse(str(value)).render()
        except ValueError as error:
            self.fail(str(error), param, ctx)


class OnLimit(click.ParamType):  # type: ignore[type-arg]
    """`LIMIT=ACTION`: five_hour=wind-down, credits=switch-profile local."""

    name = "LIMIT=ACTION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from claudeloop.domain.limits import (
            LIMIT_KINDS,
            GoOn,
            limit_named,
            parse_action,
            render_action,
        )
        from claudeloop.domain.overage import PAID_OVERAGE

        name, sep, action = str(value).partition("=")
        try:
            kind = limit_named(name)
        except ValueError:
            kind = None
        if not sep or kind is None:
            self.fail(
                f"{value!r} is not LIMIT=ACTION; LIMIT is one of {', '.join(LIMIT_KINDS)}",
                param,
                ctx,
            )
        try:
            parsed = parse_action(action)
        except ValueError as error:
            said = str(error)
            if " names no " in said:
                # `--on-limit five_hour=switch-profile local` unquoted: the shell cut the
                # name off into a word of its own.
                needed = said.rpartition("write ")[2]
                said += f", quoted as one argument: --on-limit '{name}={needed}'"
            self.fail(said, param, ctx)
        if isinstance(parsed, GoOn) and kind != PAID_OVERAGE:
            self.fail(f"{value!r}: go-on is only for {PAID_OVERAGE}", param, ctx)
        return (kind, render_action(parsed))


class Check(click.ParamType):  # type: ignore[type-arg]
    """A verification command, split like a shell would (and refused as one would)."""

    name = "CMD"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from claudeloop.domain.verification import CheckCommand

        try:
            return CheckCommand.parse(str(value)).text
        except ValueError as error:
            self.fail(str(error), param, ctx)


CHECK = Check()


class Problem(click.ParamType):  # type: ignore[type-arg]
    """A value the domain's rule accepts as it is, or says why not."""

    def __init__(self, name: str, problem: Callable[[str], str | None]) -> None:
        self.name = name
        self._problem = problem

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if (problem := self._problem(str(value))) is not None:
            self.fail(f"{value!r}: {problem}", param, ctx)
        return str(value)


DOMAIN = Problem("DOMAIN", domain_problem)
DASHBOARD_URL = Problem("URL", dashboard_url_problem)
READ_PATH = Problem("PATH", read_path_problem)
PAUSE_AT = PauseAt()
ON_LIMIT = OnLimit()


def working_directory(cwd: Path | None) -> Path:
    """--cwd (default: the current directory), which must be a directory."""
    chosen = (cwd or Path.cwd()).expanduser()
    if not chosen.is_dir():
        raise UsageError(f"--cwd {chosen}: no such directory")
    return chosen.resolve()


def located(given: Path, cwd: Path) -> Path:
    """A file named on the command line (a plan, a prompt file) as `run` finds it: from
    here, else in the run's directory `cwd` (not resolved, nor checked)."""
    path = given.expanduser()
    if not path.is_absolute() and not path.exists() and (cwd / path).exists():
        return cwd / path
    return path


# `--cwd`, declared once: every command that takes it means the project directory.
_CWD_HELP = (
    "The project directory: where runs work and are kept, and whose claudeloop.toml "
    "counts (default: the current one)."
)


def cwd_parameter() -> click.Option:
    """`--cwd` as a parameter, for a command built without decorators."""
    return click.Option(["--cwd"], type=click.Path(path_type=Path), default=None, help=_CWD_HELP)


CWD_OPTION = click.option("--cwd", type=click.Path(path_type=Path), default=None, help=_CWD_HELP)
