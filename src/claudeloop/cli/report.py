"""`claudeloop report`: the report of application/report.py as lines, JSON, or one
self-contained HTML file (inline SVG, inline CSS, nothing fetched)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import Path

import click

from claudeloop.application.dashboard import severity
from claudeloop.application.durations import duration_said, instant_said
from claudeloop.application.errors import UsageError
from claudeloop.application.pictures import spend_svg, timeline_svg
from claudeloop.application.report import Report, RunReport, night_report, report_object
from claudeloop.cli.output import print_json
from claudeloop.cli.params import working_directory
from claudeloop.domain.text import count


def report(
    *,
    cwd: Path | None,
    since: timedelta | None,
    as_json: bool,
    html: Path | None,
    every: bool = False,
) -> None:
    from claudeloop.cli.bootstrap import project_runs, run_mask

    if every:
        made = _machine_report(since)
    else:
        directory = working_directory(cwd)
        # Masked by the secrets a run of the directory knows, as the dashboard's is.
        made = night_report(
            project_runs(directory), now=datetime.now(UTC), since=since, mask=run_mask(directory)
        )
    if html is not None:
        try:
            html.write_text(html_page(made), encoding="utf-8")
        except OSError as error:
            raise UsageError(f"--html {html}: cannot be written ({error.strerror})") from None
        if not as_json:
            click.echo(f"claudeloop: the report of {count(len(made.runs), 'run')} is in {html}")
    if as_json:
        print_json(report_object(made))
    elif html is None:
        for line in text_lines(made):
            click.echo(line)


def _machine_report(since: timedelta | None) -> Report:
    """Every run this machine's index names, as the dashboard's report page is made."""
    from claudeloop.application.dashboard import machine_report
    from claudeloop.cli.bootstrap import project_runs, run_index, run_masks

    return machine_report(
        run_index(), project_runs, now=datetime.now(UTC), since=since, mask=run_masks()
    )


def _run_lines(run: RunReport) -> list[str]:
    facts = run.facts
    lines = [
        f"{run.run_id}  {run.outcome}: {facts.title}",
        f"  turns {facts.turns_said}, {count(facts.probes, 'probe')}, {facts.dollars_said}, "
        f"waited {facts.waited_said}",
        f"  {facts.times_said}",
    ]
    if facts.plan_said:
        lines.append(f"  plan: {facts.plan_said}")
    if run.waited_on:
        on = ", ".join(f"{what} {duration_said(s)}" for what, s in run.waited_on.items())
        lines.append(f"  waited on: {on}")
    if run.checks_passed or run.checks_failed or run.reviews_passed or run.reviews_failed:
        lines.append(
            f"  checks {run.checks_passed} passed, {run.checks_failed} failed; reviews "
            f"{run.reviews_passed} passed, {run.reviews_failed} failed"
        )
    if run.reason:
        lines.append(f"  {run.reason}")
    if run.left:
        more = f"; and {len(run.left) - 5} more" if len(run.left) > 5 else ""
        lines.append(f"  left ({facts.left_from_said}): {'; '.join(run.left[:5])}{more}")
    return lines


def _heading(made: Report) -> str:
    since = f"since {instant_said(made.since)}" if made.since else "of every run"
    totals = made.totals
    return (
        f"claudeloop report {since}: {count(totals.runs, 'run')}, "
        f"turns {totals.turns_said}, {count(totals.probes, 'probe')}, "
        f"{totals.dollars_said}, waited {totals.waited_said}"
    )


def text_lines(made: Report) -> list[str]:
    lines = [_heading(made)]
    outcomes = ", ".join(f"{n} {what}" for what, n in made.totals.outcomes.items())
    if outcomes:
        lines.append(f"  {outcomes}")
    for run in made.runs:
        lines.extend(_run_lines(run))
    lines.extend(f"{u.run_id}  unreadable: {u.problem}" for u in made.unreadable)
    return lines


_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.3em; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.n { text-align: right; }
.phase { padding: 1px 6px; border-radius: 3px; background: #e8ebef; white-space: nowrap; }
.phase.needs-you { background: #c43c3c; color: #fff; font-weight: 600; }
.phase.done { background: #dcefe2; } .phase.ended { background: #fbefcf; }
.turns.refused { color: #c43c3c; }
.run-id { white-space: nowrap; } small.path { overflow-wrap: anywhere; }
"""


def html_page(made: Report) -> str:
    """The report as one HTML file that needs nothing else."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>claudeloop report</title><style>{_STYLE}</style></head><body>"
        f"{report_main(made)}</body></html>\n"
    )


def report_main(made: Report) -> str:
    """The report's body: its heading, the runs' table, the pictures (the dashboard's
    report page shows the same)."""
    start, end = made.start, made.end
    spend = spend_svg([run.spend for run in made.runs], start=start, end=end)
    timeline = timeline_svg([(run.run_id, run.spans) for run in made.runs], start=start, end=end)
    rows = []
    for run in made.runs:
        on = "".join(
            f"<br><small>{escape(what)}: {duration_said(s)}</small>"
            for what, s in run.waited_on.items()
        )
        left = "<br>".join(escape(item) for item in run.left[:10])
        if run.left:
            left = f"<small>{escape(run.facts.left_from_said)}:</small><br>{left}"
        # How the outcome reads to a person, in the front page's colours.
        level = severity(run.outcome) or ""
        refused = " refused" if run.facts.refused else ""
        rows.append(
            f"<tr><td><strong>{escape(run.facts.title)}</strong><br>"
            f'<span class="run-id">{escape(run.run_id)}</span>'
            f'<br><small class="path">{escape(run.cwd)}</small><br>'
            f"<small>{escape(run.facts.times_said)}</small></td>"
            f'<td class="outcome"><span class="phase {escape(run.outcome)} {level}">'
            f"{escape(run.outcome)}</span><br>"
            f"<small>{escape(run.reason)}</small></td>"
            f'<td class="n turns{refused}">{escape(run.facts.turns_said)}</td>'
            f'<td class="n dollars">{escape(run.facts.dollars_said)}</td>'
            f'<td class="n">{run.facts.waited_said}{on}</td>'
            f'<td class="n">{run.checks_passed} / {run.checks_failed}<br>'
            f"{run.reviews_passed} / {run.reviews_failed}</td>"
            f"<td>{left}</td></tr>"
        )
    unreadable = "".join(
        f"<li>{escape(u.run_id)}: {escape(u.problem)}</li>" for u in made.unreadable
    )
    return (
        f"<h1>{escape(_heading(made))}</h1>"
        "<h2>Runs</h2><table class=report-runs><tr><th>run</th><th>outcome</th><th>turns</th>"
        "<th>dollars</th><th>waited (on what)</th>"
        "<th>checks, then reviews: passed / failed</th><th>left</th></tr>"
        f"{''.join(rows)}</table>"
        + (f"<h2>Unreadable</h2><ul>{unreadable}</ul>" if unreadable else "")
        + f'<h2>Spend over time</h2><div class="scrolls">{spend}</div>'
        f'<h2>Timeline</h2><div class="scrolls">{timeline}</div>'
        f"<p><small>made {instant_said(made.now)}</small></p>"
    )
