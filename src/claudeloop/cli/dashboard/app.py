"""The dashboard's web application (starlette): its routes parse the request, call the
use cases of application/dashboard.py on the ports it is given and render their
answer (pages.py); the guard in front lets through only a request with the token.

Live: each page follows an event stream of its own (server-sent events). A run's
stream reads its events.jsonl from where the page left off, a few times a second; the
list's and the accounts' streams say `refresh` when the rows change.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from claudeloop.application.branch import RunBranches
from claudeloop.application.dashboard import (
    MaskOf,
    RunsOf,
    accounts_view,
    find_entry,
    fleet_rows,
    last_hours,
    machine_report,
    machine_rows,
)
from claudeloop.application.durations import parse_duration
from claudeloop.application.errors import UsageError
from claudeloop.application.ports import AccountBoards, Fleet, RunIndex
from claudeloop.application.run_page import run_view
from claudeloop.application.run_rows import RunRow
from claudeloop.application.verbs import verb_named
from claudeloop.cli.dashboard import pages
from claudeloop.cli.dashboard.work import WorkRoutes, work_section
from claudeloop.cli.report import report_main

# How often a run's stream looks for new events, and the list's for changed rows.
EVENT_POLL_SECONDS = 0.2
ROWS_POLL_SECONDS = 1.0
# A comment line on a quiet stream now and then, so a proxy or browser keeps it open.
KEEP_ALIVE_SECONDS = 15.0
_ASSETS = {"dashboard.css": "text/css", "dashboard.js": "text/javascript"}


@dataclass(frozen=True)
class Sources:
    """What the dashboard reads and steers, filled by the composition root."""

    index: RunIndex
    runs_of: RunsOf
    boards: AccountBoards
    mask: MaskOf
    fleet: Fleet | None = None
    # A run's branch (`diff`, `rewind`, `merge`): its work on its page, and the buttons.
    branches: RunBranches | None = None
    now: Callable[[], datetime] = lambda: datetime.now(UTC)


# How long a browser stays signed in: a week, or until the dashboard stops (each start
# makes a new token, which every cookie given before fails). A phone's browser drops a
# cookie without an age when its tab closes; this one outlives that, not the token.
COOKIE_SECONDS = 7 * 24 * 3600


def cookie_name(port: int) -> str:
    """The token's cookie, one per port: two dashboards on one host keep theirs apart."""
    return f"claudeloop_dashboard_{port}"


class Guard:
    """Lets through a request that carries the token: in the URL once (answered with
    the cookie and the same URL without it), then in the cookie. A request that changes
    something must also come from the dashboard's own page (its Origin). Else 403."""

    def __init__(self, app: ASGIApp, token: str, cookie: str) -> None:
        self.app = app
        self.token = token.encode()
        self.cookie = cookie

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        given = request.query_params.get("token")
        if given is not None and self._is_token(given):
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            query = "&".join(f"{quote(k)}={quote(v)}" for k, v in rest)
            target = request.url.path + (f"?{query}" if query else "")
            answer: Response = RedirectResponse(target, status_code=303)
            answer.set_cookie(
                self.cookie,
                self.token.decode(),
                max_age=COOKIE_SECONDS,
                httponly=True,
                samesite="strict",
                path="/",
                # Served over TLS (--certfile), the cookie never travels in clear.
                secure=request.url.scheme == "https",
            )
            await answer(scope, receive, send)
            return
        if not self._is_token(request.cookies.get(self.cookie, "")):
            await _forbidden("open the URL `claudeloop dashboard` printed: it carries the token")(
                scope, receive, send
            )
            return
        if request.method not in ("GET", "HEAD") and not _same_origin(request):
            await _forbidden("a change must come from the dashboard's own page")(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)

    def _is_token(self, given: str) -> bool:
        return hmac.compare_digest(given.encode("utf-8", errors="replace"), self.token)


def _forbidden(why: str) -> Response:
    return PlainTextResponse(f"403 forbidden: {why}\n", status_code=403)


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    host = request.headers.get("host")
    return origin is not None and host is not None and origin == f"{request.url.scheme}://{host}"


def dashboard_app(sources: Sources, token: str, *, port: int) -> ASGIApp:
    """The dashboard on `sources`, behind the guard of `token`."""
    pages_of = _Pages(sources)
    work = pages_of.work
    app = Starlette(
        routes=[
            Route("/", pages_of.overview),
            Route("/accounts", pages_of.accounts),
            Route("/report", pages_of.report),
            Route("/stream", pages_of.rows_stream),
            Route("/run/{key}", pages_of.run_page),
            Route("/run/{key}/stream", pages_of.run_stream),
            Route("/run/{key}/do/{verb}", pages_of.verb, methods=["POST"]),
            Route("/fleet/{run_id}/do/{verb}", pages_of.fleet_verb, methods=["POST"]),
            Route("/run/{key}/confirm/{action}", work.confirm),
            Route("/run/{key}/do-branch/{action}", work.act, methods=["POST"]),
            Route("/static/{name}", _asset),
        ]
    )
    return Guard(app, token, cookie_name(port))


class _Pages:
    """The routes of the dashboard on its sources."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        self.work = WorkRoutes(sources.index, sources.branches, sources.mask, pages.page)

    def rows(self) -> list[RunRow]:
        return machine_rows(
            self.sources.index, self.sources.runs_of, now=self.sources.now(), mask=self.sources.mask
        )

    def overview(self, request: Request) -> Response:
        now = self.sources.now()
        fleet, problem = (
            fleet_rows(self.sources.fleet, mask=self.sources.mask)
            if self.sources.fleet is not None
            else (None, None)
        )
        said = request.query_params.get("said")
        rows = self.rows()
        recent = last_hours(rows, now=now)
        main = pages.overview_main(rows, fleet, problem, now=now, said=said, recent=recent)
        return _answer(request, "runs", "runs", main, stream="/stream")

    def run_page(self, request: Request) -> Response:
        key = request.path_params["key"]
        try:
            entry = find_entry(self.sources.index, key)
        except UsageError as error:
            return HTMLResponse(pages.page("no such run", "", _e(error), stream=None), 404)
        view = run_view(
            entry,
            self.sources.index,
            self.sources.runs_of,
            now=self.sources.now(),
            mask=self.sources.mask,
        )
        stream = f"/run/{quote(key)}/stream?offset={view.offset}"
        work = work_section(self.work.work_of(entry), key, live=view.row.driver_alive)
        main = pages.run_main(view, request.query_params.get("said"), work=work)
        return _answer(request, f"run {entry.run_id}", "", main, stream=stream)

    def report(self, request: Request) -> Response:
        """The morning report of every run of this machine: the last 12 hours, or
        `?since=7d`."""
        try:
            since = parse_duration(request.query_params.get("since", "12h"))
        except ValueError as error:
            return HTMLResponse(pages.page("report", "report", _e(error), stream=None), 400)
        made = machine_report(
            self.sources.index,
            self.sources.runs_of,
            now=self.sources.now(),
            since=since,
            mask=self.sources.mask,
        )
        return _answer(request, "report", "report", report_main(made), stream=None)

    def accounts(self, request: Request) -> Response:
        main = pages.accounts_main(
            accounts_view(self.sources.boards, self.rows(), now=self.sources.now())
        )
        return _answer(request, "accounts", "accounts", main, stream="/stream")

    async def verb(self, request: Request) -> Response:
        key = request.path_params["key"]
        chosen = verb_named(request.path_params["verb"])
        try:
            entry = find_entry(self.sources.index, key)
            if chosen is None:
                raise UsageError(f"no verb {request.path_params['verb']!r}")
            form = await request.form()
            fields = {name: value for name, value in form.items() if isinstance(value, str)}
            said = chosen.ask(self.sources.runs_of(entry.cwd), entry.run_id, fields)
        except UsageError as error:
            said = str(error)
        return RedirectResponse(f"/run/{quote(key)}?said={quote(said)}", status_code=303)

    async def fleet_verb(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        chosen = verb_named(request.path_params["verb"])
        try:
            if self.sources.fleet is None:
                raise UsageError("this dashboard shows no fleet (start it with --engine)")
            if chosen is None or chosen.ask_fleet is None:
                raise UsageError(f"no verb {request.path_params['verb']!r} for a fleet's run")
            form = await request.form()
            fields = {name: value for name, value in form.items() if isinstance(value, str)}
            said = chosen.ask_fleet(self.sources.fleet, run_id, fields)
        except UsageError as error:
            said = str(error)
        return RedirectResponse(f"/?said={quote(said)}", status_code=303)

    async def rows_stream(self, request: Request) -> Response:
        async def changes() -> AsyncIterator[str]:
            seen = _fingerprint(await run_in_threadpool(self.rows))
            quiet = 0.0
            yield "retry: 1000\n\n"
            while not await request.is_disconnected():
                await asyncio.sleep(ROWS_POLL_SECONDS)
                # In a thread: a thousand runs take a moment, which no stream should wait.
                now = _fingerprint(await run_in_threadpool(self.rows))
                quiet += ROWS_POLL_SECONDS
                if now != seen:
                    seen, quiet = now, 0.0
                    yield "event: refresh\ndata: {}\n\n"
                elif quiet >= KEEP_ALIVE_SECONDS:
                    quiet = 0.0
                    yield ": still here\n\n"

        return _event_stream(changes())

    async def run_stream(self, request: Request) -> Response:
        key = request.path_params["key"]
        try:
            entry = find_entry(self.sources.index, key)
            offset = max(int(request.query_params.get("offset", "0")), 0)
        except (UsageError, ValueError) as error:
            return PlainTextResponse(f"{error}\n", status_code=404)
        runs, mask = self.sources.runs_of(entry.cwd), self.sources.mask(entry.cwd)

        async def events() -> AsyncIterator[str]:
            at, quiet = offset, 0.0
            yield "retry: 1000\n\n"
            while not await request.is_disconnected():
                try:
                    lines, at = runs.event_lines(entry.run_id, at)
                except UsageError:
                    lines = []
                for raw in lines:
                    try:
                        event = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(event, dict):
                        shown = json.dumps(dict(mask(event)), ensure_ascii=False)
                        yield f"event: event\ndata: {shown}\n\n"
                quiet = 0.0 if lines else quiet + EVENT_POLL_SECONDS
                if quiet >= KEEP_ALIVE_SECONDS:
                    quiet = 0.0
                    yield ": still here\n\n"
                await asyncio.sleep(EVENT_POLL_SECONDS)

        return _event_stream(events())


def _asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in _ASSETS:
        return PlainTextResponse("404 not found\n", status_code=404)
    text = resources.files("claudeloop.cli.dashboard").joinpath("static", name).read_text()
    return Response(text, media_type=_ASSETS[name], headers={"Cache-Control": "no-cache"})


def _e(error: Exception) -> str:
    from html import escape

    return f"<h1>No such run</h1><p class=problem>{escape(str(error))}</p>"


def _answer(request: Request, title: str, here: str, main: str, *, stream: str | None) -> Response:
    """The main part alone (what the page's script fetches again), else the page."""
    if request.query_params.get("part") == "main":
        return HTMLResponse(main, headers={"Cache-Control": "no-store"})
    return HTMLResponse(
        pages.page(title, here, main, stream=stream), headers={"Cache-Control": "no-store"}
    )


def _fingerprint(rows: list[RunRow]) -> str:
    """The rows without what changes by itself (the countdowns): a change is news."""
    return json.dumps(
        [{k: v for k, v in row.to_json().items() if k != "next_probe_in_seconds"} for row in rows],
        sort_keys=True,
        default=str,
    )


def _event_stream(chunks: AsyncIterator[str]) -> Response:
    return StreamingResponse(
        chunks,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
