"""`rehearse` as a use case: what a rehearsal does in order, the settings each scenario
plays with, the folder kept or removed, a kept one's resume said as the rehearsal's, and
a failure the scenario scripts said as the rehearsal's, on a stage that behaves."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from claudeloop.application.errors import UsageError
from claudeloop.application.ports import Advice
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.application.rehearsal import (
    PAUSE_AT,
    REHEARSAL_POLICY,
    SWITCH_TO_LOCAL,
    VERIFY,
    RehearsalAdvisor,
    RehearsalRun,
    RehearsalServers,
    RehearsalStarted,
    RequestsAnswered,
    rehearse,
    resume_rehearsal,
)
from claudeloop.domain.capacity import AuthenticationFailed, BackendMisconfigured
from claudeloop.domain.limits import LimitPolicies
from claudeloop.domain.loop import Outcome, Phase, RunState
from claudeloop.domain.pause import PauseThresholds
from tests.application.fakes import START

WORKDIR = Path("/tmp/claudeloop-rehearsal-x")


@dataclass
class FakeStage:
    """A stage that plays every built-in named in `known`; `said` is every step asked."""

    known: tuple[str, ...] = ("window", "pause", "verify", "switch-profile", "auth")
    fails_at: str = ""
    said: list[str] = field(default_factory=list)
    specs: list[RunSpec] = field(default_factory=list)

    def scenario(self, named: str) -> str:
        self.said.append(f"scenario {named}")
        if named not in self.known:
            raise UsageError(f"scenario {named!r}: unknown")
        return named

    def folder(self, plan: str) -> Path:
        self.said.append("folder")
        return WORKDIR

    def keep(self, workdir: Path, scenario: str) -> None:
        self.said.append(f"keep {scenario}")

    @contextlib.contextmanager
    def serve(self, workdir: Path, scenario: str) -> Iterator[RehearsalServers]:
        self.said.append(f"serve {scenario}")
        local = "http://127.0.0.1:2" if scenario == "switch-profile" else None
        try:
            yield RehearsalServers(
                scenario, "http://127.0.0.1:1", local, workdir, lambda: RequestsAnswered(4, 1)
            )
        finally:
            self.said.append("served")

    def drive(self, servers: RehearsalServers, spec: RunSpec, *, keep: bool) -> RehearsalRun:
        self.said.append("drive")
        self.specs.append(spec)
        if self.fails_at == "drive":
            raise KeyboardInterrupt
        return RehearsalRun(_ended(spec), "# summary\n")

    def files(self, project: Path) -> tuple[str, ...]:
        self.said.append("files")
        return ("PLAN.md", "step1.txt")

    def remove(self, workdir: Path) -> None:
        self.said.append("remove")


def _ended(spec: RunSpec) -> RunRecord:
    state = RunState(phase=Phase.COMPLETE, outcome=Outcome.DONE)
    return RunRecord(run_id="r1", spec=spec, state=state, started_at=START)


def test_a_rehearsal_says_where_it_plays_then_answers_its_run_and_removes_its_folder() -> None:
    stage, told = FakeStage(), list[RehearsalStarted]()
    answer = rehearse(stage, "window", plan="- [ ] a\n", keep=False, say=told.append)
    assert stage.said == [
        "scenario window",
        "folder",
        "serve window",
        "drive",
        "served",
        "files",
        "remove",
    ]
    assert told == [RehearsalStarted("window", "http://127.0.0.1:1", None, WORKDIR / "project")]
    assert answer.requests == RequestsAnswered(turns=4, probes=1)
    assert answer.files == ("PLAN.md", "step1.txt")
    assert (answer.summary, answer.kept, answer.project) == (
        "# summary\n",
        False,
        WORKDIR / "project",
    )
    assert answer.record.state.outcome is Outcome.DONE


def test_a_kept_rehearsal_writes_what_a_resume_serves_before_its_first_turn() -> None:
    stage = FakeStage()
    answer = rehearse(stage, "auth", plan="", keep=True, say=lambda _: None)
    assert stage.said.index("keep auth") < stage.said.index("drive")
    assert "remove" not in stage.said
    assert answer.kept


def test_an_unknown_scenario_makes_no_folder() -> None:
    stage = FakeStage()
    with pytest.raises(UsageError, match="monsoon"):
        rehearse(stage, "monsoon", plan="", keep=False, say=lambda _: None)
    assert stage.said == ["scenario monsoon"]


def test_a_rehearsal_stopped_midway_removes_its_folder_unless_kept() -> None:
    for keep in (False, True):
        stage = FakeStage(fails_at="drive")
        with pytest.raises(KeyboardInterrupt):
            rehearse(stage, "window", plan="", keep=keep, say=lambda _: None)
        assert ("remove" in stage.said) is not keep


@pytest.mark.parametrize(
    ("scenario", "pause", "limits", "checked"),
    [
        ("window", PauseThresholds(), LimitPolicies(), False),
        ("pause", PAUSE_AT, LimitPolicies(), False),
        ("switch-profile", PauseThresholds(), SWITCH_TO_LOCAL, False),
        ("verify", PauseThresholds(), LimitPolicies(), True),
    ],
)
def test_each_scenario_plays_with_what_it_shows_set_as_a_user_would(
    scenario: str, pause: PauseThresholds, limits: LimitPolicies, checked: bool
) -> None:
    stage = FakeStage()
    rehearse(stage, scenario, plan="", keep=False, say=lambda _: None)
    (spec,) = stage.specs
    assert (spec.pause_at, spec.limits) == (pause, limits)
    assert (spec.verify == VERIFY) is checked
    assert spec.wait_policy == REHEARSAL_POLICY
    assert spec.plan_path == WORKDIR / "project" / "PLAN.md"


def test_a_kept_rehearsals_resume_says_it_plays_against_the_rehearsal_first() -> None:
    stage, told = FakeStage(), list[RehearsalStarted]()

    def resume(servers: RehearsalServers) -> str:
        stage.said.append(f"resume on {servers.base_url}")
        return "driven"

    assert resume_rehearsal(stage, WORKDIR, "auth", resume=resume, say=told.append) == "driven"
    assert stage.said == ["serve auth", "resume on http://127.0.0.1:1", "served"]
    assert told == [
        RehearsalStarted("auth", "http://127.0.0.1:1", None, WORKDIR / "project", resumed=True)
    ]


@dataclass
class FixedAdvice:
    advice_given: Advice

    def advice(
        self,
        reason: str,
        capacity: AuthenticationFailed | BackendMisconfigured,
        *,
        detour: str | None,
    ) -> Advice:
        return self.advice_given


def test_a_scripted_failure_is_said_as_the_rehearsals_with_the_real_fix_after() -> None:
    refused = FixedAdvice(Advice("the credentials were refused", "log in again"))
    said = RehearsalAdvisor(refused, "auth").advised("refused", AuthenticationFailed(), detour=None)
    assert said == (
        "the credentials were refused: the rehearsal API scripts this failure (scenario "
        "auth); nothing of yours to mend; in a real run, log in again"
    )
    unfixable = RehearsalAdvisor(FixedAdvice(Advice("odd")), "x.toml")
    assert unfixable.advised("odd", BackendMisconfigured("odd"), detour=None) == (
        "odd: the rehearsal API scripts this failure (scenario x.toml); nothing of yours to mend"
    )
