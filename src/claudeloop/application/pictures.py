"""Pictures of runs drawn by the server as inline SVG: spend over time and a timeline of
turns, waits, probes, checks and reviews. Plain text in, one `<svg>` element out, no
script and nothing fetched: the morning report's HTML and the dashboard both embed them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from html import escape

from claudeloop.domain.budget import money

# What each kind of span is drawn in (colour-blind safe, readable on white).
COLOURS = {
    "turn": "#0072b2",
    "wait": "#e69f00",
    "probe": "#cc79a7",
    "check": "#009e73",
    "check_failed": "#d55e00",
    "review": "#56b4e9",
    # A turn a limit or an error refused: ended badly, as a failed check.
    "turn_refused": "#d55e00",
}
# The runs' spend lines: none of the timeline's colours (a run's line must not read as a
# failed check), told apart by their dashes too, each named in the legend.
LINES = ("#000000", "#6a3d9a", "#8c6d1f", "#7f7f7f", "#b2182b", "#1b7837")
_DASHES = ("", "6 3", "2 2", "8 3 2 3")
_FONT = 'font-family="sans-serif" font-size="12"'


# About how wide a character of _FONT is, a little more than most: a legend's entries
# are laid out by it, and two must never meet.
_CHAR = 7.2


def _flowed(words: Sequence[str], *, left: int, width: int, sample: int) -> list[tuple[int, int]]:
    """Where each legend entry goes, `(x, row)`: one after another, each its sample
    (`sample` px) and its words wide, on to a next row where the picture ends."""
    places: list[tuple[int, int]] = []
    at, row = left, 0
    for each in words:
        wide = sample + round(len(each) * _CHAR) + 18
        if at + wide > width and at > left:
            at, row = left, row + 1
        places.append((at, row))
        at += wide
    return places


def _line_style(number: int) -> tuple[str, str]:
    """The colour and dashes of the `number`th run's spend line."""
    colour = LINES[number % len(LINES)]
    dashes = _DASHES[(number // len(LINES)) % len(_DASHES)]
    return colour, f' stroke-dasharray="{dashes}"' if dashes else ""


@dataclass(frozen=True, slots=True)
class Span:
    """Something a run did from `start` to `end`: `kind` one of COLOURS' keys."""

    kind: str
    start: datetime
    end: datetime
    label: str


@dataclass(frozen=True, slots=True)
class Series:
    """A run's spend so far at each instant it changed."""

    name: str
    points: tuple[tuple[datetime, float], ...]


def spend_svg(
    series: Sequence[Series], *, start: datetime, end: datetime, width: int = 720, height: int = 220
) -> str:
    """Each run's dollars spent so far over time, one line each, on one time axis, with
    a legend naming each run's line."""
    shown = [each for each in series if each.points]
    left, right, top = 60, 10, 10
    named = [f"{each.name}: {money(each.points[-1][1])}" for each in shown]
    places = _flowed(named, left=left, width=width - right, sample=28)
    legend_rows = max((row for _, row in places), default=-1) + 1
    plot_h = height - top - 30
    height += legend_rows * 18
    plot_w = width - left - right
    most = max((p[1] for s in series for p in s.points), default=0.0) or 1.0
    span = max((end - start).total_seconds(), 1.0)

    def x(at: datetime) -> float:
        return left + plot_w * min(max((at - start).total_seconds() / span, 0.0), 1.0)

    def y(dollars: float) -> float:
        return top + plot_h * (1 - dollars / most)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="spend over time">',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#999"/>',
        f'<text x="{left - 4}" y="{top + 10}" text-anchor="end" {_FONT}>{money(most)}</text>',
        f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end" {_FONT}>$0</text>',
        *_time_labels(start, end, left, plot_w, top + plot_h + 14),
    ]
    for number, each in enumerate(shown):
        colour, dashes = _line_style(number)
        # A step line: spend moves when a turn or a probe is billed, and stays till then.
        coords: list[str] = [f"{x(each.points[0][0]):.1f},{y(0):.1f}"]
        level = 0.0
        for at, dollars in each.points:
            coords.append(f"{x(at):.1f},{y(level):.1f}")
            coords.append(f"{x(at):.1f},{y(dollars):.1f}")
            level = dollars
        coords.append(f"{x(end):.1f},{y(level):.1f}")
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dashes} '
            f'points="{" ".join(coords)}"><title>{escape(each.name)}: {money(level)}'
            "</title></polyline>"
        )
        # The legend under the axis, each run its line's sample and name.
        at_x, row = places[number]
        at_y = top + plot_h + 34 + row * 18
        parts.append(
            f'<g class="legend"><line x1="{at_x}" x2="{at_x + 22}" y1="{at_y - 4}" '
            f'y2="{at_y - 4}" stroke="{colour}" stroke-width="2"{dashes}/>'
            f'<text x="{at_x + 28}" y="{at_y}" {_FONT}>{escape(each.name)}: '
            f"{money(level)}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def timeline_svg(
    rows: Sequence[tuple[str, Sequence[Span]]],
    *,
    start: datetime,
    end: datetime,
    width: int = 720,
    row_height: int = 36,
) -> str:
    """One row per run: its name on a line of its own above its bars (whole, however
    long: never cut at the picture's edge), then its turns, waits, probes, checks and
    reviews as bars in time, each with its label as a tooltip; and a legend."""
    left, right, top = 10, 10, 24
    plot_w = width - left - right
    legend = _legend_entries()
    places = _flowed([words for _, words in legend], left=left, width=width - right, sample=14)
    legend_rows = max((row for _, row in places), default=0) + 1
    height = top + row_height * max(len(rows), 1) + 12 + legend_rows * 18
    span = max((end - start).total_seconds(), 1.0)

    def x(at: datetime) -> float:
        return left + plot_w * min(max((at - start).total_seconds() / span, 0.0), 1.0)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="timeline">',
        *_time_labels(start, end, left, plot_w, 14),
    ]
    for number, (name, spans) in enumerate(rows):
        row_y = top + number * row_height
        bar_y = row_y + 16
        parts.append(
            f'<text x="{left}" y="{row_y + 12}" class="run-name" {_FONT}>{escape(name)}</text>'
        )
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{bar_y + 8}" '
            f'y2="{bar_y + 8}" stroke="#ddd"/>'
        )
        for each in spans:
            begin, finish = x(each.start), x(each.end)
            colour = COLOURS.get(each.kind, "#777")
            parts.append(
                f'<rect x="{begin:.1f}" y="{bar_y}" width="{max(finish - begin, 2.0):.1f}" '
                f'height="16" fill="{colour}" class="span {escape(each.kind)}">'
                f"<title>{escape(each.kind.replace('_', ' '))}: "
                f"{escape(each.label)} ({each.start:%H:%M:%S}-{each.end:%H:%M:%S} UTC)"
                "</title></rect>"
            )
    legend_y = top + row_height * max(len(rows), 1) + 14
    for (colour, words), (at, row) in zip(legend, places, strict=True):
        y = legend_y + row * 18
        parts.append(
            f'<g class="legend"><rect x="{at}" y="{y - 9}" width="10" height="10" '
            f'fill="{colour}"/><text x="{at + 14}" y="{y}" {_FONT}>{escape(words)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _legend_entries() -> list[tuple[str, str]]:
    """Each colour of the timeline once, with every kind it is drawn for."""
    named: dict[str, list[str]] = {}
    for kind, colour in COLOURS.items():
        named.setdefault(colour, []).append(kind.replace("_", " "))
    return [(colour, " / ".join(kinds)) for colour, kinds in named.items()]


def _time_labels(start: datetime, end: datetime, left: int, plot_w: int, y: int) -> list[str]:
    """The instants under a time axis, in UTC: its start, middle and end; of an axis of
    a few seconds, its start and end only, the end at least a second after the start (a
    one-second run's two labels differ)."""
    end = max(end, start + timedelta(seconds=1))
    middle = start + (end - start) / 2
    marks: list[tuple[float, datetime, str]] = [(0, start, "start"), (1, end, "end")]
    if end - start >= timedelta(seconds=10):
        marks.insert(1, (0.5, middle, "middle"))
    return [
        f'<text x="{left + plot_w * fraction:.1f}" y="{y}" text-anchor="{anchor}" {_FONT}>'
        f"{at:%m-%d %H:%M:%S} UTC</text>"
        for fraction, at, anchor in marks
    ]
