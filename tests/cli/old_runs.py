"""Resuming a run directory an earlier claudeloop wrote, with fakes for Claude Code:
what the tests of files written before share."""

from __future__ import annotations

import contextlib
import io
from collections import deque
from dataclasses import dataclass

from claudeloop.adapters.claude_code.backend import Backend
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.application.driving import drive_run
from claudeloop.application.fleet_seat import NO_SEAT
from claudeloop.application.records import RunRecord
from claudeloop.cli.bootstrap.runs import wire_run
from claudeloop.domain.signals import TurnSignals
from tests.application.fakes import FakeGateway, verdict_turn


@dataclass(frozen=True)
class Resumed:
    ended: RunRecord
    gateway: FakeGateway
    before: str  # events.jsonl as the earlier version left it
    after: str  # and once the resume ended


def resumed_to_its_end(directory: RunDirectory, record: RunRecord) -> Resumed:
    """Resumes the run of a three-step plan that had done step 1: a probe finds the
    window open, then two turns write step2.txt and step3.txt (each writes its file, so
    the stagnation brake sees progress) on the run's own session."""
    project = directory.path.parents[2]
    before = directory.events_path.read_text()
    session = str(record.session_id)
    gateway = FakeGateway(
        turns=deque(
            [
                verdict_turn(summary="Wrote step2.txt.", session_id=session),
                verdict_turn(complete=True, summary="Wrote step3.txt.", session_id=session),
            ]
        ),
        probes=deque([TurnSignals()]),
    )
    gateway.on_turn = lambda n: (project / f"step{n + 1}.txt").write_text(f"step {n + 1}\n")
    with contextlib.redirect_stderr(io.StringIO()):
        ended = drive_run(
            wire_run(
                directory,
                record,
                backend=Backend(env={}),
                quiet=True,
                gateway=gateway,
                seat=NO_SEAT,
            ),
            record,
            resumed=True,
        )
    return Resumed(ended, gateway, before, directory.events_path.read_text())
