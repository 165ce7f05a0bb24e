"""What a finished run tells a person: summary.md, and the --json result object."""

from __future__ import annotations

from typing import Any

from claudeloop.application.records import RunRecord
from claudeloop.domain.capacity import describe
from claudeloop.domain.loop import Outcome


def continue_command(record: RunRecord) -> str:
    return f"claudeloop resume --run-id {record.run_id} --cwd {record.spec.cwd}"


def result_object(record: RunRecord) -> dict[str, Any]:
    """The object `--json` prints at the end, with the fields the design page lists."""
    state = record.state
    outcome = state.outcome or Outcome.FAILED
    progress = record.plan_progress
    return {
        "run_id": record.run_id,
        "session_id": record.session_id,
        "outcome": outcome.value,
        "exit_code": outcome.exit_code,
        "turns": state.ledger.turns,
        "attempts": state.ledger.attempts,
        "probes": state.probes,
        "dollars": round(state.ledger.dollars, 6),
        "waited_seconds": round(record.waited_seconds, 3),
        "summary": state.summary,
        "remaining_work": list(_remaining(record)),
        "blocked_on": state.reason.removeprefix("blocked on: ")
        if outcome is Outcome.BLOCKED
        else None,
        "reason": state.reason,
        "plan": {"done": progress[0], "total": progress[1]} if progress else None,
    }


def summary_markdown(record: RunRecord) -> str:
    """summary.md: outcome and reason, spend, waiting, plan, what is left, how to go on."""
    state = record.state
    outcome = state.outcome or Outcome.FAILED
    lines = [
        f"# claudeloop run {record.run_id}",
        "",
        f"- Outcome: **{outcome.value}** (exit {outcome.exit_code})",
        f"- Reason: {state.reason or '-'}",
        f"- Session: {record.session_id or '-'}",
        f"- Turns: {state.ledger.turns} answered, {state.ledger.attempts} sent, "
        f"{state.probes} probes",
        f"- Spend: ${state.ledger.dollars:.4f}",
        f"- Time waited for capacity: {_duration(record.waited_seconds)}",
        f"- Last capacity: {describe(state.capacity)}",
    ]
    progress = record.plan_progress
    if progress is not None:
        lines.append(f"- Plan: {progress[0]}/{progress[1]} items done")
    if state.summary:
        lines += ["", "## Last summary", "", state.summary]
    remaining = _remaining(record)
    if remaining:
        lines += ["", "## Remaining work", "", *(f"- {entry}" for entry in remaining)]
    if outcome is not Outcome.DONE:
        lines += ["", "## To continue", "", "```sh", continue_command(record), "```"]
    return "\n".join(lines) + "\n"


def _remaining(record: RunRecord) -> tuple[str, ...]:
    if record.state.outcome is Outcome.DONE:
        return ()
    if record.plan is not None and record.plan.open_items:
        return tuple(item.text for item in record.plan.open_items)
    return record.state.remaining_work


def _duration(seconds: float) -> str:
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{seconds:.1f}s"
