"""WorkPlan: a markdown checklist, parsed, rendered back, and reconciled with a turn."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claudeloop.domain.plan import (
    PlanItem,
    PlanSaid,
    RewoundTo,
    WorkPlan,
    normalise,
    open_items_at,
    plan_after_rewind,
)
from tests.examples import examples

PLAN = """\
# Release plan

Some notes that are not items.

- [ ] Write the parser
* [x] Sketch the design
+ [X] Agree on names
- [ ] Add tests
  - [ ] unit tests
    * [x] property tests
1. [ ] numbered lists are not checkboxes
-[ ] nor is a bullet without a space
- [y] nor an unknown mark
- [ ] Update the docs
"""


def test_parse_reads_every_bullet_style_either_case_and_nesting() -> None:
    plan = WorkPlan.parse(PLAN)
    assert [(item.text, item.done, item.line_number) for item in plan.items] == [
        ("Write the parser", False, 5),
        ("Sketch the design", True, 6),
        ("Agree on names", True, 7),
        ("Add tests", False, 8),
        ("unit tests", False, 9),
        ("property tests", True, 10),
        ("Update the docs", False, 14),
    ]
    assert [item.bullet for item in plan.items] == ["-", "*", "+", "-", "-", "*", "-"]
    assert [item.mark for item in plan.items] == [" ", "x", "X", " ", " ", "x", " "]
    assert plan.items[4].indent == "  "
    assert plan.items[5].indent == "    "


def test_each_item_keeps_its_one_based_line_number() -> None:
    lines = PLAN.split("\n")
    for item in WorkPlan.parse(PLAN).items:
        assert lines[item.line_number - 1] == item.render()


def test_counts_open_items_and_completeness() -> None:
    plan = WorkPlan.parse(PLAN)
    assert plan.total == 7
    assert plan.done_count == 3
    assert [item.text for item in plan.open_items] == [
        "Write the parser",
        "Add tests",
        "unit tests",
        "Update the docs",
    ]
    assert not plan.complete


def test_a_plan_with_every_item_checked_is_complete() -> None:
    assert WorkPlan.parse("- [x] a\n- [X] b").complete


def test_a_plan_without_items_is_empty() -> None:
    plan = WorkPlan.parse("# Just prose\n\nNo checkboxes here.")
    assert plan.items == ()
    assert plan.total == 0
    assert plan.done_count == 0


def test_render_gives_back_the_text_parsed() -> None:
    assert WorkPlan.parse(PLAN).render() == PLAN


def test_with_items_marked_done_checks_matching_items_only() -> None:
    plan = WorkPlan.parse(PLAN)
    marked = plan.with_items_marked_done(frozenset({"  WRITE the parser. ", "unit tests"}))
    assert [item.text for item in marked.open_items] == ["Add tests", "Update the docs"]
    rendered = marked.render().split("\n")
    assert rendered[4] == "- [x] Write the parser"
    assert rendered[8] == "  - [x] unit tests"
    assert rendered[6] == "+ [X] Agree on names"  # an item already checked keeps its mark


def test_with_items_marked_done_leaves_the_original_plan_unchanged() -> None:
    plan = WorkPlan.parse(PLAN)
    plan.with_items_marked_done(frozenset({"Write the parser"}))
    assert plan.render() == PLAN
    assert plan.done_count == 3


THREE_STEPS = "- [ ] Write the parser\n- [ ] Add tests\n- [ ] Update the docs\n"


@pytest.mark.parametrize(
    "remaining",
    [
        "Add tests",
        "add TESTS",
        "  Add    tests  ",
        "Add tests.",
        "Add tests!!",
        "Step 2: Add tests",
        "step 2 - add tests;",
        "2. Add tests",
        "**Add** `tests`",
        "- [ ] Add tests",
    ],
)
def test_reconciled_with_tolerates_case_spacing_punctuation_and_step_labels(
    remaining: str,
) -> None:
    plan = WorkPlan.parse(THREE_STEPS).reconciled_with((remaining,))
    assert [(item.text, item.done) for item in plan.items] == [
        ("Write the parser", True),
        ("Add tests", False),
        ("Update the docs", True),
    ]


@pytest.mark.parametrize(
    "remaining",
    [(), ("refactor the CLI",), ("fix the flaky test", "look at CI")],
)
def test_reconciled_with_leaves_the_plan_unchanged_when_remaining_work_names_no_item(
    remaining: tuple[str, ...],
) -> None:
    plan = WorkPlan.parse(THREE_STEPS)
    assert plan.reconciled_with(remaining) == plan


def test_reconciled_with_never_unchecks_a_done_item() -> None:
    plan = WorkPlan.parse("- [x] Write the parser\n- [ ] Add tests\n- [ ] Update the docs")
    reconciled = plan.reconciled_with(("Write the parser", "Add tests"))
    assert [item.done for item in reconciled.items] == [True, False, True]


def test_merged_with_takes_the_checks_of_the_other_plan() -> None:
    ours = WorkPlan.parse(THREE_STEPS)
    on_disk = WorkPlan.parse("- [ ] Write the parser\n- [X] add tests.\n- [ ] Something new\n")
    merged = ours.merged_with(on_disk)
    assert [item.done for item in merged.items] == [False, True, False]
    assert ours.done_count == 0


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("Write the Parser", "write the parser"),
        ("  write\tthe   parser ...", "write the parser"),
        ("Step 3: write the parser", "write the parser"),
        ("STEP 3) write the parser", "write the parser"),
        ("task 12. write the parser", "write the parser"),
        ("item 4 - write the parser", "write the parser"),
        ("3) write the parser", "write the parser"),
        ("* [x] write the parser", "write the parser"),
        ("~~_write_ the **parser**~~", "write the parser"),
        ("write the parser v2", "write the parser v2"),
    ],
)
def test_normalise_ignores_what_does_not_change_the_item(text: str, key: str) -> None:
    assert normalise(text) == key


def test_an_item_key_is_its_normalised_text() -> None:
    item = PlanItem(text="Step 1: Ship it!", done=False, line_number=1)
    assert item.key == "ship it"
    assert item.render() == "- [ ] Step 1: Ship it!"


# Round trips ---------------------------------------------------------------------------


@settings(max_examples=examples(300))
@given(text=st.text())
def test_parse_then_render_round_trips_any_text(text: str) -> None:
    assert WorkPlan.parse(text).render() == text


_LOOKS_LIKE_ITEM = re.compile(r"^[ \t]*[-*+] \[[ xX]\] ")
single_line = st.text(st.characters(blacklist_characters="\n"), max_size=30)


@st.composite
def checklists(draw: st.DrawFn) -> tuple[str, list[tuple[int, str, bool]]]:
    lines: list[str] = []
    expected: list[tuple[int, str, bool]] = []
    for _ in range(draw(st.integers(min_value=0, max_value=15))):
        if draw(st.booleans()):
            indent = draw(st.text(alphabet=" \t", max_size=6))
            bullet = draw(st.sampled_from("-*+"))
            mark = draw(st.sampled_from(" xX"))
            text = draw(single_line)
            lines.append(f"{indent}{bullet} [{mark}] {text}")
            expected.append((len(lines), text, mark != " "))
        else:
            other = draw(single_line)
            if _LOOKS_LIKE_ITEM.match(other) or _LOOKS_LIKE_ITEM.match(other + " "):
                other = f"text {other}"
            lines.append(other)
    return "\n".join(lines), expected


@settings(max_examples=examples(300))
@given(checklist=checklists())
def test_parse_then_render_round_trips_any_generated_checklist(
    checklist: tuple[str, list[tuple[int, str, bool]]],
) -> None:
    text, expected = checklist
    plan = WorkPlan.parse(text)
    assert plan.render() == text
    assert [(item.line_number, item.text, item.done) for item in plan.items] == expected


@settings(max_examples=examples(200))
@given(checklist=checklists(), picks=st.sets(st.integers(min_value=0, max_value=15)))
def test_marking_done_only_ever_checks_items_and_keeps_every_other_line(
    checklist: tuple[str, list[tuple[int, str, bool]]], picks: set[int]
) -> None:
    text, _ = checklist
    plan = WorkPlan.parse(text)
    keys = frozenset(plan.items[i].text for i in picks if i < len(plan.items))
    marked = plan.with_items_marked_done(keys)
    assert marked.done_count >= plan.done_count
    assert all(
        after.done for before, after in zip(plan.items, marked.items, strict=True) if before.done
    )
    assert all(
        after.done for after in marked.items if normalise(after.text) in map(normalise, keys)
    )
    reparsed = WorkPlan.parse(marked.render())
    assert [item.done for item in reparsed.items] == [item.done for item in marked.items]
    item_lines = {item.line_number for item in plan.items}
    old_lines = text.split("\n")
    new_lines = marked.render().split("\n")
    assert len(new_lines) == len(old_lines)
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=True), start=1):
        if number not in item_lines:
            assert old == new


# after a rewind ----------------------------------------------------------------------

FOUR = WorkPlan.parse("- [x] one\n- [x] two\n- [x] three\n- [ ] four\n")


def test_the_items_open_as_of_a_turn_are_what_its_last_plan_update_said() -> None:
    history = (PlanSaid(1, ("two", "three", "four")), PlanSaid(3, ("four",)))
    assert open_items_at(history, 2) == ("two", "three", "four")
    assert open_items_at(history, 3) == ("four",)
    assert open_items_at(history, 0) is None


def test_what_the_turns_an_earlier_rewind_undid_said_no_longer_counts() -> None:
    # Turns 2 and 3 were undone by a rewind to 1; turn 4 said nothing of the plan.
    history = (
        PlanSaid(1, ("two", "three", "four")),
        PlanSaid(2, ("three", "four")),
        PlanSaid(3, ("four",)),
        RewoundTo(1),
        PlanSaid(5, ("three", "four")),
    )
    assert open_items_at(history, 4) == ("two", "three", "four")
    assert open_items_at(history, 5) == ("three", "four")


def test_a_rewind_opens_again_what_was_open_then_and_checks_nothing() -> None:
    again = plan_after_rewind(FOUR, open_then=("**Two**", "three", "four"), file_then=None)
    assert [item.done for item in again.items] == [True, False, False, False]
    assert again.render() == "- [x] one\n- [ ] two\n- [ ] three\n- [ ] four\n"
    # An item open then but unknown now (renamed since) changes nothing.
    assert plan_after_rewind(FOUR, open_then=("five",), file_then=None) == FOUR


def test_with_no_plan_update_a_rewind_takes_the_checkmarks_of_the_reset_file() -> None:
    file_then = WorkPlan.parse("- [x] one\n- [ ] two\n- [x] three\n- [ ] four\n")
    again = plan_after_rewind(FOUR, open_then=None, file_then=file_then)
    assert [item.done for item in again.items] == [True, False, True, False]
    assert plan_after_rewind(FOUR, open_then=None, file_then=None) == FOUR


@given(st.lists(st.booleans(), min_size=1, max_size=8), st.lists(st.booleans(), max_size=8))
def test_a_rewind_never_checks_an_item(done: list[bool], open_mask: list[bool]) -> None:
    plan = WorkPlan.parse(
        "\n".join(f"- [{'x' if d else ' '}] item {n}" for n, d in enumerate(done)) + "\n"
    )
    open_then = tuple(f"item {n}" for n, is_open in enumerate(open_mask) if is_open)
    again = plan_after_rewind(plan, open_then=open_then, file_then=None)
    assert all(
        not after.done or before.done for before, after in zip(plan.items, again.items, strict=True)
    )
    assert {i.key for i in again.open_items} >= {normalise(t) for t in open_then} & {
        i.key for i in plan.items
    }
