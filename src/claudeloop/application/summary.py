"""What a run tells a person: summary.md, the --json result and the status object."""

from __future__ import annotations

import math
import shlex
from datetime import datetime
from typing import Any

from claudeloop.application.durations import duration_said
from claudeloop.application.ports import RunSummary
from claudeloop.application.records import RunRecord
from claudeloop.application.run_facts import RunFacts, dollars_words, run_facts, turns_words
from claudeloop.domain.budget import BudgetLedger, ReachedCap
from claudeloop.domain.capacity import describe
from claudeloop.domain.loop import Outcome
from claudeloop.domain.overage import is_paid_overage
from claudeloop.domain.startup import session_gone
from claudeloop.domain.text import count
from claudeloop.domain.verification import CheckResult


def continue_command(record: RunRecord) -> str:
    """The command that goes on: after a budget cap, with the caps it reached raised, or
    `resume` would stop again at once."""
    words = ["claudeloop", "resume", record.run_id, "--cwd", str(record.spec.cwd)]
    if record.state.outcome is Outcome.BUDGET_EXHAUSTED:
        words += _raised_caps(record.state.ledger)
    session = record.session_id
    if session is not None and record.state.reason == session_gone(session):
        words.append("--new-session")  # a plain resume would meet the same refusal
    return shlex.join(words)


def _raised_caps(ledger: BudgetLedger) -> list[str]:
    """Each cap reached, raised to what was spent plus the cap again: as much once more."""
    return [word for reached in ledger.reached_caps() for word in raised_flag(reached)]


def raised_flag(reached: ReachedCap) -> list[str]:
    """The flag and value that lift a cap reached, allowing as much once more
    (`--max-turns 4` for a cap of 2 turns, 2 spent)."""
    if reached.flag == "max-dollars":
        # Rounded first: 0.6 + 0.5 is 1.1000000000000001, not a cent more.
        cents = math.ceil(round(reached.once_more * 100, 6))
        return [f"--{reached.flag}", f"{cents / 100:.2f}".removesuffix(".00")]
    return [f"--{reached.flag}", str(int(reached.once_more))]


def _spent(record: RunRecord, facts: RunFacts) -> dict[str, Any]:
    """What `status --json` and the `--json` result both say of a run, once: the read
    model's facts (application.run_facts), and what else they know."""
    state = record.state
    return {
        **facts.to_json(),
        "session_id": record.session_id,
        # The turns answered and the prompts sent, as before the read model's `answered`
        # and `sent` (README, the --json result).
        "turns": state.ledger.turns,
        "attempts": state.ledger.attempts,
        # Turns answered on paid overage: extra usage billed to the account.
        "overage_turns": state.overage_turns,
        "summary": state.summary,
        # The last verification round: each command, how it ended, where its output is.
        "verification": [_check_object(result) for result in state.last_checks],
        "turns_without_progress": state.stagnation.turns_without_progress,
        # Sessions whose transcripts Claude Code could not save: never resumed.
        "lost_sessions": list(record.lost_sessions),
        # Sessions Claude Code no longer had, or `resume --new-session` let go of.
        "gone_sessions": list(record.gone_sessions),
    }


def _check_object(result: CheckResult) -> dict[str, Any]:
    return {
        "command": result.command.text,
        "passed": result.passed,
        "exit_code": result.exit_code,
        "seconds": round(result.seconds, 3),
        "timed_out": result.timed_out,
        "ended": result.ended,
        "output": str(result.output_path) if result.output_path else None,
    }


def check_line(result: CheckResult) -> str:
    """One verification, in a line: command, how it ended, seconds, where its output is."""
    where = f"; output in {result.output_path}" if result.output_path else ""
    return f"`{result.command.text}` {result.ended} ({duration_said(result.seconds)}){where}"


def ended_facts(record: RunRecord) -> RunFacts:
    """The facts of a run that ended (summary.md, the `--json` result): its duration
    up to its end."""
    return run_facts(record, now=record.ended_at or record.started_at)


def result_object(record: RunRecord) -> dict[str, Any]:
    """The object `--json` prints at the end, with the fields the design page lists."""
    state = record.state
    outcome = state.outcome or Outcome.FAILED
    facts = ended_facts(record)
    return {
        **_spent(record, facts),
        "outcome": outcome.value,
        "exit_code": state.exit_code,
        # What is left (`left`), by the name the result has always given it.
        "remaining_work": list(facts.left),
        "blocked_on": state.blocked_on if outcome is Outcome.BLOCKED else None,
    }


def status_object(record: RunRecord, *, now: datetime, driver_pid: int | None) -> dict[str, Any]:
    """The object `status --json` prints: where a run stands now, ended or not."""
    state = record.state
    detour = state.detour
    return {
        **_spent(record, run_facts(record, now=now)),
        "phase": state.phase.value,
        "outcome": state.outcome.value if state.outcome else None,
        "capacity": describe(state.capacity),
        "overage_in_use": is_paid_overage(state.capacity),
        "next_probe_at": state.next_probe_at.isoformat() if state.next_probe_at else None,
        "next_probe_in_seconds": _seconds_until(state.next_probe_at, now),
        "driver_pid": driver_pid,
        "driver_alive": driver_pid is not None,
        # Where the last start ran the model's commands, and what its boundary stopped.
        "sandbox": record.sandbox or None,
        "blocked": record.blocked,
        "branch": branch_object(record),
        # Notes a person left that wait for the next turn: said with every prompt until
        # a turn is answered (a wait for capacity holds them till then).
        "pending_notes": list(state.notes),
        "detour": None
        if detour is None
        else {
            "profile": detour.profile,
            "model": detour.model,
            "to": detour.to,
            "awaiting": describe(detour.awaiting),
            "check_at": detour.check_at.isoformat(),
            "check_in_seconds": _seconds_until(detour.check_at, now),
        },
    }


# What a row of `runs`, `runs --all` and the dashboard's front page says of a run: the
# read model's facts (application.run_facts), as every view says them, and where it
# stands now. One shape, whichever listing it is in.
ROW_FIELDS = (
    "run_id",
    "title",
    "started_at",
    "ended_at",
    "duration_seconds",
    "sent",
    "answered",
    "refused",
    "probes",
    "dollars",
    "turn_dollars",
    "probe_dollars",
    "estimated_dollars",
    "waited_seconds",
    "left",
    "left_from",
    "said",
    "phase",
    "outcome",
    "reason",
    "capacity",
    "next_probe_at",
    "next_probe_in_seconds",
    "plan",
    "session_id",
    "driver_alive",
    "overage_in_use",
    "sandbox",
    "blocked",
)


def row_fields(record: RunRecord, *, now: datetime, driver_pid: int | None) -> dict[str, Any]:
    """A run's row in every listing of runs (`ROW_FIELDS`), with what it waits for and
    how its last verification round went."""
    status = status_object(record, now=now, driver_pid=driver_pid)
    checks = status["verification"]
    passed = sum(1 for check in checks if check["passed"])
    return {
        **{key: status[key] for key in ROW_FIELDS},
        "waiting_for": status["capacity"] if status["next_probe_at"] else None,
        "last_verification": f"{passed}/{len(checks)} passed" if checks else None,
    }


def branch_object(record: RunRecord) -> dict[str, Any] | None:
    """Where a run commits its turns (None: it commits none): the worktree, the branch
    it came from and the last turn checkpointed; `status` adds the commits from git."""
    spec = record.spec
    if not spec.checkpoint:
        return None
    return {
        "name": f"claudeloop/{record.run_id}" if spec.worktree is not None else None,
        "worktree": str(spec.worktree) if spec.worktree is not None else None,
        "work_dir": str(spec.work_dir),
        "base_branch": spec.base_branch,
        "last_committed_turn": record.checkpointed_turn,
    }


def _branch_lines(record: RunRecord) -> list[str]:
    branch = branch_object(record)
    if branch is None:
        return []
    name = branch["name"] or "the current branch"
    where = f" in the worktree {branch['worktree']}" if branch["worktree"] else ""
    return [
        f"- Branch: {name}{where}; a commit per answered turn, the last of turn "
        f"{branch['last_committed_turn']}",
        f"- Review: `claudeloop diff {record.run_id}` (`--turn N`, `--stat`)"
        + (
            f"; merge into {branch['base_branch']}: `claudeloop merge {record.run_id}`"
            if branch["base_branch"] and branch["worktree"]
            else ""
        ),
    ]


def run_summary(record: RunRecord) -> RunSummary:
    """The run's line in the fleet's overview, as its worker stores it."""
    state = record.state
    progress = record.plan_progress
    return RunSummary(
        phase=state.phase.value,
        turns=state.ledger.turns,
        dollars=round(state.ledger.dollars, 6),
        next_probe_at=state.next_probe_at,
        plan_done=progress[0] if progress else None,
        plan_total=progress[1] if progress else None,
        sent=state.ledger.attempts,
        probes=state.probes,
        probe_dollars=round(state.ledger.probe_dollars, 6),
        estimated_dollars=round(state.ledger.estimated_dollars, 6),
    )


def summary_object(summary: RunSummary, *, now: datetime) -> dict[str, Any]:
    """What the fleet's overview says of a run from its summary: the same keys, and
    values, that `status --json` gives them."""
    done, total = summary.plan_done, summary.plan_total
    # A summary a worker of before stored knows neither the prompts sent nor the
    # probes' share: said as unknown, the dollars as a total.
    sent = summary.sent
    probe_dollars = summary.probe_dollars
    return {
        "phase": summary.phase,
        "next_probe_at": summary.next_probe_at.isoformat() if summary.next_probe_at else None,
        "next_probe_in_seconds": _seconds_until(summary.next_probe_at, now),
        "plan": {"done": done, "total": total} if done is not None and total is not None else None,
        "turns": summary.turns,
        "dollars": summary.dollars,
        "sent": sent,
        "answered": summary.turns,
        "refused": None if sent is None else max(sent - summary.turns, 0),
        "probes": summary.probes,
        "turn_dollars": None
        if probe_dollars is None
        else round(max(summary.dollars - probe_dollars, 0.0), 6),
        "probe_dollars": probe_dollars,
        "estimated_dollars": summary.estimated_dollars,
        # The same words every view says them in (run_facts.py).
        "said": {
            "turns": None if sent is None else turns_words(sent, summary.turns),
            "dollars": dollars_words(
                summary.dollars, probe_dollars or 0.0, summary.estimated_dollars or 0.0
            ),
        },
    }


def _seconds_until(instant: datetime | None, now: datetime) -> float | None:
    return round(max((instant - now).total_seconds(), 0.0), 1) if instant else None


def summary_markdown(record: RunRecord) -> str:
    """summary.md: outcome and reason, spend, waiting, plan, what is left, how to go on."""
    state = record.state
    outcome = state.outcome or Outcome.FAILED
    facts = ended_facts(record)
    lines = [
        f"# claudeloop run {record.run_id}: {facts.title}",
        "",
        f"- Outcome: **{outcome.value}** (exit {state.exit_code})",
        f"- Reason: {state.reason or '-'}",
        f"- Times: {facts.times_said}",
        f"- Session: {record.session_id or '-'}",
        f"- Turns: {facts.turns_said}; {count(state.probes, 'probe')}",
        f"- Spend: {facts.dollars_said}",
        f"- Time waited for capacity: {facts.waited_said}",
        f"- Last capacity: {describe(state.capacity)}",
    ]
    if record.sandbox:
        said = record.sandbox[:1].upper() + record.sandbox[1:]
        lines.append(f"- {said}; blocked: {record.blocked}")
    if state.overage_turns:
        lines.append(
            f"- Paid overage: {state.overage_turns} turns answered on it (extra usage "
            "billed to the account)"
        )
    if record.lost_sessions:
        lines.append(f"- {lost_sessions_line(record.lost_sessions)}")
    if record.gone_sessions:
        lines.append(f"- {gone_sessions_line(record.gone_sessions)}")
    lines += _branch_lines(record)
    if facts.plan_said is not None:
        lines.append(f"- Plan: {facts.plan_said}")
    if state.last_checks:
        lines += ["", "## Verification", "", *(f"- {check_line(r)}" for r in state.last_checks)]
    if state.summary:
        lines += ["", "## Last summary", "", state.summary]
    if facts.left:
        lines += ["", f"## Remaining work ({facts.left_from_said})", ""]
        lines += [f"- {entry}" for entry in facts.left]
    if outcome is not Outcome.DONE:
        lines += ["", "## To continue", "", "```sh", continue_command(record), "```"]
    return "\n".join(lines) + "\n"


def gone_sessions_line(sessions: tuple[str, ...] | list[str]) -> str:
    """The sessions the run let go of and went on without, in one line."""
    return (
        f"Sessions let go of: {', '.join(sessions)} (Claude Code no longer had them, or "
        "`resume --new-session` asked); the run went on in a new session"
    )


def lost_sessions_line(sessions: tuple[str, ...] | list[str]) -> str:
    """The sessions whose transcripts Claude Code could not save, in one line."""
    return (
        f"Lost transcripts: {', '.join(sessions)} (Claude Code could not save them: a full "
        "disk or quota under its config directory); never resumed, the run went on in a "
        "new session"
    )
