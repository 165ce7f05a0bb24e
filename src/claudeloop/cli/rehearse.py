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
from collections.abc import Callable
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import click

from claudeloop.application.driving import drive_run
from claudeloop.application.errors import UsageError
from claudeloop.application.fleet_seat import NO_SEAT
from claudeloop.application.prompts import plan_task
from claudeloop.application.records import RunSpec
from claudeloop.application.summary import duration_text, result_object
from claudeloop.cli.bootstrap.configuration import DUMMY_TOKEN, BackendProfile
from claudeloop.cli.bootstrap.runs import (
    CREDENTIAL_VARIABLES,
    PROVIDER_VARIABLES,
    Backend,
    RunDirectory,
    backend_for,
    create_directory,
    new_record,
    unregister_run,
    wire_run,
)
from claudeloop.cli.output import finish
from claudeloop.domain.limits import LimitPolicies, SwitchProfile
from claudeloop.domain.loop import VerifyRules
from claudeloop.domain.pause import PauseThresholds
from claudeloop.domain.text import count
from claudeloop.domain.verification import CheckCommand
from claudeloop.domain.waiting import WaitPolicyConfig

if TYPE_CHECKING:
    from claudeloop.cli.bootstrap.configuration import NotifyTargets

# Probing a compressed window every few seconds plays what minutes are in a real night.
REHEARSAL_POLICY = WaitPolicyConfig(
    window_probe_interval=timedelta(seconds=4),
    reset_grace=timedelta(seconds=1),
    credits_probe_interval=timedelta(seconds=2),
    credits_probe_factor=1.5,
    credits_probe_ceiling=timedelta(seconds=6),
    max_wait=timedelta(minutes=2),
)
# Credential variables that must not reach the rehearsal: it needs none, and a real key
# has no business on a loopback server; nor a provider or a model of the user's setup.
# The OAuth token is blanked too, then set to the rehearsal's own.
BLANKED = (
    *CREDENTIAL_VARIABLES,
    *PROVIDER_VARIABLES,
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
)


def rehearsal_env(base_url: str, home: Path) -> dict[str, str]:
    env = dict.fromkeys(BLANKED, "")
    env.update(
        {
            "ANTHROPIC_BASE_URL": base_url,
            # A subscription-style login makes the CLI read rate-limit headers and report
            # rate-limit events, as it does for most people running long tasks.
            "CLAUDE_CODE_OAUTH_TOKEN": "rehearsal-token",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        }
    )
    return env


# What the pause and switch-profile rehearsals set, as a user would in claudeloop.toml.
PAUSE_AT = PauseThresholds.parse("5h=90%")
LOCAL_PROFILE = "rehearsal-local"
SWITCH_TO_LOCAL = LimitPolicies((("five_hour", SwitchProfile(LOCAL_PROFILE)),))
LOCAL_SCENARIO = "switch-profile-local"
# What the verify rehearsal sets, as `--verify 'test -f step3.txt' --review` would.
VERIFY = VerifyRules(checks=(CheckCommand.parse("test -f step3.txt"),), review=True)
# Scenarios of a local server's failures, played through a local profile as a user on
# Ollama meets them (a 500 there is a model that failed to load, not an outage).
ON_A_LOCAL_PROFILE = ("local-busy", "local-load-failed", "model-missing")


def local_backend(base_url: str, home: Path) -> Backend:
    """The rehearsal's local profile: a rehearsal API standing in for Ollama."""
    env = rehearsal_env(base_url, home)
    env.update(
        {
            "CLAUDE_CODE_OAUTH_TOKEN": "",
            # The dummy token a real local profile sends: "ollama" would be masked as a
            # secret wherever the word appears (`ollama pull` in the fix).
            "ANTHROPIC_AUTH_TOKEN": DUMMY_TOKEN,
            "ANTHROPIC_MODEL": "qwen3",
        }
    )
    profile = BackendProfile(
        name=LOCAL_PROFILE,
        where=f"[profiles.{LOCAL_PROFILE}] (built into the rehearsal)",
        base_url=base_url,
        preset="ollama",
        model="qwen3",
        small_fast_model="qwen3",
        credentials="a dummy auth token (the server needs none)",
        env=env,
        marker_fallback=False,
        zero_cost=True,
    )
    return backend_for(profile)


def _local_backend(base_url: str, home: Path) -> Callable[[str], Backend]:
    return lambda _name: local_backend(base_url, home)


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
    targets = _notify_targets(notify)
    workdir = Path(tempfile.mkdtemp(prefix="claudeloop-rehearsal-"))
    directory: RunDirectory | None = None
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
            home = workdir / "home"
            own = (
                local_backend(server.base_url, home)
                if scenario in ON_A_LOCAL_PROFILE
                else Backend(env=rehearsal_env(server.base_url, home))
            )
            spec = RunSpec(
                cwd=project,
                task=plan_task("PLAN.md"),
                plan_path=plan,
                wait_policy=REHEARSAL_POLICY,
                permission_mode="acceptEdits",
                profile=own.profile.name if own.profile else "rehearsal",
                marker_fallback=own.marker_fallback,
                pause_at=PAUSE_AT if scenario == "pause" else PauseThresholds(),
                limits=SWITCH_TO_LOCAL if local is not None else LimitPolicies(),
                verify=VERIFY if scenario == "verify" else VerifyRules(),
            )
            record = new_record(spec, None)
            directory = create_directory(record)
            ended = drive_run(
                wire_run(
                    directory,
                    record,
                    backend=own,
                    quiet=as_json,
                    notify=targets,
                    detours=_local_backend(local.base_url, home) if local else None,
                    # Its own record: a rehearsal never shares capacity with real runs.
                    capacity_dir=workdir / "state" / "capacity",
                    seat=NO_SEAT,  # nor is it a fleet's
                ),
                record,
                resumed=False,
            )
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
            click.echo(_summary_shown(directory.summary_path, workdir, keep=keep), err=True)
        finish(ended, as_json=as_json, extra={"kept": str(workdir)} if keep else None)
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
            if directory is not None:
                # Removed on purpose: not listed by `runs --all` or the dashboard as gone.
                unregister_run(directory)


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


def _notify_targets(urls: tuple[str, ...]) -> NotifyTargets | None:
    """--notify URLs, checked as `run` checks them (the config files are not read: a
    rehearsal plays the same whatever the project says)."""
    from claudeloop.cli.bootstrap.configuration import flag_notify_targets

    return flag_notify_targets(urls)
