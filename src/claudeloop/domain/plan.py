"""A markdown plan's checklist, and how a turn's remaining work maps back onto it."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import assert_never

_CHECKBOX = re.compile(r"^(?P<indent>[ \t]*)(?P<bullet>[-*+]) \[(?P<mark>[ xX])\] (?P<text>.*)$")
_LEADING_LABEL = re.compile(r"^(?:(?:step|item|task)\s*\d+\s*[:.)-]|\d+\s*[.):-])\s*")
_CHECKBOX_PREFIX = re.compile(r"^[-*+]?\s*\[[ xX]\]\s*")
_DECORATION = re.compile(r"[*_`~]")
_TRAILING_PUNCTUATION = re.compile(r"[\s.,;:!?]+$")


@dataclass(frozen=True, slots=True)
class PlanItem:
    text: str
    done: bool
    line_number: int  # 1-based, as an editor shows it
    indent: str = ""
    bullet: str = "-"
    mark: str = " "

    @property
    def key(self) -> str:
        return normalise(self.text)

    def render(self) -> str:
        return f"{self.indent}{self.bullet} [{self.mark}] {self.text}"


@dataclass(frozen=True, slots=True)
class WorkPlan:
    """The lines of a plan and the checklist items among them."""

    lines: tuple[str, ...]
    items: tuple[PlanItem, ...]

    @classmethod
    def parse(cls, markdown: str) -> WorkPlan:
        lines = tuple(markdown.split("\n"))
        items: list[PlanItem] = []
        for number, line in enumerate(lines, start=1):
            match = _CHECKBOX.match(line)
            if match is None:
                continue
            mark = match["mark"]
            items.append(
                PlanItem(
                    text=match["text"],
                    done=mark != " ",
                    line_number=number,
                    indent=match["indent"],
                    bullet=match["bullet"],
                    mark=mark,
                )
            )
        return cls(lines=lines, items=tuple(items))

    def render(self) -> str:
        """The plan as markdown, with each item's current mark."""
        by_line = {item.line_number: item for item in self.items}
        return "\n".join(
            by_line[n].render() if n in by_line else line
            for n, line in enumerate(self.lines, start=1)
        )

    @property
    def total(self) -> int:
        return len(self.items)

    @property
    def done_count(self) -> int:
        return sum(item.done for item in self.items)

    @property
    def open_items(self) -> tuple[PlanItem, ...]:
        return tuple(item for item in self.items if not item.done)

    @property
    def complete(self) -> bool:
        return all(item.done for item in self.items)

    def with_items_marked_done(self, keys: frozenset[str]) -> WorkPlan:
        """A plan whose items matching any of `keys` (normalised) are checked."""
        wanted = {normalise(key) for key in keys}
        return replace(
            self,
            items=tuple(
                replace(item, done=True, mark="x") if not item.done and item.key in wanted else item
                for item in self.items
            ),
        )

    def reconciled_with(self, remaining_work: tuple[str, ...]) -> WorkPlan:
        """Marks done the open items a turn no longer lists as remaining.

        Only when the turn speaks in the plan's terms (at least one remaining entry names
        an item): a free-form remaining list says nothing about which items are done.
        """
        remaining = {normalise(entry) for entry in remaining_work}
        open_keys = {item.key for item in self.open_items}
        if not remaining & open_keys:
            return self
        return self.with_items_marked_done(frozenset(open_keys - remaining))

    def merged_with(self, other: WorkPlan) -> WorkPlan:
        """This plan, with items checked that are checked in `other` (e.g. the file on disk)."""
        done_there = frozenset(item.key for item in other.items if item.done)
        return self.with_items_marked_done(done_there)


def normalise(text: str) -> str:
    """The comparable form of an item: case, spacing, decoration, numbering and trailing
    punctuation do not matter."""
    folded = _CHECKBOX_PREFIX.sub("", text.strip())
    folded = _DECORATION.sub("", folded).casefold()
    folded = " ".join(folded.split())
    folded = _LEADING_LABEL.sub("", folded)
    return _TRAILING_PUNCTUATION.sub("", folded)


# The plan after a rewind -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlanSaid:
    """What a turn's `plan.updated` said: the items still open after it."""

    turn: int
    open: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RewoundTo:
    """A rewind of the run's branch to `turn`: what later turns said is undone."""

    turn: int


PlanHistory = PlanSaid | RewoundTo


def open_items_at(history: tuple[PlanHistory, ...], turn: int) -> tuple[str, ...] | None:
    """The items open as of `turn`, by the last turn at or before it still on the branch
    that said any (earlier rewinds undo what the turns they undid said); None when no
    such turn said any."""
    kept: list[PlanSaid] = []
    for entry in history:
        match entry:
            case PlanSaid():
                kept.append(entry)
            case RewoundTo(turn=to):
                kept = [said for said in kept if said.turn <= to]
            case _:
                assert_never(entry)
    said = [entry for entry in kept if entry.turn <= turn]
    return said[-1].open if said else None


def plan_after_rewind(
    plan: WorkPlan, *, open_then: tuple[str, ...] | None, file_then: WorkPlan | None
) -> WorkPlan:
    """`plan` with the items that were open as of the turn a rewind went back to open
    again: those that turn's `plan.updated` listed, or, when no turn said any, those the
    plan file as the reset left it does not check; with neither, `plan` as it is. No item
    is checked by a rewind."""
    if open_then is not None:
        reopened = {normalise(text) for text in open_then}
    elif file_then is not None:
        done_then = {item.key for item in file_then.items if item.done}
        reopened = {item.key for item in plan.items if item.key not in done_then}
    else:
        return plan
    return replace(
        plan,
        items=tuple(
            replace(item, done=False, mark=" ") if item.done and item.key in reopened else item
            for item in plan.items
        ),
    )
