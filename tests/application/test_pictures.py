"""The report's pictures: a legend for every colour, no colour that means two things, a
label whole, and an axis of a one-second run whose two ends say different instants."""

from __future__ import annotations

import re
from datetime import timedelta

from claudeloop.application.pictures import COLOURS, LINES, Series, Span, spend_svg, timeline_svg
from tests.application.fakes import START

LONG_ID = "20261130-090000-refused-then-probed"


def test_each_runs_spend_line_is_named_in_a_legend_in_a_colour_of_its_own() -> None:
    runs = [
        Series(f"run-{n}", ((START + timedelta(seconds=n), 0.001 * (n + 1)),)) for n in range(3)
    ]
    drawn = spend_svg(runs, start=START, end=START + timedelta(minutes=5))
    legend = re.findall(r'<g class="legend">.*?</g>', drawn)
    assert len(legend) == 3
    for number, entry in enumerate(legend):
        assert f"run-{number}: $0.00{number + 1}" in entry
    # A run's line never has a colour the timeline gives a kind (a failed check's).
    assert not set(LINES) & set(COLOURS.values())


def test_a_long_run_id_is_whole_above_its_timeline() -> None:
    """A run's name starts at the picture's left margin on a line of its own, above its
    bars: never cut at the left edge, however long (a width guessed from its characters
    once cut ids of wide digits)."""
    spans = [Span("turn", START, START + timedelta(seconds=30), "turn 1")]
    longer = LONG_ID + "-and-then-some-more-words-still"
    drawn = timeline_svg([(longer, spans)], start=START, end=START + timedelta(seconds=30))
    label = re.search(rf'<text x="(\d+)" y="(\d+)"([^>]*)>{longer}</text>', drawn)
    assert label is not None
    assert int(label.group(1)) > 0
    assert "text-anchor" not in label.group(3)  # it starts where x says, going right
    bar = re.search(r'<rect x="[\d.]+" y="(\d+)"[^>]*class="span turn"', drawn)
    assert bar is not None
    assert int(label.group(2)) <= int(bar.group(1))  # its line ends where the bars begin


def test_a_refused_turn_is_marked_and_its_colour_is_in_the_legend() -> None:
    spans = [Span("turn_refused", START, START + timedelta(seconds=5), "turn 3: refused")]
    drawn = timeline_svg([("r1", spans)], start=START, end=START + timedelta(seconds=5))
    assert f'fill="{COLOURS["turn_refused"]}" class="span turn_refused"' in drawn
    legend = re.findall(r'<g class="legend">.*?</g>', drawn)
    assert any("turn refused" in entry for entry in legend)
    # One swatch per colour: a colour that means two things says both.
    assert len(legend) == len(set(COLOURS.values()))


def test_a_one_second_runs_axis_says_two_instants() -> None:
    spans = [Span("turn", START, START + timedelta(milliseconds=300), "turn 1")]
    for drawn in (
        timeline_svg([("r1", spans)], start=START, end=START + timedelta(milliseconds=300)),
        spend_svg([Series("r1", ((START, 0.001),))], start=START, end=START),
    ):
        instants = re.findall(r"\d\d-\d\d \d\d:\d\d:\d\d UTC", drawn)
        assert len(instants) == 2
        assert instants[0] != instants[1]
