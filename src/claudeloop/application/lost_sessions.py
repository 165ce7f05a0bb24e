"""Sessions the run lets go of: one whose transcript Claude Code could not save (a full
disk or quota), and one Claude Code has no conversation of. Neither is ever resumed: the
next turn starts a new session, told the task again (domain.lost_writes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from claudeloop.application.events import Event, SessionReplaced, SessionWritesLost
from claudeloop.application.records import RunRecord
from claudeloop.domain.lost_writes import (
    ResumeSession,
    SessionChoice,
    StopLost,
    session_for_next_turn,
)


@dataclass(slots=True)
class LostWrites:
    """What Claude Code said of transcripts it could not save, as a drive hears it."""

    # The run's sessions whose transcripts were lost since this drive began: a second
    # one ends the run (domain.lost_writes); a resume, after the person freed space,
    # counts afresh.
    in_a_row: int = 0

    def heard(
        self,
        record: RunRecord,
        heard: Sequence[str],
        announce: list[Event],
        *,
        ending: bool = False,
    ) -> tuple[RunRecord, SessionChoice]:
        """The record once Claude Code said whose transcripts it could not save: each is
        kept in `lost_sessions`, and the run's own session is let go of, so no turn, no
        resume after a crash, resumes it (domain.lost_writes). `ending`: the run ends
        anyway (no second loss ends it again); a resume of it starts a new session."""
        fresh = tuple(s for s in dict.fromkeys(heard) if s not in record.lost_sessions)
        if not fresh:
            return record, ResumeSession(record.session_id)
        cut = record.session_id is not None and record.session_id in fresh
        if cut:
            self.in_a_row += 1
        choice = session_for_next_turn(
            record.session_id, writes_lost=cut, lost_in_a_row=self.in_a_row
        )
        if cut and record.session_id is not None:
            stops = isinstance(choice, StopLost) and not ending
            announce.append(
                SessionWritesLost(
                    session_id=record.session_id,
                    action="stop" if stops else "new_session",
                    reason=choice.reason
                    if isinstance(choice, StopLost) and stops
                    else "Claude Code could not save this session's transcript (a full disk "
                    "or quota), so a resume would continue a conversation that is not all "
                    "there: the next turn starts a new session, told the task again",
                )
            )
        lost = replace(record, lost_sessions=record.lost_sessions + fresh)
        return (replace(lost, session_id=None) if cut else lost), choice


def replace_session(record: RunRecord, reason: str, announce: list[Event]) -> RunRecord:
    """The record with its session let go of (kept in `gone_sessions`): the next turn
    starts a new one, with a handoff once a turn was answered."""
    if record.session_id is None:
        return record
    announce.append(SessionReplaced(session_id=record.session_id, reason=reason))
    return replace(
        record, session_id=None, gone_sessions=(*record.gone_sessions, record.session_id)
    )
