"""What a run does with a session whose transcript Claude Code could not save.

Claude Code says `session_writes_lost` (a full disk, a quota: the transcript is missing
lines) as its process exits. The process that lost them held the conversation in
memory and went on whole; a later `--resume` of that session reads the cut transcript
and continues a conversation that is not there. So such a session is never resumed: the
next turn goes on in a new session, told what the lost one was for (a handoff), and a
second loss in a row (the disk is still full: the new session's transcript is being
lost too) ends the run with the reason instead of losing a third.
"""

from __future__ import annotations

from dataclasses import dataclass

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

    `lost_in_a_row` counts the sessions in a row whose writes were lost, this one
    included when `writes_lost`.
    """
    if not writes_lost or session_id is None:
        return ResumeSession(session_id)
    if lost_in_a_row >= MAX_LOST_IN_A_ROW:
        return StopLost(
            f"Claude Code could not save the transcript of {lost_in_a_row} sessions in a "
            "row (a full disk or quota under its config directory): free space there and "
            "resume the run"
        )
    return HandOff(session_id)
