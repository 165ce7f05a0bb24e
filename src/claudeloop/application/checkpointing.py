"""Checkpoints: a commit on the run's branch per answered turn (`--worktree`,
`--checkpoint`), made once the turn is settled (its checks run), so no turn is committed
twice nor left out after a crash (domain.checkpoints)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from claudeloop.application.events import CommitRefused, Event, TurnCommitted
from claudeloop.application.ports import Checkpoints, EventSink, RunStore, WorkingTree
from claudeloop.application.records import RunRecord
from claudeloop.domain.checkpoints import commit_message, reconcile, trailers
from claudeloop.domain.verification import CheckResult


@dataclass(slots=True)
class Checkpointing:
    # The run's branch (None: no commits).
    checkpoints: Checkpoints | None
    store: RunStore
    events: EventSink
    # The working tree, whose fingerprint after a commit is what the next turn is
    # compared with (None: not looked at).
    tree: WorkingTree | None
    # What an answered turn's commit says: its summary and cost, and the checks of the
    # verification round that followed it, by turn (a resume after a crash has neither:
    # its commit says less).
    _said_of_turn: dict[int, tuple[str, float]] = field(default_factory=dict)
    _checks_of_turn: dict[int, tuple[tuple[str, bool], ...]] = field(default_factory=dict)

    def answered(self, record: RunRecord, turn: int, summary: str, cost: float) -> RunRecord:
        """The record of an answered turn, naming it the turn to commit. Saved with the
        turn's result: a crash before its commit commits it on resume."""
        if self.checkpoints is None:
            return record
        self._said_of_turn[turn] = (summary, cost)
        return replace(record, answered_turn=turn)

    def checks_ran(self, turn: int, results: Sequence[CheckResult]) -> None:
        """The checks of the verification round after `turn` so far, for its commit."""
        self._checks_of_turn[turn] = tuple((done.command.text, done.passed) for done in results)

    def settle(self, record: RunRecord) -> RunRecord:
        """A commit of the last answered turn's changes, once the turn is settled (its
        verification round over), reconciled with the branch first, so that no turn is
        committed twice nor left out after a crash; the record then says it."""
        checkpoints = self.checkpoints
        if checkpoints is None or record.state.verifying is not None:
            return record
        if record.answered_turn <= record.checkpointed_turn:
            return record
        plan = reconcile(
            recorded=record.checkpointed_turn,
            on_branch=checkpoints.last_turn(),
            answered=record.answered_turn,
        )
        said: list[Event] = []
        turn = plan.commit
        if turn is not None:
            summary, cost = self._said_of_turn.get(
                turn, (f"turn {turn}, committed as the run resumed after a stop", 0.0)
            )
            checks = self._checks_of_turn.get(turn, ())
            message = commit_message(summary, turn, trailers(record.run_id, turn, cost, checks))
            done = checkpoints.commit(message)
            if done.refused:
                said.append(
                    CommitRefused(
                        turn=turn,
                        files=done.refused,
                        reason="they hold a secret this run knows (or are too large to "
                        "be read for one); they stay in the working tree, uncommitted",
                    )
                )
            if done.sha is not None:
                said.append(
                    TurnCommitted(
                        turn=turn,
                        branch=checkpoints.branch,
                        sha=done.sha,
                        files_changed=len(done.files),
                    )
                )
                # The tree the next turn is compared with is the committed one.
                fingerprint = self.tree.fingerprint() if self.tree is not None else None
                stagnation = record.state.stagnation.rebased(fingerprint)
                record = replace(record, state=replace(record.state, stagnation=stagnation))
        record = replace(record, checkpointed_turn=turn if turn is not None else plan.settled)
        self.store.save(record)
        for event in said:
            self.events.emit(event)
        return record
