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


def test_a_long_run_id_is_whole_beside_its_timeline() -> None:
    spans = [Span("turn", START, START + timedelta(seconds=30), "turn 1")]
    drawn = timeline_svg([(LONG_ID, spans)], start=START, end=START + timedelta(seconds=30))
    label = re.search(rf'<text x="(\d+)"[^>]*>{LONG_ID}</text>', drawn)
    assert label is not None
    # Room for every character of it (about 6.2 px each at 11 px) left of the axis.
    assert int(label.group(1)) >= len(LONG_ID) * 6


def test_a_one_second_runs_axis_says_two_instants() -> None:
    spans = [Span("turn", START, START + timedelta(milliseconds=300), "turn 1")]
    for drawn in (
        timeline_svg([("r1", spans)], start=START, end=START + timedelta(milliseconds=300)),
        spend_svg([Series("r1", ((START, 0.001),))], start=START, end=START),
    ):
        instants = re.findall(r"\d\d-\d\d \d\d:\d\d:\d\d UTC", drawn)
        assert len(instants) == 2
        assert instants[0] != instants[1]
