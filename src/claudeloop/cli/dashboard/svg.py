"""The pictures of a run's page, drawn by the server as SVG: the timeline of its turns,
waits, probes, checks and reviews, and its spend over time, both on one time axis (the
stretch the run's events span), so a moment is at the same place in both.

Each picture is drawn twice, for a wide window and a narrow one (the stylesheet shows
the one that fits): a picture scaled to the window scales its words too, and drawn once
its words would be too small to read at 800 px."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from html import escape

from claudeloop.application.run_page import Stretch

# The two widths a picture is drawn at: shown at most this wide (the stylesheet), and
# in a window of 800 px about as wide as the page.
WIDE = 1000
NARROW = 720
_LANES = ("turn", "wait", "probe", "check", "review")
_LANE_HEIGHT = 24
_LEFT = 64
# About how wide a character of the pictures' words is (12 px, the stylesheet's).
_CHAR = 7.0


def axis_of(
    spans: Sequence[Stretch], series: Sequence[tuple[datetime, float]]
) -> tuple[datetime, datetime] | None:
    """The stretch both pictures of a run span: from the first instant either shows to
    the last (None: they show nothing)."""
    instants = [span.start for span in spans] + [span.end for span in spans]
    instants += [at for at, _ in series]
    if not instants:
        return None
    return min(instants), max(instants)


def _scale(start: datetime, end: datetime, width: int) -> tuple[float, float]:
    seconds = max((end - start).total_seconds(), 1.0)
    return start.timestamp(), (width - _LEFT - 10) / seconds


def _axis(first: datetime, last: datetime, y: int, width: int) -> str:
    """The first and last instants under a time axis; the axis lasts a second at least,
    so a one-second run's two labels differ."""
    last = max(last, first + timedelta(seconds=1))
    return (
        f'<text x="{_LEFT}" y="{y}" class="axis">{first:%H:%M:%S}</text>'
        f'<text x="{width - 10}" y="{y}" class="axis" text-anchor="end">'
        f"{last:%H:%M:%S} UTC</text>"
    )


def _legend(y: int, entries: Sequence[tuple[str, str]], width: int) -> tuple[str, int]:
    """A row of swatches, each `(classes, words)`: what each colour of the chart means,
    going on to a next row where the picture ends; and how many rows it took."""
    parts = []
    at, row = _LEFT, 0
    for classes, words in entries:
        wide = 24 + round(len(words) * _CHAR)
        if at + wide > width and at > _LEFT:
            at, row = _LEFT, row + 1
        top = y + row * 18
        parts.append(
            f'<g class="legend"><rect x="{at}" y="{top - 10}" width="10" height="10" '
            f'class="{classes}"/><text x="{at + 14}" y="{top}">{escape(words)}</text></g>'
        )
        at += wide
    return "".join(parts), row + 1


def _twice(draw: Callable[[int], str]) -> str:
    """The picture drawn for a wide window and for a narrow one."""
    return (
        f'<div class="picture"><div class="wide">{draw(WIDE)}</div>'
        f'<div class="narrow">{draw(NARROW)}</div></div>'
    )


def timeline_svg(spans: Sequence[Stretch], axis: tuple[datetime, datetime] | None = None) -> str:
    """One lane per kind; a stretch is a bar (red when it ended badly), a probe a tick;
    each says what it was when pointed at. `axis`: the stretch to draw (else the
    spans')."""
    if not spans:
        return '<p class="empty">No turns, waits or checks in the events yet.</p>'
    first, last = axis or (min(span.start for span in spans), max(span.end for span in spans))
    return _twice(lambda width: _timeline(spans, first, last, width))


def _timeline(spans: Sequence[Stretch], first: datetime, last: datetime, width: int) -> str:
    origin, per_second = _scale(first, last, width)
    axis_y = _LANE_HEIGHT * len(_LANES) + 20
    legend = [(f"span {lane} ok", lane) for lane in _LANES]
    legend.append(("span bad", "ended badly (a refused turn, a failed check)"))
    drawn, rows = _legend(axis_y + 24, legend, width)
    height = axis_y + 14 + rows * 18
    parts = [
        f'<svg class="timeline" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="timeline of the run">'
    ]
    for number, lane in enumerate(_LANES):
        y = number * _LANE_HEIGHT + 4
        parts.append(f'<text x="4" y="{y + 15}" class="lane">{lane}</text>')
        parts.append(
            f'<line x1="{_LEFT}" x2="{width - 10}" y1="{y + 11}" y2="{y + 11}" class="rule"/>'
        )
    for span in spans:
        y = _LANES.index(span.kind) * _LANE_HEIGHT + 4 if span.kind in _LANES else 0
        x = _LEFT + (span.start.timestamp() - origin) * per_second
        bar = max((span.end - span.start).total_seconds() * per_second, 3.0)
        state = "ok" if span.ok else "bad"
        title = f"<title>{escape(span.label)}</title>"
        parts.append(
            f'<rect x="{x:.1f}" y="{y + 3}" width="{bar:.1f}" height="16" '
            f'class="span {span.kind} {state}">{title}</rect>'
        )
    parts.append(_axis(first, last, axis_y, width))
    parts.append(drawn)
    parts.append("</svg>")
    return "".join(parts)


def spend_svg(
    series: Sequence[tuple[datetime, float]], axis: tuple[datetime, datetime] | None = None
) -> str:
    """The dollars spent by each costed event, as a rising line over `axis` (else the
    series' own stretch), the timeline's: the line starts where the events do."""
    if not series:
        return '<p class="empty">Nothing spent in the events yet.</p>'
    first, last = axis or (series[0][0], series[-1][0])
    return _twice(lambda width: _spend(series, first, last, width))


def _spend(
    series: Sequence[tuple[datetime, float]], first: datetime, last: datetime, width: int
) -> str:
    height = 150
    origin, per_second = _scale(first, last, width)
    top = max(dollars for _, dollars in series) or 1.0

    def y(dollars: float) -> float:
        return height - 24 - dollars / top * (height - 48)

    # A step line: the spend moves when a turn, probe or review is billed, and stays;
    # from the axis's start at the series' first level.
    coords: list[tuple[float, float]] = [(_LEFT, y(series[0][1]))]
    for at, dollars in series:
        x = _LEFT + (at.timestamp() - origin) * per_second
        coords.append((x, coords[-1][1]))
        coords.append((x, y(dollars)))
    coords.append((width - 10, coords[-1][1]))  # and so on to the axis's end
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    drawn, rows = _legend(
        height + 16, [("swatch line", "dollars spent so far: turns, probes, reviews")], width
    )
    return (
        f'<svg class="spend" viewBox="0 0 {width} {height + rows * 18}" role="img" '
        f'aria-label="spend over time">'
        f'<polyline points="{points}" class="line"/>'
        f'<text x="4" y="28" class="axis">${top:.4f}</text>'
        f'<text x="4" y="{height - 24}" class="axis">$0</text>'
        + _axis(first, last, height - 4, width)
        + drawn
        + "</svg>"
    )
