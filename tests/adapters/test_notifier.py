"""The Notifier as the run sees it: an event sink that never raises, never holds the run
up, sends no secret, and leaves a `notify.failed` event for what did not go."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from claudeloop.adapters.notify.messages import Notification, RunSoFar
from claudeloop.adapters.notify.sender import (
    AppriseService,
    Notifier,
    NotifyTargets,
    NotifyUnavailable,
    check_urls,
)
from claudeloop.adapters.redaction import Redactor
from claudeloop.application.events import (
    Event,
    RunFinished,
    TurnStarted,
    WaitStarted,
    event_fields,
)
from claudeloop.domain.loop import Outcome
from tests.notification_receiver import notification_receiver

RUN = RunSoFar(run_id="r1", cwd="/work/app")
DONE = RunFinished(outcome=Outcome.DONE, exit_code=0, reason="complete")
TEN = datetime(2026, 11, 30, 10)
# How long `close` may wait for a real delivery: it returns the moment the delivery is
# done, and on a loaded machine apprise's import and its POST took longer than the
# seconds a run gives them (FLUSH_SECONDS).
DELIVERED_WITHIN = 300.0


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, event: Event) -> None:
        self.events.append((event.type, dict(event_fields(event))))


class Inbox:
    name = "fake://inbox"

    def __init__(self) -> None:
        self.sent: list[Notification] = []

    def send(self, notification: Notification) -> None:
        self.sent.append(notification)


class Broken:
    name = "fake://****"

    def send(self, notification: Notification) -> None:
        raise ConnectionError("connection refused")


class Stuck:
    """A service that answers only when the test lets it."""

    name = "fake://stuck"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def send(self, notification: Notification) -> None:
        self.entered.set()
        self.release.wait(30)


def notifier(*services: Any, log: Recorder, **options: Any) -> Notifier:
    return Notifier(
        NotifyTargets(urls=("fake://x",), on=options.pop("on", frozenset(("done", "credits")))),
        RUN,
        failures=log,
        redactor=options.pop("redactor", Redactor()),
        services=list(services),
        **options,
    )


def test_the_events_that_call_for_a_notification_reach_every_service() -> None:
    first, second, log = Inbox(), Inbox(), Recorder()
    sink = notifier(first, second, log=log)
    sink.emit(TurnStarted(turn=1, session_id=None))
    sink.emit(WaitStarted(capacity="5-hour window closed", probe_at=TEN))
    sink.emit(WaitStarted(capacity="credits exhausted", probe_at=TEN, capacity_kind="credits"))
    sink.emit(DONE)
    sink.close()
    # "wait" is not in `on`: the window wait is not sent.
    assert [n.kind for n in first.sent] == ["credits", "done"]
    assert first.sent == second.sent
    assert log.events == []


def test_a_failing_service_is_reported_and_the_others_still_get_it() -> None:
    inbox, log = Inbox(), Recorder()
    sink = notifier(Broken(), inbox, log=log)
    sink.emit(DONE)
    sink.close()
    assert [n.kind for n in inbox.sent] == ["done"]
    assert log.events == [
        (
            "notify.failed",
            {"service": "fake://****", "kind": "done", "reason": "connection refused"},
        )
    ]


def test_a_service_that_does_not_answer_never_holds_the_run_up() -> None:
    stuck, log = Stuck(), Recorder()
    sink = notifier(stuck, log=log, flush_seconds=0.2)
    sink.emit(WaitStarted(capacity="credits exhausted", probe_at=TEN, capacity_kind="credits"))
    assert stuck.entered.wait(10)
    # The run goes on while the service hangs: emitting returns.
    sink.emit(TurnStarted(turn=2, session_id=None))
    sink.emit(DONE)
    sink.close()
    stuck.release.set()
    ((event_type, fields),) = log.events
    assert event_type == "notify.failed"
    # The stuck one and the done one behind it.
    assert fields["reason"].startswith("2 notification(s) still unsent")


def test_no_secret_reaches_a_notification() -> None:
    inbox, log = Inbox(), Recorder()
    sink = notifier(
        inbox, log=log, redactor=Redactor(("hunter2-secret-value",)), on=frozenset(("failed",))
    )
    sink.emit(
        RunFinished(
            outcome=Outcome.AUTH_FAILED,
            exit_code=77,
            reason="refused key sk-ant-api03-abcdefghijklmnop and hunter2-secret-value",
        )
    )
    sink.close()
    (sent,) = inbox.sent
    assert "sk-ant-api03" not in sent.body
    assert "hunter2-secret-value" not in sent.body


def test_after_close_events_are_ignored() -> None:
    inbox, log = Inbox(), Recorder()
    sink = notifier(inbox, log=log)
    sink.close()
    sink.emit(DONE)
    sink.close()
    assert inbox.sent == []


def test_apprise_delivers_to_a_json_url_on_loopback(tmp_path: Path) -> None:
    with notification_receiver() as receiver:
        log = Recorder()
        sink = Notifier(
            NotifyTargets(urls=(receiver.url("hook"),)),
            RUN,
            failures=log,
            redactor=Redactor(),
            debug_log=tmp_path / "debug.log",
            flush_seconds=DELIVERED_WITHIN,
        )
        sink.emit(DONE)
        sink.close()
    ((posted),) = receiver.received
    assert posted["title"] == "claudeloop: run r1 done — $0.00"
    assert "complete" in posted["message"]
    assert posted["type"] == "success"
    assert posted["path"] == "/hook"
    assert log.events == []


def test_a_refusing_receiver_becomes_a_notify_failed_event_and_a_debug_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    debug_log = tmp_path / "debug.log"
    with notification_receiver(status=500) as receiver:
        log = Recorder()
        url = receiver.url("hook-with-a-secret-path")
        sink = Notifier(
            NotifyTargets(urls=(url,)),
            RUN,
            failures=log,
            redactor=Redactor(),
            debug_log=debug_log,
            flush_seconds=DELIVERED_WITHIN,
        )
        sink.emit(DONE)
        sink.close()
    ((event_type, fields),) = log.events
    assert event_type == "notify.failed"
    assert fields["service"] == f"json://127.0.0.1:{receiver.port}/****"
    assert "[notify]" in debug_log.read_text()
    assert "hook-with-a-secret-path" not in debug_log.read_text()
    # apprise's own warnings stay off the screen.
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out == ""


def test_check_urls_names_a_url_apprise_has_no_service_for() -> None:
    check_urls(["json://127.0.0.1:9/hook", "ntfy://ntfy.sh/topic"])
    with pytest.raises(NotifyUnavailable, match=r"nosuchservice://\*\*\*\*/\*\*\*\*"):
        check_urls(["nosuchservice://token-abcdef/x"])


def test_without_apprise_installed_the_check_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "apprise", None)
    # This checkout is an editable install (made by uv or pip): the hint installs its
    # notify extra from here.
    with pytest.raises(
        NotifyUnavailable, match=r"the notify extra\): .*install .*-e '.*\[notify\]'"
    ):
        check_urls(["json://127.0.0.1:9/hook"])


def test_a_url_apprise_cannot_use_fails_at_send_time_without_raising() -> None:
    service = AppriseService("nosuchservice://token-abcdef/x")
    assert service.name == "nosuchservice://****/****"
    with pytest.raises(RuntimeError, match="no service"):
        service.send(Notification("done", "t", "b", "success"))


PAGE = "https://box.tailnet.ts.net:8420/run/r1.0123456789"


def _sent_with_link(url: str, tmp_path: Path) -> Recorder:
    log = Recorder()
    sink = Notifier(
        NotifyTargets(urls=(url,)),
        RUN,
        failures=log,
        redactor=Redactor(),
        debug_log=tmp_path / "debug.log",
        flush_seconds=DELIVERED_WITHIN,
        link=PAGE,
    )
    sink.emit(DONE)
    sink.close()
    return log


def test_a_notification_ends_with_the_link_to_the_runs_page(tmp_path: Path) -> None:
    with notification_receiver() as receiver:
        log = _sent_with_link(receiver.url("hook"), tmp_path)
    ((posted),) = receiver.received
    assert posted["message"].endswith("\n\n" + PAGE)
    assert "complete" in posted["message"]
    assert log.events == []


def test_an_ntfy_notification_opens_the_runs_page_when_tapped(tmp_path: Path) -> None:
    with notification_receiver() as receiver:
        log = _sent_with_link(f"ntfy://127.0.0.1:{receiver.port}/night", tmp_path)
    ((posted),) = receiver.received
    assert posted["topic"] == "night"
    assert posted["click"] == PAGE  # the click action, not a line of the body
    assert PAGE not in posted["message"]
    assert log.events == []


def test_an_ntfy_url_that_names_its_own_click_action_keeps_it(tmp_path: Path) -> None:
    with notification_receiver() as receiver:
        _sent_with_link(
            f"ntfy://127.0.0.1:{receiver.port}/night?click=https://example.org/mine", tmp_path
        )
    ((posted),) = receiver.received
    assert posted["click"] == "https://example.org/mine"
