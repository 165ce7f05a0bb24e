"""The dashboard's pages as HTML: every value escaped, every asset the dashboard's own
(no script, style or font from anywhere else). Each page has its main part alone too,
which the page's script fetches again when its event stream says something happened."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any
from urllib.parse import quote

from claudeloop.application.dashboard import front_page, section_of
from claudeloop.application.durations import duration_said, instant_said
from claudeloop.cli.dashboard.svg import spend_svg, timeline_svg
from claudeloop.cli.display import event_words
from claudeloop.domain.budget import money
from claudeloop.domain.text import count

Row = Mapping[str, Any]


def page(title: str, here: str, main: str, *, stream: str | None) -> str:
    """A whole page: the header's links, `main`, and the stream its script follows."""
    links = "".join(
        f'<a href="{href}" class="{"here" if name == here else ""}">{name}</a>'
        for name, href in (("runs", "/"), ("accounts", "/accounts"), ("report", "/report"))
    )
    follow = f' data-stream="{escape(stream)}"' if stream else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · claudeloop</title>"
        '<link rel="stylesheet" href="/static/dashboard.css"></head>'
        f"<body{follow}><header><strong>claudeloop</strong>{links}"
        '<span class="live" id="live">not live</span></header>'
        f'<main id="main">{main}</main>'
        '<script src="/static/dashboard.js"></script></body></html>'
    )


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


def _phase(row: Row) -> str:
    """How the run stands, coloured by what it asks of a person: red when it needs one."""
    word = row.get("outcome") or row.get("phase") or "?"
    # A fleet's row (no key) has no driver of this machine to say it goes on.
    section = section_of(row) if row.get("key") and row.get("phase") else ""
    return f'<span class="phase {_e(row.get("phase"))} {_e(word)} {section}">{_e(word)}</span>'


def _plan(row: Row) -> str:
    plan = row.get("plan")
    return f"{plan['done']}/{plan['total']}" if plan else "-"


def _money(row: Row) -> str:
    """A run's money in the read model's words; a fleet's row (a summary, no split of
    the probes) by its total."""
    said = row.get("said")
    if said:
        return _e(said["dollars"])
    dollars = row.get("dollars")
    return money(dollars) if isinstance(dollars, int | float) else "-"


def _turns(row: Row) -> str:
    said = row.get("said")
    if said:
        return _e(said["turns"])
    return _e(row.get("turns") or "-")


def _countdown(at: object) -> str:
    if not at:
        return ""
    when = instant_said(datetime.fromisoformat(str(at)))
    return f'<span class="countdown" data-until="{_e(at)}">at {_e(when)}</span>'


def _waits(row: Row) -> str:
    waiting = row.get("waiting_for")
    if not waiting:
        return "-"
    return f"{_e(waiting)}<br>next probe {_countdown(row.get('next_probe_at'))}"


def overview_main(
    rows: Sequence[Row],
    fleet: Sequence[Row] | None,
    fleet_problem: str | None,
    *,
    now: datetime,
    said: str | None = None,
    recent: Mapping[str, Any] | None = None,
) -> str:
    """Every run of this machine (and the fleet's, with an engine), read in ten seconds:
    what needs a person first (red), what waits and until when, what runs, what is done,
    what ended and can go on, and, folded and grey, the runs whose directory is gone;
    `recent`: what the last hours' runs did and cost (application.dashboard.last_hours)."""
    sections = front_page([dict(row) for row in rows])
    body = [f"<h1>Runs</h1><p class=muted>{len(rows)} on this machine · {instant_said(now)}</p>"]
    if sections:
        glance = " · ".join(
            f'<a href="#{section.name}" class="glance {section.name}">'
            f"{_e(section.heading)}: {len(section.rows)}</a>"
            for section in sections
        )
        body.append(f'<p class="glance">{glance}</p>')
    if recent is not None:
        outcomes = ", ".join(f"{n} {outcome}" for outcome, n in recent["outcomes"].items())
        body.append(
            f'<p class="night">The last {recent["hours"]} h: {recent["runs"]} run(s) started'
            + (f" ({_e(outcomes)})" if outcomes else "")
            + f"; turns {_e(recent['said']['turns'])}; cost {_e(recent['said']['dollars'])}. "
            '<a href="/report">The morning report</a></p>'
        )
    if said:
        body.append(f'<p class="said">{_e(said)}</p>')
    if not rows:
        body.append(
            "<p class=empty>No run started on this machine yet: "
            "<code>claudeloop run PLAN.md</code> or <code>claudeloop rehearse</code>.</p>"
        )
    for section in sections:
        table = _runs_table(section.rows)
        heading = f"{_e(section.heading)} ({len(section.rows)})"
        if section.name == "gone":
            body.append(
                f'<details class="section gone" id="gone"><summary>{heading}</summary>'
                f"{table}</details>"
            )
        else:
            body.append(
                f'<section class="section {section.name}" id="{section.name}">'
                f"<h2>{heading}</h2>{table}</section>"
            )
    if fleet is not None or fleet_problem is not None:
        body.append("<h2>The fleet</h2>")
        if fleet_problem:
            body.append(f'<p class="problem">{_e(fleet_problem)}</p>')
        if fleet:
            body.append(
                "<table><tr><th>run</th><th>state</th><th>plan</th><th>turns</th>"
                "<th>spend</th><th>next probe</th><th>account</th><th>machine</th><th></th></tr>"
            )
            for row in fleet:
                action = f"/fleet/{quote(str(row['run_id']))}/do/"
                body.append(
                    f"<tr><td>{_e(row['run_id'])}<div class=muted>{_e(row['cwd'])}</div></td>"
                    f"<td>{_phase(row)}</td><td class=num>{_plan(row)}</td>"
                    f"<td class=num>{_e(row.get('turns') or '-')}</td>"
                    f"<td class=num>{_money(row)}</td>"
                    f"<td>{_countdown(row.get('next_probe_at')) or '-'}</td>"
                    f"<td>{_e(row['account'])}</td><td>{_e(row.get('host'))}</td>"
                    f"<td>{_buttons(action, row['verbs'])}"
                    "</td></tr>"
                )
            body.append("</table>")
        elif not fleet_problem:
            body.append("<p class=empty>The fleet's queue is empty.</p>")
    return "".join(body)


def _runs_table(rows: Sequence[Row]) -> str:
    """Runs as rows: what each is (its title), how it stands and why, when, its turns,
    its cost, its plan and checks, and the machine."""
    body = [
        '<table class="runs"><tr><th>run</th><th>state and why</th><th>when</th>'
        "<th>turns</th><th>spend</th><th>plan</th><th class=wide-only>last verification</th>"
        "<th class=wide-only>machine</th></tr>"
    ]
    for row in rows:
        gone = row.get("phase") == "gone"
        problem = (
            f'<div class="{"muted" if gone else "problem"}">{_e(row["problem"])}</div>'
            if row.get("problem")
            else ""
        )
        live = " <span class=muted>(live)</span>" if row.get("driver_alive") else ""
        title = f'<div class="title">{_e(row["title"])}</div>' if row.get("title") else ""
        reason = f'<div class="reason">{_e(row["reason"])}</div>' if row.get("reason") else ""
        body.append(
            f'<tr class="run" data-key="{_e(row["key"])}">'
            f'<td>{title}<a href="/run/{quote(str(row["key"]))}">{_e(row["run_id"])}</a>{live}'
            f'<div class="muted">{_e(row["cwd"])}</div>{problem}</td>'
            f"<td>{_phase(row)}{reason}{_until(row)}</td>"
            f"<td>{_times(row)}</td>"
            f'<td class="num turns">{_turns(row)}</td>'
            f'<td class="num dollars">{_money(row)}</td>'
            f'<td class="num">{_plan(row)}</td>'
            f"<td class=wide-only>{_e(row.get('last_verification') or '-')}</td>"
            f"<td class=wide-only>{_e(row.get('host'))}</td></tr>"
        )
    body.append("</table>")
    return "".join(body)


def _until(row: Row) -> str:
    waiting = row.get("waiting_for")
    if not waiting:
        return ""
    return (
        f'<div class="waits">waits for {_e(waiting)}; next probe '
        f"{_countdown(row.get('next_probe_at'))}</div>"
    )


def _times(row: Row) -> str:
    """When the run started, ended (or how long it has been running) and how long it
    took, in the read model's words."""
    said = row.get("said") or {}
    if not said.get("times"):
        return "-"
    return f'<span class="times">{_e(said["times"])}</span>'


def _buttons(action: str, verbs: Sequence[Mapping[str, Any]]) -> str:
    """A form per verb, posting to `action` + its name, each text field under its label
    in words (an example as its placeholder): the one field of a form is required (a
    note's text); of several, any may be left empty (a raise names the caps it
    changes). The verbs without fields first, on one line, then each form on its own."""
    plain = [verb for verb in verbs if not verb["fields"]]
    filled = [verb for verb in verbs if verb["fields"]]
    return (
        '<div class="plain">'
        + "".join(_form(action, verb) for verb in plain)
        + "</div>"
        + "".join(_form(action, verb) for verb in filled)
    )


def _form(action: str, verb: Mapping[str, Any]) -> str:
    fields = verb["fields"]
    single = len(fields) == 1
    inputs = "".join(
        f'<label class="field {"wide" if single else ""}"><span>{_e(field["label"])}</span>'
        f'<input type="text" name="{_e(field["name"])}" placeholder="{_e(field["example"])}"'
        + (" required>" if single else ">")
        + "</label>"
        for field in fields
    )
    return (
        f'<form class="verb {_e(verb["name"])}" method="post" '
        f'action="{action}{quote(verb["name"])}">{inputs}'
        f'<button type="submit" class="{_e(verb["name"])}">{_e(verb["label"])}</button></form>'
    )


def run_main(view: Mapping[str, Any], said: str | None) -> str:
    """One run: where it stands, its buttons, plan, pictures, checks and events."""
    row = view["row"]
    row_said = row.get("said") or {}
    key = quote(str(row["key"]))
    body = [f"<h1>Run {_e(row['run_id'])} {_phase(row)}</h1>"]
    if row.get("title"):
        body.append(f'<p class="title">{_e(row["title"])}</p>')
    if said:
        body.append(f'<p class="said">{_e(said)}</p>')
    if row.get("problem"):
        body.append(f'<p class="problem">{_e(row["problem"])}</p>')
    body.append(
        f'<div class="card"><div class=muted>{_e(row["cwd"])} · {_e(row["host"])}</div>'
        f'<div>turns <span class="turns">{_turns(row)}</span> · '
        f"{_e(count(row.get('probes') or 0, 'probe'))} · spend "
        f'<span class="dollars">{_money(row)}</span> · waited {_e(row_said.get("waited", "-"))}'
        f"</div><div>{_times(row)}</div>"
        + (f"<div>plan: {_e(row_said['plan'])}</div>" if row_said.get("plan") else "")
        + (
            f"<div>left ({_e(row_said.get('left_from'))}): {_e('; '.join(row['left']))}</div>"
            if row.get("left")
            else ""
        )
        + f"<div>capacity: {_e(row.get('capacity', '-'))}</div>"
        + (
            f"<div>waiting; next probe {_countdown(row.get('next_probe_at'))}</div>"
            if row.get("next_probe_at")
            else ""
        )
        + (f"<div>{_e(row['reason'])}</div>" if row.get("reason") else "")
        + (
            f'<div class="sandbox">{_e(row["sandbox"])} · blocked {_e(row.get("blocked", 0))}</div>'
            if row.get("sandbox")
            else ""
        )
        + "".join(
            f'<div class="note">note waiting for the next turn: {_e(note)}</div>'
            for note in view["notes"]
        )
        + "</div>"
    )
    if row.get("driver_alive"):
        buttons = _buttons(f"/run/{key}/do/", view["verbs"])
        body.append(f'<div class="verbs">{buttons}</div>')
    if view["plan"]:
        items = "".join(
            f'<li class="{"done" if item["done"] else "open"}">'
            f"{'☑' if item['done'] else '☐'} {_e(item['text'])}</li>"
            for item in view["plan"]
        )
        body.append(f'<h2>Plan</h2><ul class="plan">{items}</ul>')
    body.append(f"<h2>Timeline</h2>{timeline_svg(view['timeline'])}")
    body.append(f"<h2>Spend over time</h2>{spend_svg(view['spend'])}")
    if view["checks"]:
        body.append("<h2>Last verification</h2>")
        for check in view["checks"]:
            verdict = "passed" if check["passed"] else "failed"
            body.append(
                f'<div class="card check {verdict}"><code>{_e(check["command"])}</code> '
                f"{_e(check['ended'])} ({duration_said(check['seconds'])})"
                f"<pre>{_e(check['tail']) or '(no output)'}</pre></div>"
            )
    events = view["events"]
    body.append(f'<h2>Events</h2><ol class="events" data-count="{len(events)}">')
    for event in reversed(events[-100:]):
        # As `claudeloop logs` says it, the line as written one click away.
        raw = json.dumps(event, ensure_ascii=False, indent=1)
        body.append(
            f'<li data-type="{_e(event["type"])}" data-ts="{_e(event["ts"])}">'
            f'<details data-key="{_e(event["ts"])} {_e(event["type"])}">'
            f"<summary><span class=muted>{_e(str(event['ts'])[11:19])}</span> "
            f'<span class="type">{_e(event["type"])}</span> '
            f'<span class="words">{_e(event_words(event))}</span></summary>'
            f"<pre>{_e(raw)}</pre></details></li>"
        )
    body.append("</ol>")
    return "".join(body)


def accounts_main(accounts: Sequence[Row]) -> str:
    """Each account of this machine's capacity board."""
    body = ["<h1>Accounts</h1>"]
    if not accounts:
        body.append(
            "<p class=empty>No account has a record on this machine's capacity board yet "
            "(runs share one with <code>share_capacity</code> on, the default).</p>"
        )
    for account in accounts:
        body.append(f'<div class="card account"><h2>account {_e(account["account"])}</h2>')
        if not account["readable"]:
            body.append('<p class="problem">Its record cannot be read.</p></div>')
            continue
        overage = "paid overage in use" if account["overage_in_use"] else "no paid overage"
        body.append(
            f"<p>{_e(account['standing'])} as last seen "
            f"{_e(instant_said(datetime.fromisoformat(account['at'])))} "
            f"({duration_said(account['age_seconds'])} ago, by a {_e(account['source'])} of run "
            f"{_e(account['run_id'] or '?')} on {_e(account['host'] or '?')}) · {overage}</p>"
        )
        windows = list(account["windows"])
        if account["window"] and not any(w["window"] == account["window"] for w in windows):
            windows.insert(
                0,
                {
                    "window": account["window"],
                    "utilization": account["utilization"],
                    "resets_at": account["resets_at"],
                    "status": account["status"],
                },
            )
        if windows:
            body.append("<table><tr><th>window</th><th>status</th><th>use</th><th>resets</th></tr>")
            for window in windows:
                use = window["utilization"]
                shown = f"{use * 100:.0f}%" if isinstance(use, int | float) else "-"
                body.append(
                    f"<tr><td>{_e(window['window'])}</td><td>{_e(window['status'] or '-')}</td>"
                    f'<td class="num">{shown}</td>'
                    f"<td>{_countdown(window['resets_at']) or '-'}</td></tr>"
                )
            body.append("</table>")
        waiting = ", ".join(account["waiting"]) or "none"
        probe = _countdown(account["next_probe_at"]) or "-"
        body.append(f"<p>runs waiting on it: {_e(waiting)} · next probe {probe}</p></div>")
    return "".join(body)
