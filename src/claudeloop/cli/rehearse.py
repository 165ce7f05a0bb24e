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
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import click

from claudeloop.application.errors import UsageError
from claudeloop.application.launching import Launched, RunToResume, resume_run
from claudeloop.application.prompts import plan_task
from claudeloop.application.records import RunSpec
from claudeloop.application.summary import ended_facts
from claudeloop.cli.bootstrap import notify_flag_targets
from claudeloop.cli.bootstrap.rehearsal import (
    rehearsal_backend,
    rehearsal_launching,
    rehearsing,
)
from claudeloop.cli.kept_rehearsal import LOCAL_PROFILE, KeptRehearsal, RehearsalServers
from claudeloop.cli.output import finish
from claudeloop.domain.limits import LimitPolicies, SwitchProfile
from claudeloop.domain.loop import VerifyRules
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.text import count
from claudeloop.domain.verification import CheckCommand
from claudeloop.domain.waiting import WaitPolicyConfig

if TYPE_CHECKING:
    from claudeloop.rehearsal import Scenario

# What `rehearse --keep` writes beside the project: the scenario to serve on a resume.

# Probing a compressed window every few seconds plays what minutes are in a real night.
REHEARSAL_POLICY = WaitPolicyConfig(
    window_probe_interval=timedelta(seconds=4),
    reset_grace=timedelta(seconds=1),
    credits_probe_interval=timedelta(seconds=2),
    credits_probe_factor=1.5,
    credits_probe_ceiling=timedelta(seconds=6),
    max_wait=timedelta(minutes=2),
)
# What the pause and switch-profile rehearsals set, as a user would in claudeloop.toml.
PAUSE_AT = PauseThresholds.parse("5h=90%")
SWITCH_TO_LOCAL = LimitPolicies((("five_hour", SwitchProfile(LOCAL_PROFILE)),))
LOCAL_SCENARIO = "switch-profile-local"
# What the verify rehearsal sets, as `--verify 'test -f step3.txt' --review` would.
VERIFY = VerifyRules(checks=(CheckCommand.parse("test -f step3.txt"),), review=True)
# Scenarios of a local server's failures, played through a local profile as a user on
# Ollama meets them (a 500 there is a model that failed to load, not an outage).
ON_A_LOCAL_PROFILE = ("local-busy", "local-load-failed", "model-missing")


def example_plan() -> str:
    return resources.files("claudeloop.cli").joinpath("rehearsal_plan.md").read_text("utf-8")


def rehearse(
    *, scenario: str, list_them: bool, keep: bool, as_json: bool, notify: tuple[str, ...] = ()
) -> None:
    from claudeloop.rehearsal import BUILTIN_SCENARIOS

    if list_them:
        click.echo(scenario_list())
        return
    played = _played(scenario)
    # --notify URLs, checked as `run` checks them (the config files are not read: a
    # rehearsal plays the same whatever the project says), before anything starts.
    targets = notify_flag_targets(notify)
    workdir = Path(tempfile.mkdtemp(prefix="claudeloop-rehearsal-"))
    try:
        project = workdir / "project"
        project.mkdir()
        plan = project / "PLAN.md"
        plan.write_text(example_plan(), encoding="utf-8")
        kept = KeptRehearsal(
            workdir, scenario if scenario in BUILTIN_SCENARIOS else str(Path(scenario).resolve())
        )
        if keep:
            kept.write()  # before the first turn: a rehearsal stopped midway resumes too
        with served(kept, played) as servers:
            server, local = servers.base_url, servers.local_url
            if not as_json:
                click.echo(
                    f"rehearsal: scenario {scenario} on {server}; working in {project}",
                    err=True,
                )
                if local is not None:
                    click.echo(f"rehearsal: the local profile's model on {local}", err=True)
            spec = RunSpec(
                cwd=project,
                task=plan_task("PLAN.md"),
                plan_path=plan,
                wait_policy=REHEARSAL_POLICY,
                permission_mode="acceptEdits",
                pause_at=PAUSE_AT if scenario == "pause" else PauseThresholds(),
                limits=SWITCH_TO_LOCAL if local is not None else LimitPolicies(),
                verify=VERIFY if scenario == "verify" else VerifyRules(),
            )
            rehearsed = rehearsing(servers, notify=targets, quiet=as_json)(spec, keep)
            ended = rehearsed.record
            state = servers.state()
        if not as_json:
            facts = ended_facts(ended)
            # The run's words for its turns and probes; the API's count of requests in
            # another noun: a probe of the run is one request, a turn may be several,
            # and a check before the first turn is a request no probe of the run made.
            click.echo(
                f"rehearsal: {facts.state} after turns {facts.turns_said}, "
                f"{count(facts.probes, 'probe')}, waited {facts.waited_said}; the rehearsal "
                f"API answered {count(state.get('turn_requests', 0), 'request')} for turns "
                f"and {count(state.get('probes', 0), 'request')} for probes or checks",
                err=True,
            )
            written = sorted(p.name for p in project.iterdir() if p.is_file())
            click.echo(f"rehearsal: files in the project: {', '.join(written)}", err=True)
            click.echo("", err=True)
            click.echo(
                _summary_shown(rehearsed.directory.summary_path, workdir, keep=keep), err=True
            )
        finish(ended, as_json=as_json, extra={"kept": str(workdir)} if keep else None)
    finally:
        if not keep:
            # Removed on purpose: `rehearse_run` took it out of the machine's index.
            shutil.rmtree(workdir, ignore_errors=True)


def _summary_shown(path: Path, workdir: Path, *, keep: bool) -> str:
    """The run's summary.md, and where its folder is. Without --keep the folder is gone
    once the rehearsal ends: no command to resume it, and its paths said to be gone."""
    text = path.read_text(encoding="utf-8")
    if keep:
        return (
            f"{text}\nrehearsal: kept {workdir} (the project, the run directory, check logs); "
            f"a run short of done goes on with `claudeloop resume --cwd {workdir / 'project'}`, "
            "against a new rehearsal API of the same scenario"
        )
    text = text.split("\n## To continue\n", 1)[0].rstrip("\n") + "\n"
    return (
        f"{text}\nrehearsal: {workdir} is removed as the rehearsal ends, with every path "
        "above; `claudeloop rehearse --keep` keeps it (to resume the run or read its logs)"
    )


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
def served(kept: KeptRehearsal, played: Scenario | None = None) -> Iterator[RehearsalServers]:
    """The rehearsal API of `kept`'s scenario (and the local profile's, for the
    switch-profile one) on 127.0.0.1 while the block runs, with the folder's own home
    and capacity record, never the machine's."""
    from claudeloop.rehearsal import RehearsalServer, builtin_scenario

    scenario = kept.scenario
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(RehearsalServer(played or _played(scenario)))
        local = (
            stack.enter_context(RehearsalServer(builtin_scenario(LOCAL_SCENARIO)))
            if scenario == "switch-profile"
            else None
        )
        yield RehearsalServers(
            base_url=server.base_url,
            local_url=local.base_url if local is not None else None,
            on_local_profile=scenario in ON_A_LOCAL_PROFILE,
            workdir=kept.workdir,
            state=server.state,
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
    with served(kept) as servers:
        rehearsing = rehearsal_launching(servers, quiet=quiet, verbose=verbose)
        return resume_run(rehearsing, asked, warn=warn, backend=rehearsal_backend(servers))


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
