"""What a run tells a person: summary.md, the --json result and the status object."""

from __future__ import annotations

import math
import shlex
from datetime import datetime

from claudeloop.application.durations import duration_said
from claudeloop.application.json_form import JsonObject
from claudeloop.application.ports import RunSummary
from claudeloop.application.records import RunRecord
from claudeloop.application.run_facts import RunFacts, dollars_words, run_facts, turns_words
from claudeloop.application.run_status import run_branch, run_status_of, seconds_until
from claudeloop.domain.budget import BudgetLedger, ReachedCap
from claudeloop.domain.capacity import describe
from claudeloop.domain.loop import Outcome
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


def check_line(result: CheckResult) -> str:
    """One verification, in a line: command, how it ended, seconds, where its output is."""
    where = f"; output in {result.output_path}" if result.output_path else ""
    return f"`{result.command.text}` {result.ended} ({duration_said(result.seconds)}){where}"


def ended_facts(record: RunRecord) -> RunFacts:
    """The facts of a run that ended (summary.md, the `--json` result): its duration
    up to its end."""
    return run_facts(record, now=record.ended_at or record.started_at)


def result_object(record: RunRecord) -> JsonObject:
    """The object `--json` prints at the end, with the fields the design page lists."""
    state = record.state
    outcome = state.outcome or Outcome.FAILED
    facts = ended_facts(record)
    status = run_status_of(
        record, now=facts.ended_at or record.started_at, driver_pid=None, facts=facts
    )
    return {
        **status.spent_json(),
        "outcome": outcome.value,
        "exit_code": state.exit_code,
        # What is left (`left`), by the name the result has always given it.
        "remaining_work": list(facts.left),
        "blocked_on": state.blocked_on if outcome is Outcome.BLOCKED else None,
    }


def _branch_lines(record: RunRecord) -> list[str]:
    branch = run_branch(record)
    if branch is None:
        return []
    name = branch.name or "the current branch"
    where = f" in the worktree {branch.worktree}" if branch.worktree else ""
    return [
        f"- Branch: {name}{where}; a commit per answered turn, the last of turn "
        f"{branch.last_committed_turn}",
        f"- Review: `claudeloop diff {record.run_id}` (`--turn N`, `--stat`)"
        + (
            f"; merge into {branch.base_branch}: `claudeloop merge {record.run_id}`"
            if branch.base_branch and branch.worktree
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


def summary_object(summary: RunSummary, *, now: datetime) -> JsonObject:
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
        "next_probe_in_seconds": seconds_until(summary.next_probe_at, now),
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
