"""The pictures of a run's page, drawn by the server as SVG: the timeline of its turns,
waits, probes, checks and reviews, and its spend over time."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from html import escape

from claudeloop.application.run_page import Span

WIDTH = 900
_LANES = ("turn", "wait", "probe", "check", "review")
_LANE_HEIGHT = 22
_LEFT = 70


def _scale(start: datetime, end: datetime) -> tuple[float, float]:
    seconds = max((end - start).total_seconds(), 1.0)
    return start.timestamp(), (WIDTH - _LEFT - 10) / seconds


def _axis(first: datetime, last: datetime, y: int) -> str:
    """The first and last instants under a time axis; the axis lasts a second at least,
    so a one-second run's two labels differ."""
    last = max(last, first + timedelta(seconds=1))
    return (
        f'<text x="{_LEFT}" y="{y}" class="axis">{first:%H:%M:%S}</text>'
        f'<text x="{WIDTH - 10}" y="{y}" class="axis" text-anchor="end">'
        f"{last:%H:%M:%S} UTC</text>"
    )


def _legend(y: int, entries: Sequence[tuple[str, str]]) -> str:
    """A row of swatches, each `(classes, words)`: what each colour of the chart means."""
    parts = []
    at = _LEFT
    for classes, words in entries:
        parts.append(
            f'<g class="legend"><rect x="{at}" y="{y - 9}" width="10" height="10" '
            f'class="{classes}"/><text x="{at + 14}" y="{y}">{escape(words)}</text></g>'
        )
        at += 24 + round(len(words) * 6.2)
    return "".join(parts)


def timeline_svg(spans: Sequence[Span]) -> str:
    """One lane per kind; a stretch is a bar (red when it ended badly), a probe a tick;
    each says what it was when pointed at."""
    if not spans:
        return '<p class="empty">No turns, waits or checks in the events yet.</p>'
    first = min(span.start for span in spans)
    last = max(span.end for span in spans)
    origin, per_second = _scale(first, last)
    axis_y = _LANE_HEIGHT * len(_LANES) + 18
    height = axis_y + 26
    parts = [
        f'<svg class="timeline" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="timeline of the run">'
    ]
    for number, lane in enumerate(_LANES):
        y = number * _LANE_HEIGHT + 4
        parts.append(f'<text x="4" y="{y + 14}" class="lane">{lane}</text>')
        parts.append(
            f'<line x1="{_LEFT}" x2="{WIDTH - 10}" y1="{y + 10}" y2="{y + 10}" class="rule"/>'
        )
    for span in spans:
        y = _LANES.index(span.kind) * _LANE_HEIGHT + 4 if span.kind in _LANES else 0
        x = _LEFT + (span.start.timestamp() - origin) * per_second
        width = max((span.end - span.start).total_seconds() * per_second, 3.0)
        state = "ok" if span.ok else "bad"
        title = f"<title>{escape(span.label)}</title>"
        parts.append(
            f'<rect x="{x:.1f}" y="{y + 3}" width="{width:.1f}" height="14" '
            f'class="span {span.kind} {state}">{title}</rect>'
        )
    parts.append(_axis(first, last, axis_y))
    legend = [(f"span {lane} ok", lane) for lane in _LANES]
    legend.append(("span bad", "ended badly (a refused turn, a failed check)"))
    parts.append(_legend(height - 6, legend))
    parts.append("</svg>")
    return "".join(parts)


def spend_svg(series: Sequence[tuple[datetime, float]]) -> str:
    """The dollars spent by each costed event, as a rising line."""
    if not series:
        return '<p class="empty">Nothing spent in the events yet.</p>'
    height = 140
    first, last = series[0][0], series[-1][0]
    origin, per_second = _scale(first, last)
    top = max(dollars for _, dollars in series) or 1.0
    # A step line: the spend moves when a turn, probe or review is billed, and stays.
    coords: list[tuple[float, float]] = []
    for at, dollars in series:
        x = _LEFT + (at.timestamp() - origin) * per_second
        y = height - 20 - dollars / top * (height - 40)
        if coords:
            coords.append((x, coords[-1][1]))
        coords.append((x, y))
    coords.append((WIDTH - 10, coords[-1][1]))  # and so on to the axis's end
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    return (
        f'<svg class="spend" viewBox="0 0 {WIDTH} {height + 20}" role="img" '
        f'aria-label="spend over time">'
        f'<polyline points="{points}" class="line"/>'
        f'<text x="4" y="24" class="axis">${top:.4f}</text>'
        f'<text x="4" y="{height - 20}" class="axis">$0</text>'
        + _axis(first, last, height - 4)
        + _legend(height + 14, [("swatch line", "dollars spent so far: turns, probes, reviews")])
        + "</svg>"
    )
