"""`claudeloop rehearse`: a complete run against the built-in rehearsal API.

Everything is real but the model: the bundled Claude Code CLI, the loop, the run
directory. The scenario's windows are compressed to seconds, and so is the wait policy,
so a window that closes mid-run reopens (and the loop resumes by itself) within a minute.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import click

from claudeloop.application.errors import UsageError
from claudeloop.application.launching import Launched, RunToResume, resume_run
from claudeloop.application.records import RunSpec
from claudeloop.application.rehearsal import (
    DEFAULT_SCENARIO,
    LOCAL_SCENARIO,
    SWITCHES_PROFILE,
    Rehearsal,
    RehearsalRun,
    RehearsalServers,
    RehearsalStarted,
    RequestsAnswered,
    resume_rehearsal,
)
from claudeloop.application.rehearsal import (
    rehearse as rehearse_use_case,
)
from claudeloop.application.summary import ended_facts
from claudeloop.cli.bootstrap import notify_flag_targets
from claudeloop.cli.bootstrap.rehearsal import (
    rehearsal_backend,
    rehearsal_launching,
    rehearsing,
)
from claudeloop.cli.kept_rehearsal import KeptRehearsal
from claudeloop.cli.output import finish
from claudeloop.domain.text import count

if TYPE_CHECKING:
    from claudeloop.rehearsal import Scenario


def example_plan() -> str:
    return resources.files("claudeloop.cli").joinpath("rehearsal_plan.md").read_text("utf-8")


def rehearse(
    *,
    scenario: str | None,
    list_them: bool,
    keep: bool,
    as_json: bool,
    notify: tuple[str, ...] = (),
) -> None:
    if list_them:
        if scenario is not None:
            raise UsageError(
                f"rehearse --list takes no scenario (got {scenario!r}); "
                f"`claudeloop rehearse {scenario}` plays it"
            )
        click.echo(scenario_list())
        return
    stage = Stage(notify=notify, quiet=as_json)
    said = _say(quiet=as_json)
    rehearsal = rehearse_use_case(
        stage, scenario or DEFAULT_SCENARIO, plan=example_plan(), keep=keep, say=said
    )
    if not as_json:
        click.echo(_ended(rehearsal), err=True)
    kept = {"kept": str(rehearsal.workdir)} if keep else {}
    finish(rehearsal.record, as_json=as_json, extra={**kept, "rehearsal": _json(rehearsal)})


def _json(rehearsal: Rehearsal) -> dict[str, object]:
    """What --json adds of the rehearsal to the run's result: what the text says."""
    return {
        "scenario": rehearsal.scenario,
        "requests_for_turns": rehearsal.requests.turns,
        "requests_for_probes": rehearsal.requests.probes,
        "files": list(rehearsal.files),
    }


def _say(*, quiet: bool) -> Callable[[RehearsalStarted], None]:
    def say(started: RehearsalStarted) -> None:
        if not quiet:
            click.echo(_started(started), err=True)

    return say


def _started(started: RehearsalStarted) -> str:
    if started.resumed:
        lines = [
            f"rehearsal: resuming a kept rehearsal against the rehearsal API on "
            f"{started.base_url}, scenario {started.scenario} played again from its first "
            "request: not your account, no network; what fails is what the scenario scripts"
        ]
    else:
        lines = [
            f"rehearsal: scenario {started.scenario} on {started.base_url}; "
            f"working in {started.project}"
        ]
    if started.local_url is not None:
        lines.append(f"rehearsal: the local profile's model on {started.local_url}")
    return "\n".join(lines)


def _ended(rehearsal: Rehearsal) -> str:
    facts = ended_facts(rehearsal.record)
    requests = rehearsal.requests
    # The run's words for its turns and probes; the API's count of requests in
    # another noun: a probe of the run is one request, a turn may be several,
    # and a check before the first turn is a request no probe of the run made.
    return "\n".join(
        [
            f"rehearsal: {facts.state} after turns {facts.turns_said}, "
            f"{count(facts.probes, 'probe')}, waited {facts.waited_said}; the rehearsal "
            f"API answered {count(requests.turns, 'request')} for turns "
            f"and {count(requests.probes, 'request')} for probes or checks",
            f"rehearsal: files in the project: {', '.join(rehearsal.files)}",
            "",
            _summary_shown(rehearsal),
        ]
    )


def _summary_shown(rehearsal: Rehearsal) -> str:
    """The run's summary.md, and where its folder is. Without --keep the folder is gone
    once the rehearsal ends: no command to resume it, and its paths said to be gone."""
    text, workdir = rehearsal.summary, rehearsal.workdir
    if rehearsal.kept:
        return (
            f"{text}\nrehearsal: kept {workdir} (the project, the run directory, check logs); "
            f"a run short of done goes on with `claudeloop resume --cwd {rehearsal.project}`, "
            "against a new rehearsal API of the same scenario"
        )
    text = text.split("\n## To continue\n", 1)[0].rstrip("\n") + "\n"
    return (
        f"{text}\nrehearsal: {workdir} is removed as the rehearsal ends, with every path "
        "above; `claudeloop rehearse --keep` keeps it (to resume the run or read its logs)"
    )


class Stage:
    """The `RehearsalStage` on this machine: temporary folders, the rehearsal API in this
    process, the run wired by the composition root. `notify`: the --notify targets."""

    def __init__(self, *, notify: tuple[str, ...] = (), quiet: bool = False) -> None:
        # --notify URLs, checked as `run` checks them (the config files are not read: a
        # rehearsal plays the same whatever the project says), before anything starts.
        self._notify = notify_flag_targets(notify)
        self._quiet = quiet

    def scenario(self, named: str) -> str:
        from claudeloop.rehearsal import BUILTIN_SCENARIOS

        _played(named)
        return named if named in BUILTIN_SCENARIOS else str(Path(named).resolve())

    def folder(self, plan: str) -> Path:
        workdir = Path(tempfile.mkdtemp(prefix="claudeloop-rehearsal-"))
        project = workdir / "project"
        project.mkdir()
        (project / "PLAN.md").write_text(plan, encoding="utf-8")
        return workdir

    def keep(self, workdir: Path, scenario: str) -> None:
        KeptRehearsal(workdir, scenario).write()

    def serve(
        self, workdir: Path, scenario: str
    ) -> contextlib.AbstractContextManager[RehearsalServers]:
        return served(workdir, scenario)

    def drive(self, servers: RehearsalServers, spec: RunSpec, *, keep: bool) -> RehearsalRun:
        rehearsed = rehearsing(servers, notify=self._notify, quiet=self._quiet)(spec, keep)
        summary = rehearsed.directory.summary_path.read_text(encoding="utf-8")
        return RehearsalRun(rehearsed.record, summary)

    def files(self, project: Path) -> tuple[str, ...]:
        return tuple(sorted(p.name for p in project.iterdir() if p.is_file()))

    def remove(self, workdir: Path) -> None:
        # Removed on purpose: `rehearse_run` took it out of the machine's index.
        shutil.rmtree(workdir, ignore_errors=True)


def _played(scenario: str) -> Scenario:
    """The scenario named (a built-in) or given (a .toml or .json file)."""
    from claudeloop.rehearsal import (
        BUILTIN_SCENARIOS,
        ScenarioError,
        builtin_scenario,
        load_scenario,
    )

    if Path(scenario).suffix in (".toml", ".json"):
        try:
            return load_scenario(Path(scenario))
        except ScenarioError as error:
            raise UsageError(str(error)) from None
    if scenario in BUILTIN_SCENARIOS:
        return builtin_scenario(scenario)
    names = ", ".join(BUILTIN_SCENARIOS)
    raise UsageError(f"scenario {scenario!r}: unknown; use one of {names} or a .toml file")


@contextlib.contextmanager
def served(workdir: Path, scenario: str) -> Iterator[RehearsalServers]:
    """The rehearsal API of `scenario` (and the local profile's, for the switch-profile
    one) on 127.0.0.1 while the block runs, with the folder's own home and capacity
    record, never the machine's."""
    from claudeloop.rehearsal import RehearsalServer, builtin_scenario

    with contextlib.ExitStack() as stack:
        server = stack.enter_context(RehearsalServer(_played(scenario)))
        local = (
            stack.enter_context(RehearsalServer(builtin_scenario(LOCAL_SCENARIO)))
            if scenario == SWITCHES_PROFILE
            else None
        )

        def answered() -> RequestsAnswered:
            state = server.state()
            return RequestsAnswered(
                turns=int(state.get("turn_requests", 0)), probes=int(state.get("probes", 0))
            )

        yield RehearsalServers(
            scenario=scenario,
            base_url=server.base_url,
            local_url=local.base_url if local is not None else None,
            workdir=workdir,
            answered=answered,
        )


def resume_kept(
    kept: KeptRehearsal,
    asked: RunToResume,
    *,
    quiet: bool,
    verbose: bool,
    warn: Callable[[str], None],
) -> Launched:
    """`claudeloop resume` in a kept rehearsal's project: the run goes on as any resume
    does (its ledger, session and plan kept), against a new rehearsal API of the same
    scenario, wired as the rehearsal wired it (its own capacity record, its local
    profile). The API starts afresh: its scenario plays again from its first request."""

    def resume(servers: RehearsalServers) -> Launched:
        launching = rehearsal_launching(servers, quiet=quiet, verbose=verbose)
        return resume_run(launching, asked, warn=warn, backend=rehearsal_backend(servers))

    return resume_rehearsal(
        Stage(quiet=quiet), kept.workdir, kept.scenario, resume=resume, say=_say(quiet=quiet)
    )


def scenario_list(width: int = 80) -> str:
    """Each built-in scenario and what it shows, wrapped to `width` columns."""
    from claudeloop.rehearsal import BUILTIN_SCENARIOS, builtin_scenario

    column = max(len(name) for name in BUILTIN_SCENARIOS) + 2
    lines = []
    for name in BUILTIN_SCENARIOS:
        wrapped = textwrap.wrap(builtin_scenario(name).description, width - column) or [""]
        lines.append(f"{name:<{column}}{wrapped[0]}")
        lines += [" " * column + rest for rest in wrapped[1:]]
    return "\n".join(lines)
