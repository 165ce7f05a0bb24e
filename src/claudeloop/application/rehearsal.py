"""What `claudeloop rehearse` does between parsing and rendering, in order: the scenario
checked, a folder with the example plan, the rehearsal API of the scenario served on
127.0.0.1, the run of that plan with the rehearsal's settings driven to its end, what the
API answered and what the run left read, and the folder removed unless it is kept.
And a kept rehearsal's resume, which plays against a new rehearsal API of the same
scenario and says so.

The stage (`RehearsalStage`: folders, servers, the wired run) is the composition root's;
the rules of which scenario plays with which settings, and what a failure it scripts is
said as, are here.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Protocol, TypeVar

from claudeloop.application.ports import Advice, Advising
from claudeloop.application.prompts import plan_task
from claudeloop.application.records import RunRecord, RunSpec
from claudeloop.domain.capacity import AuthenticationFailed, BackendMisconfigured
from claudeloop.domain.limits import LimitPolicies, SwitchProfile
from claudeloop.domain.loop import VerifyRules
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.verification import CheckCommand
from claudeloop.domain.waiting import WaitPolicyConfig

# The scenario `claudeloop rehearse` plays when none is named.
DEFAULT_SCENARIO = "window"
# Probing a compressed window every few seconds plays what minutes are in a real night.
REHEARSAL_POLICY = WaitPolicyConfig(
    window_probe_interval=timedelta(seconds=4),
    reset_grace=timedelta(seconds=1),
    credits_probe_interval=timedelta(seconds=2),
    credits_probe_factor=1.5,
    credits_probe_ceiling=timedelta(seconds=6),
    max_wait=timedelta(minutes=2),
)
# The profile a rehearsal of a local server plays, and a switch-profile policy goes to.
LOCAL_PROFILE = "rehearsal-local"
# What the pause and switch-profile rehearsals set, as a user would in claudeloop.toml.
PAUSE_AT = PauseThresholds.parse("5h=90%")
SWITCH_TO_LOCAL = LimitPolicies((("five_hour", SwitchProfile(LOCAL_PROFILE)),))
# The scenario the local profile's server plays beside the switch-profile one.
LOCAL_SCENARIO = "switch-profile-local"
SWITCHES_PROFILE = "switch-profile"
# What the verify rehearsal sets, as `--verify 'test -f step3.txt' --review` would.
VERIFY = VerifyRules(checks=(CheckCommand.parse("test -f step3.txt"),), review=True)
# Scenarios of a local server's failures, played through a local profile as a user on
# Ollama meets them (a 500 there is a model that failed to load, not an outage).
ON_A_LOCAL_PROFILE = ("local-busy", "local-load-failed", "model-missing")
# The plan a rehearsal works on, in its project.
PLAN = "PLAN.md"


@dataclass(frozen=True, slots=True)
class RequestsAnswered:
    """What the rehearsal API answered: requests for turns (a turn may be several), and
    for probes or checks (a check before the first turn is one no probe of the run made)."""

    turns: int
    probes: int


@dataclass(frozen=True, slots=True)
class RehearsalServers:
    """The rehearsal API serving `scenario` (and the local profile's, for the
    switch-profile scenario) and where: a run on it is wired with the backend and the
    detour to the local profile they serve, and the rehearsal folder's own home and
    capacity record, never the machine's (cli/bootstrap/rehearsal.py)."""

    scenario: str
    base_url: str
    local_url: str | None
    workdir: Path
    answered: Callable[[], RequestsAnswered]

    @property
    def on_local_profile(self) -> bool:
        return self.scenario in ON_A_LOCAL_PROFILE

    @property
    def home(self) -> Path:
        return self.workdir / "home"

    @property
    def capacity_dir(self) -> Path:
        return self.workdir / "state" / "capacity"

    @property
    def project(self) -> Path:
        return self.workdir / "project"


@dataclass(frozen=True, slots=True)
class RehearsalRun:
    """The rehearsal's run at its end, and its summary.md as written."""

    record: RunRecord
    summary: str


class RehearsalStage(Protocol):
    """What a rehearsal needs of the machine (cli/rehearse.py's, wired by the root)."""

    def scenario(self, named: str) -> str:
        """The scenario `named` as a kept folder records it (a built-in's name, a file's
        absolute path); a `UsageError` naming it and what is accepted when none is."""
        ...

    def folder(self, plan: str) -> Path:
        """A new folder, its `project` holding the plan `PLAN.md` of the text `plan`."""
        ...

    def keep(self, workdir: Path, scenario: str) -> None:
        """Write beside the project what a resume there serves again."""
        ...

    def serve(self, workdir: Path, scenario: str) -> AbstractContextManager[RehearsalServers]:
        """The rehearsal API of `scenario` on 127.0.0.1 while the block runs."""
        ...

    def drive(self, servers: RehearsalServers, spec: RunSpec, *, keep: bool) -> RehearsalRun:
        """The run of `spec` made, wired on `servers` and driven to its end."""
        ...

    def files(self, project: Path) -> tuple[str, ...]:
        """The names of the files in the project, sorted."""
        ...

    def remove(self, workdir: Path) -> None:
        """The folder removed, with everything in it."""
        ...


@dataclass(frozen=True, slots=True)
class RehearsalStarted:
    """Said before the first turn: the scenario, where its API answers, and where the run
    works (`resumed`: a kept rehearsal's resume, on a new API of the same scenario)."""

    scenario: str
    base_url: str
    local_url: str | None
    project: Path
    resumed: bool = False


@dataclass(frozen=True, slots=True)
class Rehearsal:
    """A rehearsal at its end: its run, what the API answered, the files the run left in
    the project, its summary, and its folder (gone unless `kept`)."""

    scenario: str
    record: RunRecord
    requests: RequestsAnswered
    files: tuple[str, ...]
    summary: str
    workdir: Path
    kept: bool

    @property
    def project(self) -> Path:
        return self.workdir / "project"


def rehearsal_spec(servers: RehearsalServers) -> RunSpec:
    """The run a rehearsal drives: the example plan, compressed waits, and what its
    scenario shows set as a user would set it (a pause threshold, a switch-profile
    policy, a verification). No setting of the user's is read."""
    scenario = servers.scenario
    return RunSpec(
        cwd=servers.project,
        task=plan_task(PLAN),
        plan_path=servers.project / PLAN,
        wait_policy=REHEARSAL_POLICY,
        permission_mode="acceptEdits",
        pause_at=PAUSE_AT if scenario == "pause" else PauseThresholds(),
        limits=SWITCH_TO_LOCAL if servers.local_url is not None else LimitPolicies(),
        verify=VERIFY if scenario == "verify" else VerifyRules(),
    )


def rehearse(
    stage: RehearsalStage,
    named: str,
    *,
    plan: str,
    keep: bool,
    say: Callable[[RehearsalStarted], None],
) -> Rehearsal:
    """A rehearsal of the scenario `named`, in order: the scenario checked, the folder
    made (kept before the first turn, so a rehearsal stopped midway resumes too), the API
    served, the run driven, what it left read; the folder removed unless `keep`."""
    scenario = stage.scenario(named)
    workdir = stage.folder(plan)
    try:
        if keep:
            stage.keep(workdir, scenario)
        with stage.serve(workdir, scenario) as servers:
            say(RehearsalStarted(scenario, servers.base_url, servers.local_url, servers.project))
            run = stage.drive(servers, rehearsal_spec(servers), keep=keep)
            requests = servers.answered()
        return Rehearsal(
            scenario=scenario,
            record=run.record,
            requests=requests,
            files=stage.files(servers.project),
            summary=run.summary,
            workdir=workdir,
            kept=keep,
        )
    finally:
        if not keep:
            stage.remove(workdir)


R = TypeVar("R")


def resume_rehearsal(
    stage: RehearsalStage,
    workdir: Path,
    scenario: str,
    *,
    resume: Callable[[RehearsalServers], R],
    say: Callable[[RehearsalStarted], None],
) -> R:
    """A kept rehearsal's resume: against a new rehearsal API of the same scenario (it
    plays again from its first request), said before the run goes on, so nobody takes
    its scripted failures for their account's."""
    with stage.serve(workdir, scenario) as servers:
        say(
            RehearsalStarted(
                scenario, servers.base_url, servers.local_url, servers.project, resumed=True
            )
        )
        return resume(servers)


class RehearsalAdvisor:
    """The `Advisor` of a rehearsal's run: a failure the scenario scripts is said as the
    rehearsal's, not the user's to mend; what the real failure would need follows as
    "in a real run, …"."""

    def __init__(self, profile: Advising, scenario: str) -> None:
        self._profile = profile
        self._scenario = scenario

    def advised(
        self,
        reason: str,
        capacity: AuthenticationFailed | BackendMisconfigured,
        *,
        detour: str | None,
    ) -> str:
        return scripted(self._profile.advice(reason, capacity, detour=detour), self._scenario)


def scripted(advice: Advice, scenario: str) -> str:
    """`advice` said of a failure the rehearsal scenario `scenario` plays."""
    played = (
        f"{advice.problem}: the rehearsal API scripts this failure (scenario {scenario}); "
        "nothing of yours to mend"
    )
    return f"{played}; in a real run, {advice.fix}" if advice.fix else played
