"""The Notifier: an event sink that tells a person how a run goes, through apprise.

Deciding what to send is instant and happens as each event is emitted; sending happens
on a daemon thread, so a slow or unreachable service never holds up a turn or a wait.
Nothing here raises into the run: a notification that could not be delivered becomes
one `notify.failed` event in the run's log, and apprise's own warnings go to the run's
debug log. When the run ends, `close` gives the last notifications a few seconds to go.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl, quote, urlsplit

from claudeloop.adapters.installation import extra_hint
from claudeloop.adapters.notify.messages import (
    Notification,
    RunSoFar,
    notification_for,
)
from claudeloop.adapters.notify.urls import MASK, masked_url, url_secrets
from claudeloop.adapters.private_file import append_line
from claudeloop.adapters.redaction import Redactor
from claudeloop.adapters.run_directory import RunDirectory
from claudeloop.application.events import Event, NotifyFailed
from claudeloop.application.ports import EventSink
from claudeloop.application.records import RunRecord
from claudeloop.application.run_link import run_page_link
from claudeloop.application.settings import NOTIFY_KINDS
from claudeloop.domain.text import first_line

SERVICES_PAGE = "https://github.com/caronc/apprise/wiki"
# How long the end of a run waits for its last notifications (apprise's own connect
# and read timeouts are 4 s each).
FLUSH_SECONDS = 15.0
_APPRISE_LOGGER = "apprise"


@dataclass(frozen=True, slots=True)
class NotifyTargets:
    """Where notifications go (apprise URLs) and which kinds are sent."""

    urls: tuple[str, ...]
    on: frozenset[str] = frozenset(NOTIFY_KINDS)
    # Where the person reaches the dashboard (`dashboard_url`): each notification then
    # links to the run's page there. None: no link.
    dashboard_url: str | None = None


class NotifyUnavailable(Exception):
    """Notifications are configured but cannot be sent; the message is one line."""


class Service(Protocol):
    """One place notifications go."""

    @property
    def name(self) -> str:
        """How the service is shown: its URL with the secrets masked."""
        ...

    def send(self, notification: Notification) -> None:
        """Deliver it, or raise saying why not."""
        ...


# The services whose notifications open a link when tapped (apprise's `click`).
_CLICKABLE_SCHEMES = ("ntfy", "ntfys")


class AppriseService:
    """One apprise URL. apprise is imported on the first send, never before. `link`:
    the run's page, the click action of an ntfy notification, else the body's last
    line."""

    def __init__(self, url: str, link: str | None = None) -> None:
        self._url = url
        self._link = link
        self.name = masked_url(url)
        self._apprise: Any = None

    def send(self, notification: Notification) -> None:
        clickable = self._link is not None and _clickable(self._url)
        if self._apprise is None:
            import apprise

            service = apprise.Apprise()
            url = _with_click(self._url, self._link) if clickable and self._link else self._url
            if not service.add(url):
                raise RuntimeError(f"apprise has no service for this URL (see {SERVICES_PAGE})")
            self._apprise = service
        body = notification.body
        if self._link is not None and not clickable:
            body = f"{body}\n\n{self._link}"
        delivered = self._apprise.notify(
            body=body, title=notification.title, notify_type=notification.level
        )
        if not delivered:
            raise RuntimeError("the service did not accept it (apprise's reason is in debug.log)")


def _clickable(url: str) -> bool:
    return url.split("://", 1)[0].lower() in _CLICKABLE_SCHEMES


def _with_click(url: str, link: str) -> str:
    """The ntfy URL with the run's page as its click action, unless it names one."""
    query = urlsplit(url).query
    if any(name.lower() == "click" for name, _ in parse_qsl(query, keep_blank_values=True)):
        return url
    base, _, fragment = url.partition("#")
    joined = f"{base}{'&' if '?' in base else '?'}click={quote(link, safe='')}"
    return f"{joined}#{fragment}" if fragment else joined


def check_urls(urls: Sequence[str]) -> None:
    """Raises NotifyUnavailable when apprise is missing or has no service for a URL:
    better said at the start than found out the morning after."""
    try:
        import apprise
    except ImportError:
        raise NotifyUnavailable(
            f"apprise is not installed (the notify extra): {extra_hint('notify')}"
        ) from None
    with _quiet_apprise():
        for url in urls:
            if apprise.Apprise.instantiate(url) is None:
                raise NotifyUnavailable(
                    f"{masked_url(url)}: apprise has no service for this URL "
                    f"(the URL of each service: {SERVICES_PAGE})"
                )


class Notifier:
    """An event sink that sends a notification when an event calls for one."""

    def __init__(
        self,
        targets: NotifyTargets,
        run: RunSoFar,
        *,
        failures: EventSink,
        redactor: Redactor,
        debug_log: Path | None = None,
        services: Sequence[Service] | None = None,
        flush_seconds: float = FLUSH_SECONDS,
        link: str | None = None,
    ) -> None:
        self._run = run
        self._on: Collection[str] = targets.on
        self._failures = failures
        self._redactor = redactor
        self._services = (
            list(services)
            if services is not None
            else [AppriseService(url, link) for url in targets.urls]
        )
        self._flush_seconds = flush_seconds
        self._outbox: queue.Queue[Notification | None] = queue.Queue()
        self._failed: queue.SimpleQueue[NotifyFailed] = queue.SimpleQueue()
        self._closed = False
        self._log_handler = _DebugLogHandler(
            debug_log, redactor, tuple(targets.urls), _secrets_of(targets.urls)
        )
        _attach(self._log_handler)
        self._thread = threading.Thread(
            target=self._send_all, name="claudeloop-notify", daemon=True
        )
        self._thread.start()

    def emit(self, event: Event) -> None:
        if self._closed:
            return
        notification, self._run = notification_for(event, self._run, on=self._on)
        if notification is not None:
            self._outbox.put(
                replace(
                    notification,
                    title=self._redactor.text(notification.title),
                    body=self._redactor.text(notification.body),
                )
            )
        self._report_failures()

    def close(self) -> None:
        """Give the notifications still queued a few seconds, then report what failed."""
        if self._closed:
            return
        self._closed = True
        self._outbox.put(None)
        self._thread.join(self._flush_seconds)
        if self._thread.is_alive():
            # The one in flight, and those queued behind it (the end marker aside).
            left = self._outbox.qsize()
            self._failures.emit(
                NotifyFailed(
                    service="all",
                    kind="",
                    reason=f"{left} notification(s) still unsent {self._flush_seconds:g} s "
                    "after the run ended; given up",
                )
            )
        self._report_failures()
        _detach(self._log_handler)

    def _send_all(self) -> None:
        while True:
            notification = self._outbox.get()
            if notification is None:
                return
            for service in self._services:
                try:
                    service.send(notification)
                except Exception as error:  # a notification must never end the run
                    self._failed.put(
                        NotifyFailed(
                            service=service.name,
                            kind=notification.kind,
                            reason=first_line(str(error) or type(error).__name__, longest=300),
                        )
                    )

    def _report_failures(self) -> None:
        # Events are written on the run's thread only: the log is not shared.
        while True:
            try:
                failure = self._failed.get_nowait()
            except queue.Empty:
                return
            self._failures.emit(failure)


class _DebugLogHandler(logging.Handler):
    """apprise's warnings, appended to the run's debug log with no secret in them."""

    def __init__(
        self,
        path: Path | None,
        redactor: Redactor,
        urls: tuple[str, ...],
        secrets: tuple[str, ...],
    ) -> None:
        super().__init__(logging.WARNING)
        self._path = path
        self._redactor = redactor
        self._urls = urls
        self._secrets = secrets

    def emit(self, record: logging.LogRecord) -> None:
        if self._path is None:
            return
        try:
            text = record.getMessage()
            for url in self._urls:
                text = text.replace(url, masked_url(url))
            for secret in self._secrets:
                text = text.replace(secret, MASK)
            line = f"[notify] {record.levelname.lower()}: {first_line(text, longest=300)}"
            append_line(self._path, self._redactor.text(line))
        except Exception:  # losing a debug line must never end a run
            return


def _attach(handler: logging.Handler) -> None:
    logger = logging.getLogger(_APPRISE_LOGGER)
    logger.addHandler(handler)
    # Never apprise's lines on the screen: they belong to the debug log.
    logger.propagate = False


def _detach(handler: logging.Handler) -> None:
    logger = logging.getLogger(_APPRISE_LOGGER)
    logger.removeHandler(handler)
    if not logger.handlers:
        logger.propagate = True


@contextlib.contextmanager
def _quiet_apprise() -> Iterator[None]:
    handler = logging.NullHandler()
    _attach(handler)
    try:
        yield
    finally:
        _detach(handler)


def _secrets_of(urls: Sequence[str]) -> tuple[str, ...]:
    found = {secret for url in urls for secret in url_secrets(url)}
    return tuple(sorted(found, key=len, reverse=True))


class NoNotifications:
    """The events of a run that notifies nobody: told to no one."""

    def emit(self, event: Event) -> None:
        pass

    def close(self) -> None:
        pass


def notifier_for(
    notify: NotifyTargets | None,
    record: RunRecord,
    *,
    failures: EventSink,
    redactor: Redactor,
    directory: RunDirectory,
) -> Notifier | NoNotifications:
    """The run's notifier when notifications are configured; what failed to go is told
    to `failures`. With a dashboard address, each notification links to the page of
    the run kept in `directory`, and apprise's warnings go to its debug log."""
    if notify is None or not notify.urls:
        return NoNotifications()
    so_far = RunSoFar(
        run_id=record.run_id,
        cwd=str(record.spec.cwd),
        dollars=record.state.ledger.dollars,
        plan=record.plan_progress,
    )
    link = (
        run_page_link(notify.dashboard_url, record.run_id, directory.path)
        if notify.dashboard_url
        else None
    )
    return Notifier(
        notify,
        so_far,
        failures=failures,
        redactor=redactor,
        debug_log=directory.debug_log_path,
        link=link,
    )
