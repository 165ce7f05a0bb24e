"""What the screen shows during a run: calm, one line per thing that matters.

On a terminal a live status line shows the turn, spend, plan progress and, during a
wait, what is awaited and a countdown to the next probe. Elsewhere, plain lines.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.text import Text


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

    def emit(self, event_type: str, **fields: Any) -> None:
        self._status.update(event_type, fields)
        line = event_line(event_type, fields)
        if line is None and self._verbose:
            # -v: every event, the ones without a line of their own as their fields.
            line = f"{event_type}: " + ", ".join(f"{k}={v}" for k, v in fields.items())
        elif line is not None and self._verbose and event_type == "turn.finished":
            line += f"\n  summary: {fields.get('summary', '')}"
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

    def update(self, event_type: str, fields: dict[str, Any]) -> None:
        if event_type == "turn.started":
            self.turn = fields.get("turn", self.turn)
            self.waiting_for = ""
            self.probe_at = None
        elif event_type == "turn.finished":
            self.dollars += float(fields.get("cost_usd") or 0.0)
        elif event_type == "plan.updated":
            self.plan = f"plan {fields['done']}/{fields['total']}"
        elif event_type == "wait.started":
            self.waiting_for = str(fields.get("capacity", ""))
            self.probe_at = datetime.fromisoformat(str(fields["probe_at"]))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(self.line(options.max_width), style="dim", no_wrap=True, overflow="ellipsis")

    def line(self, width: int) -> str:
        """The line in at most `width` columns: what is awaited is shortened, never the
        countdown (a 5-hour wait's description alone nearly fills 80 columns)."""
        parts = [f"turn {self.turn}", f"${self.dollars:.4f}"]
        if self.plan:
            parts.append(self.plan)
        if self.probe_at is None:
            return " · ".join([*parts, "working"])
        left = max((self.probe_at - datetime.now(UTC)).total_seconds(), 0.0)
        countdown = f"next probe in {_clock(left)}"
        head = " · ".join([*parts, "waiting: "])
        room = width - len(head) - len(f"; {countdown}")
        if room < 12:
            return " · ".join([*parts, countdown])
        awaited = self.waiting_for
        if len(awaited) > room:
            awaited = awaited[: room - 1].rstrip() + "…"
        return f"{head}{awaited}; {countdown}"


def event_line(event_type: str, fields: dict[str, Any]) -> str | None:
    match event_type:
        case "run.started":
            return f"claudeloop: run {fields.get('run_id', '')} started in {fields.get('cwd')}"
        case "run.resumed":
            return f"claudeloop: resumed (phase {fields.get('phase')})"
        case "turn.started":
            return f"turn {fields.get('turn')}: started"
        case "turn.finished":
            return _finished_line(fields)
        case "turn.failed":
            return f"turn {fields.get('turn')}: failed: {fields.get('reason')}"
        case "turn.retrying":
            said = " ".join(str(fields[k]) for k in ("error_status", "error") if fields.get(k))
            return (
                f"Claude Code retries a failed request (attempt {fields.get('attempt')} of "
                f"{fields.get('max_retries')}{': ' + said if said else ''})"
            )
        case "turn.interrupted":
            return f"turn {fields.get('turn')}: interrupted by a crash; sent again"
        case "cost.guessed":
            models = ", ".join(str(model) for model in fields.get("models") or [])
            return f"cost of {models} not counted: Claude Code only guesses its price"
        case "tools.denied":
            tools = ", ".join(fields.get("tools", []))
            return (
                f"denied tool calls: {tools}. Allow them with --permission-mode "
                "(e.g. bypassPermissions in a sandbox) or permissions.allow in "
                ".claude/settings.json"
            )
        case "plan.updated":
            return f"plan: {fields.get('done')}/{fields.get('total')} items done"
        case "wait.started":
            at = datetime.fromisoformat(str(fields["probe_at"]))
            return f"waiting: {fields.get('capacity')}; next probe at {at:%H:%M:%S} UTC"
        case "profile.switched":
            at = datetime.fromisoformat(str(fields["check_at"]))
            return (
                f"switched to profile {fields.get('profile')} ({fields.get('because')}); "
                f"asking the run's own backend again at {at:%H:%M:%S} UTC"
            )
        case "profile.restored":
            return f"back on the run's own profile (from {fields.get('profile')})"
        case "pause.ignored":
            return f"pause thresholds ignored for {', '.join(fields.get('windows', []))}: " + str(
                fields.get("reason", "")
            )
        case "probe.finished":
            return f"probe: {fields.get('capacity')}"
        case "run.finished":
            return (
                f"claudeloop: {fields.get('outcome')} (exit {fields.get('exit_code')}): "
                f"{fields.get('reason')}"
            )
        case _:
            return None


def _finished_line(fields: dict[str, Any]) -> str:
    turn = f"turn {fields.get('turn')}"
    error = str(fields.get("error") or "")
    if fields.get("sent") is False:
        # Shared capacity kept it from the service: no verdict, no spend, nothing sent.
        return f"{turn}: held back: {error.removeprefix('not sent: ') or fields.get('capacity')}"
    cost = f"${float(fields.get('cost_usd') or 0):.4f}"
    if error and fields.get("verdict") != "refused":
        # Capacity explains nothing here: the verdict is not trusted and the turn is retried.
        return f"{turn}: error: {error[:200]}, {cost}"
    summary = str(fields.get("summary") or "").strip().splitlines()
    first = f" — {summary[0][:100]}" if summary else ""
    return f"{turn}: {fields.get('verdict')}, capacity {fields.get('capacity')}, {cost}{first}"


def _clock(seconds: float) -> str:
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Tee:
    """Sends each event to several sinks (the log on disk, the screen)."""

    def __init__(self, *sinks: Any) -> None:
        self._sinks = sinks

    def emit(self, event_type: str, **fields: Any) -> None:
        for sink in self._sinks:
            sink.emit(event_type, **fields)
