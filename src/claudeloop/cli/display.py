"""What the screen shows during a run: calm, one line per thing that matters.

On a terminal a live status line shows the turn, spend, plan progress and, during a
wait, what is awaited and a countdown to the next probe. RemotePlace, plain lines.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, assert_never

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.text import Text

from claudeloop.application import events
from claudeloop.application.durations import duration_said, instant_said
from claudeloop.application.events import Event, event_fields, event_from
from claudeloop.cli.instants import local_instant
from claudeloop.domain.budget import money
from claudeloop.domain.confinement import BlockedAction, blocked_line
from claudeloop.domain.text import first_line
from claudeloop.domain.verification import how_it_ended


class ConsoleView:
    """An event sink that renders events for a person."""

    def __init__(self, *, quiet: bool = False, verbose: bool = False, stream: Any = None) -> None:
        self._console = Console(file=stream or sys.stderr, highlight=False, soft_wrap=True)
        self._quiet = quiet
        self._verbose = verbose and not quiet
        self._live: Live | None = None
        self._status = _Status()
        if self._console.is_terminal and not quiet:
            self._live = Live(
                self._status, console=self._console, refresh_per_second=2, transient=True
            )
            self._live.start()

    def emit(self, event: Event) -> None:
        self._status.update(event)
        line = event_line(event)
        if line is None and self._verbose:
            # -v: every event, the ones without a line of their own as their fields.
            fields = event_fields(event)
            line = f"{event.type}: " + ", ".join(f"{k}={v}" for k, v in fields.items())
        elif line is not None and self._verbose and isinstance(event, events.TurnFinished):
            line += f"\n  summary: {event.summary}"
        if line is not None and not self._quiet:
            # Lines hold text from elsewhere ([profiles.local], a model's summary): not markup.
            self._console.print(line, markup=False)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


class _Status:
    """The live line; rendered anew at each refresh so the countdown moves."""

    def __init__(self) -> None:
        self.turn = 0
        self.dollars = 0.0
        self.plan = ""
        self.waiting_for = ""
        self.probe_at: datetime | None = None

    def update(self, event: Event) -> None:
        match event:
            case events.TurnStarted(turn=turn):
                self.turn = turn
                self.waiting_for = ""
                self.probe_at = None
            case events.TurnFinished(cost_usd=cost):
                self.dollars += cost
            case events.PlanUpdated(done=done, total=total):
                self.plan = f"plan {done}/{total}"
            case events.WaitStarted(capacity=capacity, probe_at=probe_at):
                self.waiting_for = capacity
                self.probe_at = probe_at
            case _:
                pass  # the live line shows none of the others

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(self.line(options.max_width), style="dim", no_wrap=True, overflow="ellipsis")

    def line(self, width: int) -> str:
        """The line in at most `width` columns. While waiting, what is awaited and the
        countdown come first and the rest gives way: the turn, the spend and the plan
        follow while they fit, and what is awaited is shortened, never the countdown."""
        parts = [f"turn {self.turn}", money(self.dollars)]
        if self.plan:
            parts.append(self.plan)
        if self.probe_at is None:
            return " · ".join([*parts, "working"])
        left = max((self.probe_at - datetime.now(UTC)).total_seconds(), 0.0)
        countdown = f"; next probe in {duration_said(left)}"
        room = width - len(countdown)
        awaited = f"waiting: {self.waiting_for}"
        if len(awaited) > room:
            awaited = self.waiting_for  # a wait's own words say it is one
        if len(awaited) > room:
            awaited = awaited[: max(room - 1, 0)].rstrip() + "…"
        line = f"{awaited}{countdown}"
        for part in parts:
            if len(line) + len(f" · {part}") > width:
                break
            line += f" · {part}"
        return line


def _open(event: events.TurnFinished | events.ProbeFinished) -> bool:
    """Whether the capacity an event says is open, by its kind (a line written before
    events carried the kind: the kind its words say)."""
    return events.capacity_kind_of(event) == "available"


def _session_line(event: events.SessionWritesLost | events.SessionReplaced) -> str:
    """A session the run lets go of: its transcript cut, or gone, or a new one asked for."""
    if isinstance(event, events.SessionReplaced):
        return (
            f"session {event.session_id} is let go of ({event.reason}): the run goes on in "
            "a new session, told what is done and what is left"
        )
    lost = (
        f"Claude Code could not save the transcript of session {event.session_id} "
        "(a full disk or quota)"
    )
    if event.action == "stop":
        return f"{lost}, again: the run ends"
    return f"{lost}: it is not resumed; the next turn starts a new session"


def event_line(event: Event) -> str | None:
    """The line a person sees for an event; None for one only -v shows."""
    match event:
        case events.RunStarted(run_id=run_id, cwd=cwd):
            return f"claudeloop: run {run_id} started in {cwd}"
        case events.RunResumed(phase=phase, run_id=run_id, cwd=cwd, turn=turn):
            # Said as a start is, with where the run had got to in words.
            where = f" in {cwd}" if cwd else ""
            return f"claudeloop: run {run_id or '?'} resumed{where} ({_resumed_from(phase, turn)})"
        case events.TurnStarted(turn=turn):
            return f"turn {turn}: started"
        case events.TurnFinished():
            return _finished_line(event)
        case events.TurnFailed(turn=turn, reason=reason):
            return f"turn {turn}: failed: {reason}"
        case events.TurnRetrying():
            return _retry_line(event)
        case events.TurnInterrupted() | events.TurnSilent():
            return _sent_again_line(event)
        case events.SessionWritesLost() | events.SessionReplaced():
            return _session_line(event)
        case events.CostGuessed(models=models):
            return f"cost of {', '.join(models)} not counted: Claude Code only guesses its price"
        case events.ToolsDenied(tools=tools):
            return (
                f"denied tool calls: {', '.join(tools)}. Allow them with permissions.allow "
                "in .claude/settings.json, or widen the sandbox (--sandbox-allow-domain, "
                "--sandbox-allow-read)"
            )
        case events.SandboxSet(line=line):
            return line
        case events.SandboxBlocked(turn=turn, kind=kind, target=target):
            return f"turn {turn}: " + blocked_line(BlockedAction(kind, target))
        case events.PlanUpdated(done=done, total=total):
            return f"plan: {done}/{total} items done"
        case events.WaitStarted(capacity=capacity, probe_at=at):
            return f"waiting: {capacity}; next probe at {local_instant(at, now=datetime.now(UTC))}"
        case events.ProfileSwitched(profile=profile, because=because, check_at=at):
            return (
                f"switched to profile {profile} ({because}); "
                f"asking the run's own backend again at {local_instant(at, now=datetime.now(UTC))}"
            )
        case events.ProfileRestored(profile=profile):
            return f"back on the run's own profile (from {profile})"
        case events.ModelSwitched(model=model, because=because, check_at=at):
            return (
                f"switched to model {model} ({because}); "
                f"asking the run's own model again at {local_instant(at, now=datetime.now(UTC))}"
            )
        case events.ModelRestored(model=model):
            return f"back on the run's own model (from {model})"
        case events.OverageStarted(turn=turn, resets_at=resets_at, action=action):
            reset = f"; the window resets {instant_said(resets_at)}" if resets_at else ""
            return (
                f"turn {turn} was answered on paid overage (extra usage billed to the "
                f"account){reset}; overage_in_use policy: {action}"
            )
        case events.PauseIgnored(windows=windows, reason=reason):
            return f"pause thresholds ignored for {', '.join(windows)}: {reason}"
        case events.ProbeFinished(capacity=capacity):
            return "probe: capacity is back" if _open(event) else f"probe: still {capacity}"
        case events.VerifyStarted(turn=turn, command=command):
            return f"turn {turn}: verifying: {command}"
        case events.VerifyFinished():
            return _verified_line(event)
        case events.ReviewStarted(turn=turn):
            return f"turn {turn}: independent review started (fresh read-only session)"
        case events.ReviewFinished(turn=turn, verdict=verdict, summary=summary):
            agreed = {"done": "agrees the task is complete", "refused": "refused by a limit"}
            said = agreed.get(verdict, f"disagrees ({verdict})")
            return f"turn {turn}: the reviewer {said}" + (f": {summary}" if summary else "")
        case events.NoProgress(turns_without_progress=count, stall_turns=limit):
            if not limit:
                return None
            return f"no evidence of progress: {count} of {limit} turns in a row"
        case events.TurnCommitted(turn=turn, branch=branch, sha=sha, files_changed=files):
            changed = f"{files} file" if files == 1 else f"{files} files"
            return f"turn {turn} committed on {branch}: {sha[:12]} ({changed})"
        case events.BranchRewound(to_turn=to_turn, undone=undone):
            undid = ", ".join(str(turn) for turn in undone)
            return f"rewound to turn {to_turn}: turns {undid} undone"
        case events.CommitRefused(turn=turn, files=files, reason=reason):
            return f"warning: turn {turn}: not committed: {', '.join(files)}: {reason}"
        case events.ProbeAsked(applied=applied, reason=reason):
            return f"probe now asked: {reason}" if applied else f"probe now ignored: {reason}"
        case events.CapRaised(applied=applied, reason=reason):
            return f"cap changed: {reason}" if applied else f"cap not changed: {reason}"
        case events.NoteAdded(text=text, applied=applied):
            said = first_line(text, longest=120, empty="")
            return f"note for the next turn: {said}" if applied else "an empty note was ignored"
        case events.RunFinished(outcome=outcome, exit_code=exit_code, reason=reason):
            return f"claudeloop: {outcome.value} (exit {exit_code}): {reason}"
        case events.NotifyFailed():
            return None
        case _:
            assert_never(event)


def event_words(event: Mapping[str, Any]) -> str:
    """What an event object (a line of events.jsonl) says, in the words `event_line`
    gives it; a line of an older claudeloop, or a field of the wrong type (a probe_at
    that is no date), as its fields. `claudeloop logs` and the dashboard's run page
    both say events so."""
    typed = event_from(dict(event))
    line = event_line(typed) if typed is not None else None
    fields = {k: v for k, v in event.items() if k not in ("ts", "run_id", "type")}
    return line or ", ".join(f"{k}={v}" for k, v in fields.items())


def log_line(event: Mapping[str, Any]) -> str:
    """An event object as `claudeloop logs` prints it: its instant, type and words."""
    ts = str(event.get("ts", ""))[:19].replace("T", " ")
    kind = str(event.get("type", "?"))
    return f"{ts}  {kind:<15} {event_words(event)}"


def _sent_again_line(event: events.TurnInterrupted | events.TurnSilent) -> str:
    """A turn cut off before its result, sent again under its number."""
    if isinstance(event, events.TurnInterrupted):
        return (
            f"turn {event.turn}: cut off when the run stopped (a crash, a kill, Ctrl-C); sent again"
        )
    then = "sent again" if event.action == "sent_again" else "waiting it out as an outage"
    return (
        f"turn {event.turn}: Claude Code said nothing for {event.seconds:.0f} s "
        f"(awaiting {event.awaiting}); {then}"
    )


_RESUMED_FROM = {
    "preflight": "before its first turn",
    "running": "it was in a turn",
    "verifying": "checking a Done",
    "waiting": "waiting for capacity",
    "probing": "probing for capacity",
}


def _retry_line(event: events.TurnRetrying) -> str:
    """`Claude Code retries a failed request (attempt 2 of 10: 529 overloaded_error)`."""
    attempt, max_retries = event.attempt, event.max_retries
    said = " ".join(str(part) for part in (event.error_status, event.error) if part)
    if event.error == "unknown" and event.error_status is None:
        # Measured (CLI 2.1.337): what the CLI calls "unknown" with no HTTP status
        # is a request that got no answer at all (refused, not resolved, cut).
        said = "no answer from the server (the network, or the server is down)"
    # The CLI sends some failures again beyond its retry budget (a 401 even with
    # CLAUDE_CODE_MAX_RETRIES=0 says "attempt 0 of 0"), and either may be missing:
    # then no count is said.
    counted = attempt is not None and max_retries is not None and 1 <= attempt <= max_retries
    parts = [f"attempt {attempt} of {max_retries}"] if counted else []
    parts += [said] if said else []
    return "Claude Code retries a failed request" + (f" ({': '.join(parts)})" if parts else "")


def _resumed_from(phase: str, turn: int) -> str:
    """Where the run had got to, and the turn it resumes at (0: a line of before, which
    did not say). A run stopped between turns (a --max-turns cap) is in preflight again:
    only turn 1 is before its first turn."""
    if phase == "preflight" and turn > 1:
        return f"between turns, at turn {turn}"
    said = _RESUMED_FROM.get(phase, f"it was {phase}")
    return f"{said}, at turn {turn}" if turn > 1 else said


def _verified_line(event: events.VerifyFinished) -> str:
    how = how_it_ended(
        exit_code=event.exit_code, timed_out=event.timed_out, start_error=event.error
    )
    where = f"; output in {event.output}" if event.output else ""
    return f"turn {event.turn}: {event.command}: {how} ({duration_said(event.seconds)}){where}"


def _finished_line(event: events.TurnFinished) -> str:
    turn = f"turn {event.turn}"
    error = event.error or ""
    if not event.sent:
        # Shared capacity kept it from the service: no verdict, no spend, nothing sent.
        return f"{turn}: held back: {error.removeprefix('not sent: ') or event.capacity}"
    cost = money(event.cost_usd)
    if error and event.verdict != "refused":
        # Capacity explains nothing here: the verdict is not trusted and the turn is retried.
        return f"{turn}: error: {error[:200]}, {cost}"
    summary = event.summary.strip().splitlines()
    # A misconfigured backend's words already quote the server's message (a missing
    # model's, domain.classify): it is not said twice.
    quoted = events.capacity_kind_of(event) == "misconfigured"
    said = summary[0] if summary and not quoted else ""
    first = f" — {_shortened(said, 100)}" if said else ""
    if event.verdict == "refused":
        # A refusal costs nothing as a rule: a price is said only when there is one.
        spent = f" ({cost})" if event.cost_usd else ""
        line = f"{turn} refused: {event.capacity}{spent}{first}"
    else:
        answered = _ANSWERED.get(event.verdict, f"answered: {event.verdict}")
        # An open window is the usual case: only something else is worth a word.
        capacity = "" if _open(event) else f"; capacity: {event.capacity}"
        line = f"{turn} {answered} ({cost}{capacity}){first}"
    # The service's own warning is said on a line of its own: a window nearly used up.
    return f"{line}\n{turn}: warning: {event.usage_warning}" if event.usage_warning else line


# How a person reads the verdict of an answered turn.
_ANSWERED = {
    "continue": "answered, not done yet",
    "done": "answered: done",
    "blocked": "answered: blocked",
}


def _shortened(text: str, longest: int) -> str:
    """`text` in at most `longest` characters, cut between words with an ellipsis."""
    if len(text) <= longest:
        return text
    cut = text[: longest - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,.;:—-") + "…"


class Tee:
    """Sends each event to several sinks (the log on disk, the screen)."""

    def __init__(self, *sinks: Any) -> None:
        self._sinks = sinks

    def emit(self, event: Event) -> None:
        for sink in self._sinks:
            sink.emit(event)


class Screen:
    """The console view until the terminal is gone (closed: a write fails with EIO); then
    nothing. The run goes on, and all it would have shown is in the run directory."""

    def __init__(self, view: ConsoleView) -> None:
        self._view: ConsoleView | None = view

    def emit(self, event: Event) -> None:
        if self._view is not None:
            try:
                self._view.emit(event)
            except OSError:
                self.close()

    def close(self) -> None:
        view, self._view = self._view, None
        if view is not None:
            with contextlib.suppress(OSError):
                view.close()
