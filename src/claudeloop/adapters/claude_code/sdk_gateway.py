"""The `Gateway` port on claude-agent-sdk: one Claude Code process kept across turns.

A turn is one prompt answered by one result. The CLI process (and its start-up of about
half a second) is kept while turns succeed and stay on the same session; it is started
afresh, resuming the session by id, for the first turn, after a crash, when the runner
asks for another session, and after a turn that failed (what follows a failure is
usually a long wait, and a fresh process re-reads credentials the user may have fixed).

A process that could not save its session's transcript (a full disk or quota) says so
only as it exits (writes_lost.py): every process the gateway ends is heard out first,
and the sessions it names are told with the turn, or by `close`.

While the CLI retries a failed request on its own (`api_retry` messages, minutes with
its default ten retries), each retry is an event, and a `stop` asked for meanwhile ends
the turn at once: nothing is being done that waiting would keep.

Every turn and probe is watched (domain.watchdog, watching.py): one whose CLI says
nothing for longer than what it awaits allows is ended, its process killed, and told
as a silent turn; a process that wrote its result and does not exit is ended within
the watchdog's exit grace. A signal the driver received (ControlInbox.interrupted)
cuts the turn in flight off at once: told as interrupted, never as a failure.

The usage of each answer is kept as it streams in (responses.py), and a turn sent again
after one was cut off bills what is knowable of it (cut_off.py).

Ahead of a probe's instant (`get_ready`), the probe's process and the turn's, resuming
its session, are started and connected side by side, and sent nothing: Claude Code
sends no model request before its prompt (nor anything at all with its nonessential
traffic off; else a `HEAD /api/hello`). At the instant only the prompts are written.
Neither is watched while it idles: the watch begins with its prompt. One never prompted
has nothing to say as it exits: it is ended at once.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import cast

import anyio
from claude_agent_sdk import (
    ClaudeSDKClient,
    CLIConnectionError,
    Message,
    ResultError,
    ResultMessage,
    StreamEvent,
    query,
)

from claudeloop.adapters import claude_cli
from claudeloop.adapters.claude_code.cut_off import NOTHING_LOST, CutOffBilling
from claudeloop.adapters.claude_code.options import (
    PROBE_PROMPT,
    GatewaySettings,
    probe_options,
    turn_options,
)
from claudeloop.adapters.claude_code.pricing import ModelSpend, TurnPrice, turn_price
from claudeloop.adapters.claude_code.reading import TurnReading, read_turn, started_session
from claudeloop.adapters.claude_code.responses import ResponseLog
from claudeloop.adapters.claude_code.sdk_logging import route_sdk_logging
from claudeloop.adapters.claude_code.startup_watch import StartupWatch
from claudeloop.adapters.claude_code.stderr_log import StderrLog
from claudeloop.adapters.claude_code.transcript import CutOff, config_directory
from claudeloop.adapters.claude_code.watching import (
    Watched,
    retry_of,
    said_in,
    watchdog_settings,
)
from claudeloop.adapters.claude_code.writes_lost import writes_lost_in_stderr, writes_lost_of
from claudeloop.adapters.redaction import Redactor
from claudeloop.application.ports import ControlInbox, EventSink, ProbeOutcome, TurnOutcome
from claudeloop.domain.loop import ControlCommand, Interrupt
from claudeloop.domain.signals import TurnSignals
from claudeloop.domain.startup import session_gone, startup_refusal
from claudeloop.domain.text import first_line
from claudeloop.domain.watchdog import InputClosed, SilentTurn, Watch, WatchdogSettings

# How often the watch over a turn looks at its clock, for an interrupt and, while the CLI
# retries, for a stop (the sleeper's slice).
STOP_POLL_SECONDS = 0.5
# How long a turn the CLI ended without a result (aborted, or dead of a signal) waits
# for the driver to hear the same signal: a terminal's Ctrl-C reaches both at once.
SIGNAL_HEARD_SECONDS = 1.0
# How long a process the gateway ends has between SIGTERM and SIGKILL.
KILL_GRACE_SECONDS = 3.0
# What the CLI ends a turn with when a signal cut it off (domain.turn_end).
_ABORTED = frozenset({"aborted_streaming", "aborted_tools"})
# What the CLI says of a session it has no conversation of: its start-up refusal since
# 2.1.337, and the words of the error result 2.1.332 ended the turn with instead.
SESSION_GONE_REASON = "resume_target_not_found"
_NO_CONVERSATION = "No conversation found"


@dataclass(frozen=True, slots=True)
class _Started:
    """A Claude Code process started and connected, and its transport."""

    client: ClaudeSDKClient
    transport: StartupWatch


class ClaudeCodeGateway:
    """Claude Code through claude-agent-sdk, one turn at a time, on one session."""

    def __init__(
        self,
        settings: GatewaySettings,
        *,
        control: ControlInbox | None = None,
        events: EventSink | None = None,
        watchdog: WatchdogSettings | None = None,
    ) -> None:
        self._settings = settings
        # How long its CLI may be silent (domain.watchdog): `watchdog`, else the run's
        # silence and the Bash limits the CLI's environment sets.
        self._watchdog = watchdog or watchdog_settings(settings, os.environ)
        # The watch's clock: one that never steps back.
        self._monotonic = time.monotonic
        # Where a stop is asked for and where retries are told, while a turn runs.
        self._control = control
        self._events = events
        # Both environments: the CLI sees settings.env over ours, and either may hold
        # the credential it ends up printing.
        redactor = settings.redactor or Redactor.from_environment(os.environ, settings.env)
        self._stderr = StderrLog(settings.stderr_log, redactor=redactor)
        # What the SDK logs (a CLI killed under it) goes to the debug log, not the screen.
        route_sdk_logging(self._stderr)
        be_patient_at_start()
        self._client: ClaudeSDKClient | None = None
        # The session the live process is on, and the running totals of its last result
        # (None before its first): a turn's cost is their growth within one process,
        # never a difference across processes (see pricing.py).
        self._session: str | None = None
        self._previous: tuple[ModelSpend, ...] | None = None
        self._previous_total = 0.0
        # The model that answered this gateway's last served turn.
        self._answered_by: str | None = None
        # What the stream says of each answer's usage, kept as it arrives; and what a
        # turn cut off left to bill (cut_off.py).
        self._responses = ResponseLog(settings.responses_log)
        self._billing = CutOffBilling(
            config_directory=self._config_directory,
            responses=self._responses,
            note=self._stderr.note,
        )
        # The transport of the last process started, which notes a refusal to start.
        self._starting: StartupWatch | None = None
        # The session the live process is on, as its messages named it; what its stderr
        # said of lost transcript lines (() its own session); and the sessions heard lost
        # and not yet told (writes_lost.py).
        self._live_session: str | None = None
        self._stderr_lost: tuple[str, ...] | None = None
        self._heard: list[str] = []
        # Whether the live process was sent a prompt (one started ahead is not, yet);
        # the next probe's process, started ahead (get_ready); and the last probe's,
        # its result read, ended once the turn after it is sent (ending a process takes
        # a moment, which the turn does not wait for).
        self._prompted = False
        self._probing: _Started | None = None
        self._spent: _Started | None = None

    def _stderr_line(self, line: str) -> None:
        """The SDK's stderr callback: into the debug log, and heard for lost writes."""
        lost = writes_lost_in_stderr(line)
        if lost is not None:
            self._stderr_lost = (*(self._stderr_lost or ()), *lost)
        self._stderr(line)

    async def run_turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnOutcome:
        outcome = await self._turn(
            prompt, session_id=session_id, interrupted_at=interrupted_at, on_session=on_session
        )
        return replace(outcome, writes_lost=self._told())

    def _told(self) -> tuple[str, ...]:
        """The sessions heard lost since last told, once each."""
        heard, self._heard = self._heard, []
        return tuple(dict.fromkeys(heard))

    async def _turn(
        self,
        prompt: str,
        *,
        session_id: str | None,
        interrupted_at: datetime | None,
        on_session: Callable[[str], None] | None,
    ) -> TurnOutcome:
        messages: list[Message] = []
        session_id, lost, since = self._billing.owed(session_id, interrupted_at)
        try:
            client = await self._send_unless_interrupted(prompt, session_id)
        except Exception as caught:
            stopped = await self._signal_heard(wait=True)
            await self._drop(listen=stopped is None, end_now=stopped is not None)
            if stopped is not None:
                return self._cut_off(interrupted=stopped)
            refused = self._refused_to_start()
            if session_id is not None and self._gone(caught):
                return self._session_gone(session_id)
            if refused is not None:
                self._stderr.note(refused)
                return self._unanswered(refused)
            where = f"resume session {session_id}" if session_id else "start a session"
            return self._unanswered(f"Claude Code could not {where}: {self._say(caught)}")
        if client is None:  # a signal came while it started
            return self._interrupted_turn()
        await self._end_spent()  # its prompt sent: the probe's process is ended now
        # Only a new session is told: one resumed is the runner's already.
        told = on_session if session_id is None else None

        def heard(message: Message) -> None:
            nonlocal told
            messages.append(message)
            named = started_session(message) if told is not None else None
            if told is not None and named is not None:
                told(named)
                told = None

        def streamed(event: StreamEvent) -> None:
            self._responses.heard(event.session_id, event.event, event.parent_tool_use_id)

        turn = Watched(
            Watch(since=self._monotonic()),
            heard=heard,
            streamed=streamed,
            transport=self._starting,
        )
        try:
            error = await self._watched(client.receive_response(), turn)
        except BaseException:
            # Cancelled or interrupted mid-turn: the process is in an unknown state.
            with anyio.CancelScope(shield=True):
                await self._drop(listen=False)
            raise
        if turn.stopped is not None:
            # Mid-turn, in the CLI's retries: ended at once, not heard out.
            await self._drop(listen=False)
            return self._unanswered(f"stopped while {turn.stopped}")
        reading = read_turn(
            messages,
            local_backend=self._settings.local_backend,
            lines=self._settings.lines,
            address=self._settings.address,
        )
        self._live_session = reading.session_id or session_id
        cut = not reading.answered or reading.signals.terminal_reason in _ABORTED
        if cut and turn.silent is None and turn.interrupted is None:
            # The CLI ended the turn short, or died: a terminal's Ctrl-C reaches it too.
            turn.interrupted = await self._signal_heard(wait=True)
        if turn.silent is not None or turn.interrupted is not None:
            await self._drop(listen=False, end_now=True)
            return self._cut_off(silent=turn.silent, interrupted=turn.interrupted)
        return await self._judge(reading, requested=session_id, error=error, lost=lost, since=since)

    async def _send_unless_interrupted(
        self, prompt: str, session_id: str | None
    ) -> ClaudeSDKClient | None:
        """`_send`, given up (None) when a signal stops the run meanwhile: a CLI that
        had a terminal's Ctrl-C while it started may never answer its start-up."""
        sent: list[ClaudeSDKClient] = []
        failed: Exception | None = None
        async with anyio.create_task_group() as group:

            async def until_interrupted() -> None:
                while await self._signal_heard(wait=False) is None:
                    await anyio.sleep(STOP_POLL_SECONDS)
                if self._starting is not None:  # ended now, not closed gently
                    with anyio.CancelScope(shield=True):
                        await self._starting.end(patience=0.0, grace=KILL_GRACE_SECONDS)
                group.cancel_scope.cancel()

            group.start_soon(until_interrupted)
            try:
                sent.append(await self._send(prompt, session_id))
            except Exception as caught:
                failed = caught  # raised as itself, not inside an exception group
            group.cancel_scope.cancel()
        if failed is not None:
            raise failed
        if sent:
            return sent[0]
        with anyio.CancelScope(shield=True):
            await self._drop(listen=False, end_now=True)
        return None

    async def _signal_heard(self, *, wait: bool) -> Interrupt | None:
        """The signal the run's driver received, if any; `wait`: given a moment to hear
        the one that may have ended the CLI."""
        if self._control is None:
            return None
        deadline = self._monotonic() + (SIGNAL_HEARD_SECONDS if wait else 0.0)
        while (heard := self._control.interrupted()) is None and self._monotonic() < deadline:
            await anyio.sleep(0.05)
        return heard

    def _interrupted_turn(self) -> TurnOutcome:
        assert self._control is not None  # only a control inbox hears signals
        interrupt = self._control.interrupted()
        assert interrupt is not None
        return self._cut_off(interrupted=interrupt)

    def _cut_off(
        self, *, silent: SilentTurn | None = None, interrupted: Interrupt | None = None
    ) -> TurnOutcome:
        """A turn ended before its result, by the watchdog or a signal."""
        if silent is not None:
            reason = f"{silent.reason}; the turn was ended"
        else:
            assert interrupted is not None
            reason = f"the run was stopped by {interrupted.words} during the turn"
        self._stderr.note(reason)
        return replace(self._unanswered(reason), silent=silent, interrupted=interrupted)

    def _config_directory(self) -> Path:
        return config_directory(claude_cli.environment(self._settings.env, os.environ))

    async def _watched(self, stream: AsyncIterator[Message], watched: Watched) -> Exception | None:
        """Reads `stream` to its end under the watch (domain.watchdog), giving each
        message but the stream's events to `watched.heard`; the SDK's error when the CLI
        exits, if any. Ended early (the watch says why): silent too long, a signal, a
        stop while the CLI retries."""
        error: Exception | None = None
        interrupted: BaseException | None = None
        async with anyio.create_task_group() as group:
            group.start_soon(self._watch_over, watched, group.cancel_scope)
            try:
                async for message in stream:
                    watched.watch = watched.watch.heard(said_in(message), at=self._monotonic())
                    if isinstance(message, StreamEvent):
                        watched.streamed(message)  # only their usage is kept
                        continue
                    watched.now = retry_of(message, self._events) if watched.tells_retries else None
                    watched.heard(message)
            except Exception as caught:
                # The SDK raises when the CLI exits; a result read before that still counts.
                error = caught
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as other:
                interrupted = other  # raised as itself, not inside an exception group
            group.cancel_scope.cancel()
        if interrupted is not None:
            raise interrupted
        return error

    async def _watch_over(self, watched: Watched, scope: anyio.CancelScope) -> None:
        """Ends the reading when the CLI is silent too long, when a signal stops the run,
        or when a stop is asked for while the CLI retries."""
        while True:
            left = watched.watch.left(self._monotonic(), self._watchdog)
            await anyio.sleep(min(STOP_POLL_SECONDS, max(left, 0.0)))
            if self._control is not None:
                watched.interrupted = self._control.interrupted()
                if watched.interrupted is not None:
                    break
                if watched.now is not None and self._control.pending() is ControlCommand.STOP:
                    watched.stopped = watched.now
                    break
            watched.silent = watched.watch.overdue(self._monotonic(), self._watchdog)
            if watched.silent is not None:
                break
        if watched.transport is not None and watched.stopped is None:
            # Silent or signalled: ended now, not closed gently (the SDK's ten seconds),
            # and to its SIGKILL even if the reading ends meanwhile.
            with anyio.CancelScope(shield=True):
                await watched.transport.end(patience=0.0, grace=KILL_GRACE_SECONDS)
        scope.cancel()

    async def get_ready(self, session_id: str | None) -> None:
        await self._end_spent()
        async with anyio.create_task_group() as group:
            group.start_soon(self._ready_to_probe)
            group.start_soon(self._ready_for_turn, session_id)
        session = f"session {session_id}'s" if session_id else "a new session's"
        ready = [
            name
            for name, up in (("the probe's", self._probing), (session, self._keeps(session_id)))
            if up
        ]
        if ready:
            self._stderr.note(f"started ahead: {' and '.join(ready)} Claude Code, idle")

    async def _ready_to_probe(self) -> None:
        """The next probe's process, started and connected; sent nothing."""
        if self._probing is not None and not self._probing.transport.exited():
            return
        await self._stand_down_probe()
        options = probe_options(self._settings, stderr=self._stderr)
        transport = StartupWatch(options)
        client = ClaudeSDKClient(options, transport=transport)
        try:
            await client.connect()
        except Exception as error:
            self._stderr.note(
                f"probe: Claude Code could not be started ahead: {self._say(error)}; "
                "the probe starts it afresh"
            )
            await transport.end(patience=0.0, grace=KILL_GRACE_SECONDS)
            return
        except BaseException:
            with anyio.CancelScope(shield=True):
                await transport.end(patience=0.0, grace=KILL_GRACE_SECONDS)
            raise
        self._probing = _Started(client, transport)

    async def _ready_for_turn(self, session_id: str | None) -> None:
        """The process for the turn on `session_id`, started and connected; sent
        nothing. The kept one when it is on that session already."""
        if self._keeps(session_id):
            return
        try:
            await self._connect(session_id)
        except Exception as error:
            where = f"resuming session {session_id}" if session_id else "for a new session"
            self._stderr.note(
                f"Claude Code could not be started ahead, {where}: {self._say(error)}; "
                "the turn starts it afresh"
            )
            await self._end_unconnected()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._end_unconnected()
            raise

    def _keeps(self, session_id: str | None) -> bool:
        """Whether the live process is the one for a turn on `session_id`: on that
        session, or started ahead for a new one and not prompted yet."""
        return (
            self._client is not None
            and session_id == self._session
            and (session_id is not None or not self._prompted)
        )

    async def _end_unconnected(self) -> None:
        """Ends the process `_connect` started and could not connect to (or was
        cancelled while it connected)."""
        if self._client is None and self._starting is not None:
            await self._starting.end(patience=0.0, grace=KILL_GRACE_SECONDS)

    async def stand_down(self) -> None:
        await self._end_all()

    async def _end_all(self) -> None:
        """Ends every process, side by side: each may take a moment to exit."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._stand_down_probe)
            group.start_soon(self._end_spent)
            group.start_soon(self._drop)

    async def _stand_down_probe(self) -> None:
        """Ends the probe's process started ahead, if any: it was sent nothing."""
        started, self._probing = self._probing, None
        if started is not None:
            await self._end_started(started)

    async def _end_spent(self) -> None:
        """Ends the last probe's process, its result read."""
        spent, self._spent = self._spent, None
        if spent is not None:
            await self._end_started(spent)

    async def _end_started(self, started: _Started) -> None:
        """Ends a probe's process at once: it keeps no session, so has nothing to say."""
        await started.transport.end(patience=0.0, grace=KILL_GRACE_SECONDS)
        try:
            await started.client.disconnect()
        except Exception as error:
            self._stderr.note(f"probe: closing Claude Code: {self._say(error)}")

    async def probe(self) -> ProbeOutcome:
        await self._end_spent()
        started, self._probing = self._probing, None
        if started is not None:
            outcome = await self._probe_on(started)
            if outcome is not None:
                return outcome
        return await self._probe_afresh()

    async def _probe_on(self, started: _Started) -> ProbeOutcome | None:
        """The probe on its process started ahead: only its prompt is sent now. None
        when that process died while it waited (the probe starts another)."""
        messages: list[Message] = []
        watched = Watched(
            Watch(since=self._monotonic()),
            heard=messages.append,
            transport=started.transport,
            tells_retries=False,
        )
        try:
            await started.client.query(PROBE_PROMPT)
            self._stderr.note("probe: sent on the Claude Code process started ahead")
            # Its result is all a probe reads: the process is not heard out after it.
            error = await self._watched(started.client.receive_response(), watched)
        except CLIConnectionError as gone:
            await self._end_started(started)
            self._stderr.note(
                f"probe: the Claude Code process started ahead was gone ({self._say(gone)}); "
                "starting a new one"
            )
            return None
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._end_started(started)
            raise
        self._spent = started
        return self._probe_read(messages, watched, error)

    async def _probe_afresh(self) -> ProbeOutcome:
        messages: list[Message] = []
        options = probe_options(self._settings, stderr=self._stderr)
        transport = StartupWatch(options)
        watched = Watched(Watch(since=self._monotonic()), transport=transport, tells_retries=False)

        def heard(message: Message) -> None:
            messages.append(message)
            if isinstance(message, ResultMessage):
                # Its input closes after its result: the CLI exits now, or is ended.
                watched.watch = watched.watch.heard(InputClosed(), at=self._monotonic())

        watched.heard = heard
        # An async generator, which the SDK types as any iterator: closed here, in this
        # task, whatever ends the reading.
        stream = cast(
            AsyncGenerator[Message, None],
            query(prompt=PROBE_PROMPT, options=options, transport=transport),
        )
        async with contextlib.aclosing(stream):
            error = await self._watched(stream, watched)
        return self._probe_read(messages, watched, error)

    def _probe_read(
        self, messages: list[Message], watched: Watched, error: Exception | None
    ) -> ProbeOutcome:
        """What a probe's messages say, and what it cost."""
        if watched.silent is not None:
            self._stderr.note(f"probe: {watched.silent.reason}; it was ended")
            error = None  # the SDK's word for the process it ended says nothing more
        elif error is not None and not isinstance(error, ResultError):
            # A CLI exits 1 after an error result, which it has already reported.
            self._stderr.note(f"probe ended without a result: {self._say(error)}")
        reading = read_turn(
            messages, local_backend=self._settings.local_backend, address=self._settings.address
        )
        # A probe is a process of its own: its first (and only) result.
        price = _price(reading, previous=None, previous_total=0.0)
        return ProbeOutcome(
            signals=reading.signals,
            cost_usd=price.listed_usd,
            guessed_cost_usd=price.guessed_usd,
            guessed_models=price.guessed_models,
        )

    async def close(self) -> tuple[str, ...]:
        await self._end_all()
        return self._told()

    async def _send(self, prompt: str, session_id: str | None) -> ClaudeSDKClient:
        kept = self._keeps(session_id)
        if kept and not self._prompted:
            self._stderr.note("turn: sent on the Claude Code process started ahead")
        if not kept:
            await self._connect(session_id)
        assert self._client is not None
        try:
            await self._client.query(prompt)
        except CLIConnectionError:
            if not kept:
                raise
            # The kept process died while idle: start one afresh on the same session.
            self._stderr.note("the kept Claude Code process was gone; starting a new one")
            await self._connect(session_id)
            assert self._client is not None
            await self._client.query(prompt)
        self._prompted = True
        self._responses.prompted(session_id)
        return self._client

    async def _connect(self, session_id: str | None) -> None:
        await self._drop()
        settings = self._settings
        if settings.model is None and self._answered_by is not None and session_id:
            # A resumed session goes on with the model that answered its last turn, which
            # after a switch-profile detour is the other profile's (a local model's name
            # sent to this backend): with no model of its own configured, this backend
            # asks for the one that answered its own turns.
            settings = replace(settings, model=self._answered_by)
        options = turn_options(settings, resume=session_id, stderr=self._stderr_line)
        self._starting = StartupWatch(options)
        client = ClaudeSDKClient(options, transport=self._starting)
        await client.connect()
        self._client = client
        self._session = session_id
        self._live_session = session_id
        self._stderr_lost = None
        self._prompted = False

    async def _judge(
        self,
        reading: TurnReading,
        *,
        requested: str | None,
        error: Exception | None,
        lost: CutOff = NOTHING_LOST,
        since: datetime | None = None,
    ) -> TurnOutcome:
        if not reading.answered:
            await self._drop()
            reason = "Claude Code ended the turn without a result"
            if error is not None:
                reason += f": {self._say(error)}"
            self._stderr.note(reason)
            return self._unanswered(reason, signals=reading.signals)
        if reading.served_by and not reading.failed:
            self._answered_by = reading.served_by[-1]
        price = _price(reading, previous=self._previous, previous_total=self._previous_total)
        settled = self._billing.settle(price, reading, lost=lost, since=since)
        price = settled.price
        self._previous, self._previous_total = reading.spends, reading.process_cost_usd
        failure: str | None = None
        if requested is not None and reading.session_id != requested:
            failure = (
                f"Claude Code answered on session {reading.session_id} instead of "
                f"{requested}; claudeloop does not continue in a new session silently"
            )
        elif reading.cli_stop is not None:
            failure = f"Claude Code stopped the turn: {self._stderr.redact(reading.cli_stop)}"
        if failure is not None or reading.failed or error is not None:
            await self._drop()
        else:
            self._session = reading.session_id
        return TurnOutcome(
            signals=reading.signals,
            structured=reading.structured,
            final_text=reading.final_text,
            cost_usd=price.listed_usd,
            estimated_cost_usd=settled.estimated_usd,
            guessed_cost_usd=price.guessed_usd,
            guessed_models=price.guessed_models,
            session_id=reading.session_id,
            denied_tools=reading.denied_tools,
            blocked=reading.blocked,
            failure=failure,
            cut_off_owed=settled.owed,
            stopped_by_hook=reading.stopped_by_hook,
            refused_by_model=reading.refused_by_model,
        )

    def _gone(self, caught: Exception) -> bool:
        """Whether the CLI refused to resume because it has no conversation of the session:
        `resume_target_not_found` since 2.1.337, an error result saying "No conversation
        found" before."""
        refusal = self._starting.refusal if self._starting is not None else None
        if refusal is not None:
            return refusal[0] == SESSION_GONE_REASON
        return _NO_CONVERSATION in self._say(caught)

    def _session_gone(self, session_id: str) -> TurnOutcome:
        line = session_gone(session_id)
        self._stderr.note(line)
        return replace(self._unanswered(line), gone_session=session_id)

    def _refused_to_start(self) -> str | None:
        """The line for a CLI that refused to start and said why (startup_watch.py)."""
        refusal = self._starting.refusal if self._starting is not None else None
        if refusal is None:
            return None
        reason, said = refusal
        return self._stderr.redact(startup_refusal(reason, said))

    async def _drop(self, *, listen: bool = True, end_now: bool = False) -> None:
        """Ends the live process; `listen`: heard out first, for what it says of a
        transcript it could not save (not when cancelled: it is in an unknown state),
        and ended if it does not exit within the watchdog's exit grace; `end_now`:
        ended at once (silent, or cut off by a signal). One never prompted (started
        ahead) has written nothing to lose, and is ended at once."""
        if not self._prompted:
            listen, end_now = False, True
        client, self._client = self._client, None
        self._session = None
        self._previous, self._previous_total = None, 0.0
        if client is None:
            return
        said: list[str] = []
        transport = self._starting
        grace = self._watchdog.exit_grace
        exits_by = self._monotonic() + grace
        if transport is not None and listen:
            said = await self._last_words(client, transport)
        if transport is not None and (listen or end_now):
            patience = max(exits_by - self._monotonic(), 0.0) if listen else 0.0
            if await transport.end(patience=patience, grace=KILL_GRACE_SECONDS) and listen:
                self._stderr.note(
                    f"Claude Code did not exit within {grace:.0f} s of its input closing; "
                    "it was ended"
                )
        try:
            await client.disconnect()
        except Exception as error:
            # A process that already died has nothing left to close.
            self._stderr.note(f"closing Claude Code: {self._say(error)}")
        if self._stderr_lost is not None:
            said += self._stderr_lost or ([self._live_session] if self._live_session else [])
        self._stderr_lost = None
        if said:
            self._stderr.note(
                f"Claude Code could not save the transcript of {', '.join(dict.fromkeys(said))} "
                "(a full disk or quota); claudeloop does not resume it"
            )
        self._heard += said

    async def _last_words(self, client: ClaudeSDKClient, transport: StartupWatch) -> list[str]:
        """Closes the process's input and reads what it says as it exits, within the
        watchdog's exit grace: the sessions a `session_writes_lost` names (its own when
        it names none)."""
        said: list[str] = []
        with anyio.move_on_after(self._watchdog.exit_grace):
            try:
                await transport.end_input()
                async for message in client.receive_messages():
                    lost = writes_lost_of(message)
                    if lost is not None:
                        said += lost or ([self._live_session] if self._live_session else [])
            except Exception as error:  # exit 1 after an error result, a process gone
                self._stderr.note(f"Claude Code exited: {self._say(error)}")
        return said

    def _unanswered(self, reason: str, signals: TurnSignals | None = None) -> TurnOutcome:
        return TurnOutcome(
            signals=signals
            or TurnSignals(
                local_backend=self._settings.local_backend, custom_address=self._settings.address
            ),
            structured=None,
            final_text="",
            cost_usd=0.0,
            session_id=None,
            failure=reason,
        )

    def _say(self, error: BaseException) -> str:
        """One redacted line about an SDK error, for events and the debug log."""
        text = error.result if isinstance(error, ResultError) and error.result else str(error)
        return self._stderr.redact(first_line(text, longest=300, empty=type(error).__name__))


# How long the SDK waits for a starting Claude Code to answer its initialize request: it
# reads this (milliseconds) from our environment at each connect, and waits at least
# 60 s. On a machine busy with the model's own builds a minute is not enough (at load
# 15-20 on two cores a start took longer, and the run failed, exit 1, "Control request
# timeout: initialize"), while a CLI that is truly stuck is rare and costs only this wait.
# The CLI itself does not read it. A value the user set is theirs.
START_PATIENCE = "CLAUDE_CODE_STREAM_CLOSE_TIMEOUT"
START_PATIENCE_MS = 300_000


def be_patient_at_start() -> None:
    """Give every Claude Code this process starts five minutes to answer its start-up."""
    os.environ.setdefault(START_PATIENCE, str(START_PATIENCE_MS))


def _price(
    reading: TurnReading, *, previous: tuple[ModelSpend, ...] | None, previous_total: float
) -> TurnPrice:
    return turn_price(
        total_usd=reading.process_cost_usd,
        usage=reading.usage,
        spends=reading.spends,
        previous=previous,
        previous_total_usd=previous_total,
        served_by=reading.served_by,
    )
