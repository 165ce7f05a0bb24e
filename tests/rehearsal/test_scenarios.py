"""Scenario files: every built-in loads, and every mistake is one line naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claudeloop.rehearsal import (
    BUILTIN_SCENARIOS,
    GATE_KINDS,
    ScenarioError,
    builtin_scenario,
    load_scenario,
    resolve_scenario,
)
from claudeloop.rehearsal.scenario import ToolStep, VerdictStep

GOOD = """\
description = "two turns"

[[turns]]
[[turns.steps]]
kind = "tool"
name = "Write"
input = { file_path = "{cwd}/a.txt", content = "a" }

[[turns]]
[[turns.steps]]
kind = "verdict"
complete = true

[[gates]]
kind = "window"
at_turn = 2
for_seconds = 8
"""


def error_for(tmp_path: Path, text: str, name: str = "plan.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ScenarioError) as raised:
        load_scenario(path)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message


@pytest.mark.parametrize("name", BUILTIN_SCENARIOS)
def test_every_built_in_scenario_loads_and_finishes_on_its_last_turn(name: str) -> None:
    scenario = builtin_scenario(name)
    assert scenario.name == name
    assert scenario.description
    last = scenario.turns[-1].steps[-1]
    assert isinstance(last, VerdictStep)
    assert last.complete
    assert all(gate.kind in GATE_KINDS for gate in scenario.gates)
    # Every scenario but these two shows a failure a gate plays.
    assert bool(scenario.gates) == (name not in ("happy", "verify"))


def test_the_happy_plan_writes_one_file_per_turn_then_gives_a_verdict() -> None:
    scenario = builtin_scenario("happy")
    assert len(scenario.turns) == 3
    for number, turn in enumerate(scenario.turns, start=1):
        writes = [step for step in turn.steps if isinstance(step, ToolStep)]
        assert [step.name for step in writes] == ["Write"]
        assert writes[0].input["file_path"] == f"{{cwd}}/step{number}.txt"
        assert isinstance(turn.steps[-1], VerdictStep)
    verdicts = [turn.steps[-1] for turn in scenario.turns]
    assert [v.complete for v in verdicts if isinstance(v, VerdictStep)] == [False, False, True]


def test_the_window_built_in_closes_at_turn_two_briefly_with_a_clock() -> None:
    [gate] = builtin_scenario("window").gates
    assert (gate.kind, gate.at_turn) == ("window", 2)
    assert gate.for_seconds is not None
    assert 0 < gate.for_seconds <= 10


def test_a_toml_file_and_the_same_scenario_in_json_load_alike(tmp_path: Path) -> None:
    toml_path = tmp_path / "plan.toml"
    toml_path.write_text(GOOD)
    from_toml = load_scenario(toml_path)
    json_path = tmp_path / "plan.json"
    json_path.write_text(json.dumps(from_toml.model_dump(exclude={"name"})))
    from_json = load_scenario(json_path)
    assert from_json.model_dump(exclude={"name"}) == from_toml.model_dump(exclude={"name"})
    assert (from_toml.name, from_json.name) == ("plan", "plan")


def test_resolve_takes_a_built_in_name_or_a_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(GOOD)
    assert resolve_scenario("weekly").name == "weekly"
    assert resolve_scenario(str(path)).name == "mine"
    with pytest.raises(ScenarioError, match="neither a built-in scenario"):
        resolve_scenario("nonesuch")


def test_an_unknown_built_in_lists_the_accepted_names() -> None:
    with pytest.raises(ScenarioError, match="unknown built-in scenario 'sunny'; accepted: happy"):
        builtin_scenario("sunny")


def test_an_unknown_step_kind_names_the_step_and_the_accepted_kinds(tmp_path: Path) -> None:
    message = error_for(tmp_path, '[[turns]]\n[[turns.steps]]\nkind = "sing"\n')
    assert "turns[0].steps[0].kind: unknown kind 'sing'" in message
    assert "accepted: text, tool, verdict, marker" in message


def test_a_step_without_a_kind_says_the_kind_is_missing(tmp_path: Path) -> None:
    message = error_for(tmp_path, '[[turns]]\n[[turns.steps]]\ntext = "hi"\n')
    assert "turns[0].steps[0].kind: missing; accepted: text, tool" in message


def test_an_unknown_gate_kind_lists_every_gate_kind(tmp_path: Path) -> None:
    message = error_for(tmp_path, '[[gates]]\nkind = "monsoon"\nat_turn = 1\nfor_seconds = 1\n')
    assert "gates[0].kind: unknown kind 'monsoon'" in message
    for kind in GATE_KINDS:
        assert kind in message


def test_an_unknown_key_names_its_path_and_the_accepted_keys(tmp_path: Path) -> None:
    top = error_for(tmp_path, 'titel = "x"\n')
    assert "titel: unknown key; accepted: name, description, structured_output" in top
    gate = error_for(
        tmp_path, '[[gates]]\nkind = "stall"\nat_turn = 1\nfor_seconds = 1\nstall_for = 3\n'
    )
    assert "gates[0].stall_for: unknown key; accepted: " in gate
    assert "stall_seconds" in gate
    step = error_for(
        tmp_path, '[[turns]]\n[[turns.steps]]\nkind = "tool"\nname = "Bash"\ncmd = "ls"\n'
    )
    assert "turns[0].steps[0].cmd: unknown key; accepted: kind, name, input" in step


def test_a_key_of_another_gate_kind_is_unknown_here(tmp_path: Path) -> None:
    message = error_for(
        tmp_path, '[[gates]]\nkind = "window"\nat_turn = 1\nfor_seconds = 1\nutilization = 0.9\n'
    )
    assert "gates[0].utilization: unknown key" in message


def test_a_negative_duration_is_refused_with_the_bound(tmp_path: Path) -> None:
    message = error_for(tmp_path, '[[gates]]\nkind = "overloaded"\nat_turn = 1\nfor_seconds = -5\n')
    assert "gates[0].for_seconds: Input should be greater than or equal to 0 (got -5)" in message


def test_a_turn_number_below_one_is_refused(tmp_path: Path) -> None:
    message = error_for(tmp_path, '[[gates]]\nkind = "auth"\nat_turn = 0\nuntil_lift = true\n')
    assert "gates[0].at_turn: Input should be greater than or equal to 1 (got 0)" in message


def test_a_gate_needs_exactly_one_start_and_one_end(tmp_path: Path) -> None:
    no_start = error_for(tmp_path, '[[gates]]\nkind = "auth"\nuntil_lift = true\n')
    assert "gates[0]: give exactly one start: at_turn (>= 1) or after_seconds (>= 0)" in no_start
    two_ends = error_for(
        tmp_path, '[[gates]]\nkind = "auth"\nat_turn = 1\nuntil_lift = true\nfor_seconds = 3\n'
    )
    assert "gates[0]: give exactly one end: for_seconds" in two_ends


def test_several_problems_report_the_first_and_count_the_rest(tmp_path: Path) -> None:
    message = error_for(tmp_path, 'titel = 1\nauthor = 2\nstructured_output = "maybe"\n')
    assert "(and 2 more problems)" in message


def test_a_wrong_type_shows_the_value_given(tmp_path: Path) -> None:
    message = error_for(tmp_path, 'structured_output = "maybe"\n')
    assert "structured_output: Input should be a valid boolean" in message
    assert "(got 'maybe')" in message


def test_broken_toml_and_broken_json_are_one_line(tmp_path: Path) -> None:
    assert "not valid TOML" in error_for(tmp_path, "[[turns]\n")
    assert "not valid JSON" in error_for(tmp_path, "{", name="plan.json")
    assert "the top level must be a table" in error_for(tmp_path, "[1]", name="plan.json")


def test_an_unreadable_or_unsupported_file_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "absent.toml"
    with pytest.raises(ScenarioError, match=r"absent\.toml: cannot read"):
        load_scenario(missing)
    yaml = tmp_path / "plan.yaml"
    yaml.write_text("turns: []\n")
    with pytest.raises(ScenarioError, match=r"plan\.yaml: unsupported file type"):
        load_scenario(yaml)


def test_a_review_is_played_from_the_reviews_in_order_then_the_last_again() -> None:
    from claudeloop.application.prompts import review_prompt
    from claudeloop.rehearsal.conversation import read_conversation
    from claudeloop.rehearsal.player import play

    scenario = builtin_scenario("verify")
    prompt = review_prompt("Write it.", plan=None, summary="done", marker=None)
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
        "tools": [{"name": "StructuredOutput", "input_schema": {}}, {"name": "Read"}],
    }
    review = read_conversation(body)
    assert review.review
    assert review.turn == 1
    first = play(scenario, review, reviews_done=0)
    assert [type(block).__name__ for block in first.blocks] == ["ToolUseBlock"]
    assert first.blocks[0].name == "Read"  # type: ignore[union-attr]
    working = read_conversation(
        {**body, "tools": [*body["tools"], {"name": "Write", "input_schema": {}}]}
    )
    assert not working.review
    assert play(scenario, working).blocks != first.blocks


def test_the_local_half_of_switch_profile_is_shipped_but_not_offered() -> None:
    from claudeloop.cli.rehearse import scenario_list

    assert builtin_scenario("switch-profile-local").name == "switch-profile-local"
    assert "switch-profile-local" not in BUILTIN_SCENARIOS
    assert "switch-profile-local " not in scenario_list()
