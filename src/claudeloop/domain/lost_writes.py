"""What a run does with a session whose transcript Claude Code could not save.

Claude Code says `session_writes_lost` (a full disk, a quota: the transcript is missing
lines) as its process exits, or only a line on stderr when it exits 1 after an error
result. The process that lost them held the conversation in memory and went on whole; a
later `--resume` of that session reads the cut transcript and continues a conversation
that is not there. So such a session is never resumed: the next turn goes on in a new
session, told the task again and that the earlier conversation is lost (a handoff), and
a second loss in one drive of the run (the disk is still full: the new session's
transcript is being lost too) ends the run with the reason instead of losing a third.
"""

from __future__ import annotations

from dataclasses import dataclass

from claudeloop.domain.loop import Finish, Transition, decide_on_failure

# A new session whose writes are lost again means the disk is still full.
MAX_LOST_IN_A_ROW = 2


@dataclass(frozen=True, slots=True)
class ResumeSession:
    """The session is whole (or there is none yet): the next turn goes on it."""

    session_id: str | None


@dataclass(frozen=True, slots=True)
class HandOff:
    """The session's transcript is cut: the next turn starts a new session, with the
    task said again and told that the earlier session's conversation is lost."""

    lost_session: str


@dataclass(frozen=True, slots=True)
class StopLost:
    """New sessions lose their writes too: the run ends, saying why."""

    reason: str


SessionChoice = ResumeSession | HandOff | StopLost


def session_for_next_turn(
    session_id: str | None, *, writes_lost: bool, lost_in_a_row: int
) -> SessionChoice:
    """Where the next turn goes, once the last process said whether its writes were lost.

    `lost_in_a_row` counts the sessions whose writes were lost since the run was last
    started or resumed, this one included when `writes_lost`.
    """
    if not writes_lost or session_id is None:
        return ResumeSession(session_id)
    if lost_in_a_row >= MAX_LOST_IN_A_ROW:
        return StopLost(
            f"Claude Code could not save the transcript of {lost_in_a_row} sessions in a "
            "row (a full disk or quota under its config directory): free space there and "
            "resume the run; it goes on in a new session"
        )
    return HandOff(session_id)


def after_lost_writes(transition: Transition, choice: SessionChoice) -> Transition:
    """The turn's transition once its session's fate is known: a `StopLost` ends the run
    FAILED with its reason, unless the turn already ended it (a Done, a cap: that end
    stands, and the record still says the session is cut)."""
    if isinstance(choice, StopLost) and not isinstance(transition.decision, Finish):
        return decide_on_failure(transition.state, choice.reason)
    return transition
