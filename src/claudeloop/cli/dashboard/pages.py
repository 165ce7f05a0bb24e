"""The dashboard's pages as HTML: every value escaped, every asset the dashboard's own
(no script, style or font from anywhere else). Each page has its main part alone too,
which the page's script fetches again when its event stream says something happened."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from html import escape
from urllib.parse import quote

from claudeloop.application.dashboard import (
    AccountView,
    FleetRow,
    RecentRuns,
    front_page,
    section_of,
)
from claudeloop.application.durations import duration_said, instant_said
from claudeloop.application.run_page import RunView
from claudeloop.application.run_rows import RunRow
from claudeloop.application.verbs import Verb
from claudeloop.cli.dashboard.svg import axis_of, spend_svg, timeline_svg
from claudeloop.cli.display import event_words
from claudeloop.domain.budget import money
from claudeloop.domain.capacity import service_name
from claudeloop.domain.text import count


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
        # A page that follows a stream says whether it does (the script says "live");
        # one that does not (the report) says when it was made, in its main part.
        + ('<span class="live" id="live">connecting...</span>' if stream else "")
        + "</header>"
        f'<main id="main">{main}</main>'
        '<script src="/static/dashboard.js"></script></body></html>'
    )


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


def _phase(row: RunRow | FleetRow) -> str:
    """How the run stands, coloured by what it asks of a person: red when it needs one."""
    if isinstance(row, FleetRow):
        # A fleet's row has no driver of this machine to say it goes on.
        word, phase, section = row.phase or "?", row.phase, ""
    else:
        word, phase, section = row.outcome or row.phase or "?", row.phase, section_of(row)
    return f'<span class="phase {_e(phase)} {_e(word)} {section}">{_e(word)}</span>'


def _plan(plan: tuple[int, int] | None) -> str:
    return f"{plan[0]}/{plan[1]}" if plan else "-"


def _money(row: RunRow) -> str:
    """A run's money in the read model's words."""
    return _e(row.facts.dollars_said) if row.facts is not None else "-"


def _turns(row: RunRow) -> str:
    return _e(row.facts.turns_said) if row.facts is not None else "-"


def _countdown(at: datetime | None) -> str:
    if at is None:
        return ""
    return (
        f'<span class="countdown" data-until="{_e(at.isoformat())}">'
        f"at {_e(instant_said(at))}</span>"
    )


def overview_main(
    rows: Sequence[RunRow],
    fleet: Sequence[FleetRow] | None,
    fleet_problem: str | None,
    *,
    now: datetime,
    said: str | None = None,
    recent: RecentRuns | None = None,
) -> str:
    """Every run of this machine (and the fleet's, with an engine), read in ten seconds:
    what needs a person first (red), what waits and until when, what runs, what is done,
    what ended and can go on, and, folded and grey, the runs whose directory is gone;
    `recent`: what the last hours' runs did and cost (application.dashboard.last_hours)."""
    sections = front_page(list(rows))
    body = [f"<h1>Runs</h1><p class=muted>{len(rows)} on this machine · {instant_said(now)}</p>"]
    if sections:
        glance = " · ".join(
            f'<a href="#{section.name}" class="glance {section.name}">'
            f"{_e(section.heading)}: {len(section.rows)}</a>"
            for section in sections
        )
        body.append(f'<p class="glance">{glance}</p>')
    if recent is not None:
        outcomes = ", ".join(f"{n} {outcome}" for outcome, n in recent.outcomes)
        body.append(
            f'<p class="night">The last {recent.hours} h: {recent.runs} run(s) started'
            + (f" ({_e(outcomes)})" if outcomes else "")
            + f"; turns {_e(recent.turns_said)}; cost {_e(recent.dollars_said)}. "
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
        if section.name in ("gone", "rehearsals"):
            # Folded and grey: nothing there asks anything of a person.
            body.append(
                f'<details class="section {section.name}" id="{section.name}">'
                f"<summary>{heading}</summary>{table}</details>"
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
                action = f"/fleet/{quote(row.queued.run_id)}/do/"
                dollars = money(row.dollars) if row.dollars is not None else "-"
                body.append(
                    f"<tr><td>{_e(row.queued.run_id)}<div class=muted>{_e(row.queued.cwd)}</div>"
                    f"</td><td>{_phase(row)}</td><td class=num>{_plan(row.plan)}</td>"
                    f"<td class=num>{_e(row.turns or '-')}</td>"
                    f"<td class=num>{dollars}</td>"
                    f"<td>{_countdown(row.next_probe_at) or '-'}</td>"
                    f"<td>{_e(row.queued.account)}</td><td>{_e(row.host)}</td>"
                    f"<td>{_buttons(action, row.verbs)}"
                    "</td></tr>"
                )
            body.append("</table>")
        elif not fleet_problem:
            body.append("<p class=empty>The fleet's queue is empty.</p>")
    return "".join(body)


def _runs_table(rows: Sequence[RunRow]) -> str:
    """Runs as rows: what each is (its title), how it stands and why, when, its turns,
    its cost, its plan and checks, and the machine."""
    body = [
        '<table class="runs"><tr><th>run</th><th>state and why</th><th>when</th>'
        "<th>turns</th><th>spend</th><th>plan</th><th class=wide-only>last verification</th>"
        "<th class=wide-only>machine</th></tr>"
    ]
    for row in rows:
        gone = row.phase == "gone"
        facts, status, place = row.facts, row.status, row.place
        problem = (
            f'<div class="{"muted" if gone else "problem"}">{_e(row.problem)}</div>'
            if row.problem
            else ""
        )
        live = " <span class=muted>(live)</span>" if row.driver_alive else ""
        title = f'<div class="title">{_e(facts.title)}</div>' if facts and facts.title else ""
        reason = f'<div class="reason">{_e(facts.reason)}</div>' if facts and facts.reason else ""
        key = row.key or ""
        body.append(
            f'<tr class="run" data-key="{_e(key)}">'
            f'<td>{title}<a href="/run/{quote(key)}">{_e(row.run_id)}</a>{live}'
            f'<div class="muted">{_e(place.cwd if place else "")}</div>{problem}</td>'
            f"<td>{_phase(row)}{reason}{_until(row)}</td>"
            f"<td>{_times(row)}</td>"
            f'<td class="num turns">{_turns(row)}</td>'
            f'<td class="num dollars">{_money(row)}</td>'
            f'<td class="num">{_plan(facts.plan if facts else None)}</td>'
            f"<td class=wide-only>{_e((status and status.last_verification) or '-')}</td>"
            f"<td class=wide-only>{_e(place.host if place else None)}</td></tr>"
        )
    body.append("</table>")
    return "".join(body)


def _until(row: RunRow) -> str:
    waiting = row.status.waiting_for if row.status is not None else None
    if not waiting:
        return ""
    return (
        f'<div class="waits">waits for {_e(waiting)}; next probe '
        f"{_countdown(row.next_probe_at)}</div>"
    )


def _times(row: RunRow) -> str:
    """When the run started, ended (or how long it has been running) and how long it
    took, in the read model's words."""
    if row.facts is None:
        return "-"
    return f'<span class="times">{_e(row.facts.times_said)}</span>'


def _buttons(action: str, verbs: Sequence[Verb]) -> str:
    """A form per verb, posting to `action` + its name, each text field under its label
    in words (an example as its placeholder): the one field of a form is required (a
    note's text); of several, any may be left empty (a raise names the caps it
    changes). The verbs without fields first, on one line, then each form on its own."""
    plain = [verb for verb in verbs if not verb.fields]
    filled = [verb for verb in verbs if verb.fields]
    return (
        '<div class="plain">'
        + "".join(_form(action, verb) for verb in plain)
        + "</div>"
        + "".join(_form(action, verb) for verb in filled)
    )


def _form(action: str, verb: Verb) -> str:
    single = len(verb.fields) == 1
    inputs = "".join(
        f'<label class="field {"wide" if single else ""}"><span>{_e(field.label)}</span>'
        f'<input type="text" name="{_e(field.name)}" placeholder="{_e(field.example)}"'
        + (" required>" if single else ">")
        + "</label>"
        for field in verb.fields
    )
    return (
        f'<form class="verb {_e(verb.name)}" method="post" '
        f'action="{action}{quote(verb.name)}">{inputs}'
        f'<button type="submit" class="{_e(verb.name)}">{_e(verb.label)}</button></form>'
    )


def run_main(view: RunView, said: str | None, *, work: str = "") -> str:
    """One run: where it stands, its buttons, its work on its branch (`work`, drawn by
    work.py), plan, pictures, checks and events."""
    row, facts, status = view.row, view.row.facts, view.row.status
    key = quote(row.key or "")
    body = [f"<h1>Run {_e(row.run_id)} {_phase(row)}</h1>"]
    if facts is not None and facts.title:
        body.append(f'<p class="title">{_e(facts.title)}</p>')
    if said:
        body.append(f'<p class="said">{_e(said)}</p>')
    if row.problem:
        body.append(f'<p class="problem">{_e(row.problem)}</p>')
    place = row.place
    card = [
        f'<div class="card"><div class=muted>{_e(place.cwd if place else "")} · '
        f"{_e(place.host if place else None)}</div>"
        f'<div>turns <span class="turns">{_turns(row)}</span> · '
        f"{_e(count(facts.probes if facts else 0, 'probe'))} · spend "
        f'<span class="dollars">{_money(row)}</span> · '
        f"waited {_e(facts.waited_said if facts else '-')}"
        f"</div><div>{_times(row)}</div>"
    ]
    if facts is not None and facts.plan_said:
        card.append(f"<div>plan: {_e(facts.plan_said)}</div>")
    if facts is not None and facts.left:
        card.append(f"<div>left ({_e(facts.left_from_said)}): {_e('; '.join(facts.left))}</div>")
    card.append(f"<div>capacity: {_e(status.capacity if status else '-')}</div>")
    if row.next_probe_at is not None:
        card.append(f"<div>waiting; next probe {_countdown(row.next_probe_at)}</div>")
    if facts is not None and facts.reason:
        card.append(f"<div>{_e(facts.reason)}</div>")
    if status is not None and status.sandbox:
        card.append(
            f'<div class="sandbox">{_e(status.sandbox)} · blocked {_e(status.blocked)}</div>'
        )
    card += [
        f'<div class="note">note waiting for the next turn: {_e(note)}</div>' for note in view.notes
    ]
    body.append("".join(card) + "</div>")
    if row.driver_alive:
        buttons = _buttons(f"/run/{key}/do/", view.verbs)
        body.append(f'<div class="verbs">{buttons}</div>')
    body.append(work)
    if view.plan:
        items = "".join(
            f'<li class="{"done" if item.done else "open"}">'
            f"{'☑' if item.done else '☐'} {_e(item.text)}</li>"
            for item in view.plan
        )
        body.append(f'<h2>Plan</h2><ul class="plan">{items}</ul>')
    # One time axis for both pictures: a moment is at the same place in each.
    axis = axis_of(view.timeline, view.spend)
    body.append(f"<h2>Timeline</h2>{timeline_svg(view.timeline, axis)}")
    body.append(f"<h2>Spend over time</h2>{spend_svg(view.spend, axis)}")
    if view.checks:
        body.append("<h2>Last verification</h2>")
        for check in view.checks:
            verdict = "passed" if check.passed else "failed"
            body.append(
                f'<div class="card check {verdict}"><code>{_e(check.command)}</code> '
                f"{_e(check.ended)} ({duration_said(check.seconds)})"
                f"<pre>{_e(check.tail) or '(no output)'}</pre></div>"
            )
    events = view.events
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


def accounts_main(accounts: Sequence[AccountView]) -> str:
    """Each account of this machine's capacity board."""
    body = ["<h1>Accounts</h1>"]
    if not accounts:
        body.append(
            "<p class=empty>No account has a record on this machine's capacity board yet "
            "(runs share one with <code>share_capacity</code> on, the default).</p>"
        )
    for account in accounts:
        body.append(f'<div class="card account"><h2>account {_e(account.account)}</h2>')
        sighting = account.sighting
        if sighting is None:
            body.append('<p class="problem">Its record cannot be read.</p></div>')
            continue
        signals = sighting.signals
        overage = "paid overage in use" if signals.overage_in_use else "no paid overage"
        body.append(
            f"<p>{_e(sighting.standing)} as last seen "
            f"{_e(instant_said(sighting.at))} "
            f"({duration_said(account.age_seconds or 0)} ago, by a {_e(sighting.source)} of run "
            f"{_e(sighting.run_id or '?')} on {_e(sighting.host or '?')}) · {overage}</p>"
        )
        windows = [
            (service_name(window.window), window.status, window.utilization, window.resets_at)
            for window in signals.windows
        ]
        named = service_name(signals.rate_limit_type) if signals.rate_limit_type else None
        if named and not any(window[0] == named for window in windows):
            windows.insert(
                0, (named, signals.rate_limit_status, signals.utilization, signals.resets_at)
            )
        if windows:
            body.append("<table><tr><th>window</th><th>status</th><th>use</th><th>resets</th></tr>")
            for name, window_status, use, resets_at in windows:
                shown = f"{use * 100:.0f}%" if isinstance(use, int | float) else "-"
                body.append(
                    f"<tr><td>{_e(name)}</td><td>{_e(window_status or '-')}</td>"
                    f'<td class="num">{shown}</td>'
                    f"<td>{_countdown(resets_at) or '-'}</td></tr>"
                )
            body.append("</table>")
        waiting = ", ".join(account.waiting) or "none"
        probe = _countdown(account.next_probe_at) or "-"
        body.append(f"<p>runs waiting on it: {_e(waiting)} · next probe {probe}</p></div>")
    return "".join(body)
