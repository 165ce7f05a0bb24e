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
from datetime import timedelta
from importlib import resources
from pathlib import Path

import click

from claudeloop.application.driving import drive_run
from claudeloop.application.errors import UsageError
from claudeloop.application.prompts import plan_task
from claudeloop.application.records import RunSpec
from claudeloop.application.summary import duration_text, result_object
from claudeloop.cli.bootstrap.configuration import flag_notify_targets
from claudeloop.cli.bootstrap.rehearsal import LOCAL_PROFILE, Rehearsal, rehearsal_run
from claudeloop.cli.output import finish
from claudeloop.domain.limits import LimitPolicies, SwitchProfile
from claudeloop.domain.loop import VerifyRules
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.text import count
from claudeloop.domain.verification import CheckCommand
from claudeloop.domain.waiting import WaitPolicyConfig

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
    from claudeloop.rehearsal import (
        BUILTIN_SCENARIOS,
        RehearsalServer,
        ScenarioError,
        builtin_scenario,
        load_scenario,
    )

    if list_them:
        click.echo(scenario_list())
        return
    if Path(scenario).suffix in (".toml", ".json"):
        try:
            played = load_scenario(Path(scenario))
        except ScenarioError as error:
            raise UsageError(str(error)) from None
    elif scenario in BUILTIN_SCENARIOS:
        played = builtin_scenario(scenario)
    else:
        names = ", ".join(BUILTIN_SCENARIOS)
        raise UsageError(f"scenario {scenario!r}: unknown; use one of {names} or a .toml file")
    # --notify URLs, checked as `run` checks them (the config files are not read: a
    # rehearsal plays the same whatever the project says), before anything starts.
    targets = flag_notify_targets(notify)
    workdir = Path(tempfile.mkdtemp(prefix="claudeloop-rehearsal-"))
    rehearsal: Rehearsal | None = None
    try:
        project = workdir / "project"
        project.mkdir()
        plan = project / "PLAN.md"
        plan.write_text(example_plan(), encoding="utf-8")
        with contextlib.ExitStack() as servers:
            server = servers.enter_context(RehearsalServer(played))
            local = (
                servers.enter_context(RehearsalServer(builtin_scenario(LOCAL_SCENARIO)))
                if scenario == "switch-profile"
                else None
            )
            if not as_json:
                click.echo(
                    f"rehearsal: scenario {scenario} on {server.base_url}; working in {project}",
                    err=True,
                )
                if local is not None:
                    click.echo(
                        f"rehearsal: the local profile's model on {local.base_url}", err=True
                    )
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
            rehearsal = rehearsal_run(
                spec,
                base_url=server.base_url,
                home=workdir / "home",
                on_local_profile=scenario in ON_A_LOCAL_PROFILE,
                local_url=local.base_url if local else None,
                notify=targets,
                state_dir=workdir / "state",
                quiet=as_json,
            )
            ended = drive_run(rehearsal.wired, rehearsal.record, resumed=False)
            state = server.state()
        if not as_json:
            result = result_object(ended)
            click.echo(
                # Turns as the lines above numbered them: every turn sent.
                f"rehearsal: {result['outcome']} after {count(result['attempts'], 'turn')} "
                f"({result['turns']} answered), {count(result['probes'], 'probe')}, "
                f"{duration_text(ended.waited_seconds)} waited; the rehearsal API saw "
                f"{count(state.get('turn_requests', 0), 'model request')} and "
                f"{count(state.get('probes', 0), 'probe')}",
                err=True,
            )
            written = sorted(p.name for p in project.iterdir() if p.is_file())
            click.echo(f"rehearsal: files in the project: {', '.join(written)}", err=True)
            click.echo("", err=True)
            click.echo(_summary_shown(rehearsal.summary_path, workdir, keep=keep), err=True)
        finish(ended, as_json=as_json, extra={"kept": str(workdir)} if keep else None)
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
            if rehearsal is not None:
                # Removed on purpose: not listed by `runs --all` or the dashboard as gone.
                rehearsal.forget()


def _summary_shown(path: Path, workdir: Path, *, keep: bool) -> str:
    """The run's summary.md, and where its folder is. Without --keep the folder is gone
    once the rehearsal ends: no command to resume it, and its paths said to be gone."""
    text = path.read_text(encoding="utf-8")
    if keep:
        return f"{text}\nrehearsal: kept {workdir} (the project, the run directory, check logs)"
    text = text.split("\n## To continue\n", 1)[0].rstrip("\n") + "\n"
    return (
        f"{text}\nrehearsal: {workdir} is removed as the rehearsal ends, with every path "
        "above; `claudeloop rehearse --keep` keeps it (to resume the run or read its logs)"
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
