"""The commands that set a project and its account up, or check them: `init`, `config
show`, `doctor`, `login`, `claude` and `completion`. Parsing only: the work is in
init_project.py, show_config.py, doctor.py, login.py and completion.py, imported when a
command is called (they read the configuration, which loads pydantic)."""

from __future__ import annotations

from pathlib import Path

import click

from claudeloop.cli.options import JSON_OPTION, HelpGroup
from claudeloop.cli.params import CWD_OPTION, OneLineChoice


@click.group(
    cls=HelpGroup,
    epilog="""\b
Examples:
  claudeloop config show
  claudeloop config show --profile local --json
""",
)
def config() -> None:
    """Configuration: claudeloop.toml, the user config.toml, CLAUDELOOP_* variables."""


@config.command(
    "show",
    epilog="""\b
Examples:
  claudeloop config show
  claudeloop config show --json | jq .settings.max_turns
  CLAUDELOOP_MAX_TURNS=5 claudeloop config show --profile local
""",
)
@CWD_OPTION
@click.option("--profile", default=None, help="Show this profile instead of the selected one.")
@JSON_OPTION
def config_show(cwd: Path | None, profile: str | None, as_json: bool) -> None:
    """The effective settings, where each came from, and the selected profile's
    environment for Claude Code. Secrets are masked."""
    from claudeloop.cli import show_config

    show_config.show(cwd=cwd, profile=profile, as_json=as_json)


@click.command(
    short_help="Check what a run needs: the CLI, credentials, backend, model.",
    epilog="""\b
Examples:
  claudeloop doctor
  claudeloop doctor --profile local
  claudeloop doctor --no-probe --json

Exit codes: 0 every check passed · 77 no credentials, or they were refused ·
78 the backend or the model is misconfigured · 2 a configuration file or variable
is invalid · 1 anything else failed. When several fail: the first of 2, 77, 78.
""",
)
@CWD_OPTION
@click.option("--profile", default=None, help="Check this profile instead of the selected one.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON object: every check, the CLI found, the sandbox's posture.",
)
@click.option(
    "--no-probe", is_flag=True, help="Do not send the model a probe (no request, no cost)."
)
def doctor(cwd: Path | None, profile: str | None, as_json: bool, no_probe: bool) -> None:
    """Check what a run needs: the Claude Code CLI, credentials, configuration, the
    profile, the backend and the model, and a writable run directory."""
    from claudeloop.cli import doctor as doctor_command

    doctor_command.doctor(cwd=cwd, profile=profile, as_json=as_json, probe=not no_probe)


@click.command(
    epilog="""\b
Examples:
  claudeloop init                   set up the current directory
  claudeloop init --cwd ~/src/app   set up another
  claudeloop init && claudeloop config show

Never overwrites: a file already there is left as it is, and said so.

\b
Exit codes: 0 every file written or already there · 1 one could not be
written · 2 the configuration a run would read does not load.
"""
)
@CWD_OPTION
def init(cwd: Path | None) -> None:
    """Set up a project: claudeloop.toml and PLAN.md, where they are missing.

    claudeloop.toml has every setting as a comment to uncomment, and verify
    (the commands a Done must pass) set to the project's own test command, found from its files: a
    Makefile with a test target (make test); pytest.ini, pytest in pyproject.toml,
    setup.cfg or tox.ini, or a tests/ directory beside pyproject.toml or setup.cfg
    (pytest); a test script in package.json (npm test); Cargo.toml (cargo test);
    go.mod (go test ./...). The first found wins; the others are named."""
    from claudeloop.cli import init_project

    init_project.init(cwd=cwd)


@click.command(
    epilog="""\b
Examples:
  eval "$(claudeloop completion bash)"    in ~/.bashrc
  eval "$(claudeloop completion zsh)"     in ~/.zshrc, after compinit
  claudeloop completion fish > ~/.config/fish/completions/claudeloop.fish
"""
)
@click.argument("shell", type=OneLineChoice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(context: click.Context, shell: str) -> None:
    """Print the shell completion script of bash, zsh or fish.

    Commands, options and their choices then complete on Tab (click's shell
    completion; bash 4.4 or newer)."""
    from claudeloop.cli import completion as completion_command

    click.echo(completion_command.script(context.find_root().command, shell), nl=False)


@click.command(
    short_help="Log Claude Code in, with the environment a run gives it.",
    context_settings={"ignore_unknown_options": True},
    epilog="""\b
Examples:
  claudeloop login               a Claude subscription (Pro, Max, Team)
  claudeloop login --console     an Anthropic Console account (API billing)
  claudeloop login --sso         through your organization's single sign-on
  claudeloop claude auth status  what Claude Code will authenticate with

Any other option goes to the CLI's `auth login` as it is. For a token to put
in CLAUDE_CODE_OAUTH_TOKEN: claudeloop claude setup-token.
""",
)
@CWD_OPTION
@click.option("--profile", default=None, help="Log in as this profile's runs would.")
@click.option("--console", is_flag=True, help="An Anthropic Console account (API billing) instead.")
@click.option("--sso", is_flag=True, help="Through your organization's single sign-on.")
@click.option("--email", default=None, help="The address to fill in on the login page.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def login(
    *,
    cwd: Path | None,
    profile: str | None,
    console: bool,
    sso: bool,
    email: str | None,
    args: tuple[str, ...],
) -> None:
    """Log Claude Code in: runs the `auth login` of the Claude Code CLI bundled
    with claudeloop, with the environment a run gives it (CLAUDE_CONFIG_DIR and
    the profile's variables), on this terminal."""
    from claudeloop.cli import login as login_command

    passed = [
        *(["--console"] if console else []),
        *(["--sso"] if sso else []),
        *(["--email", email] if email is not None else []),
        *args,
    ]
    login_command.login(cwd=cwd, profile=profile, args=passed)


@click.command(
    short_help="Run the Claude Code CLI bundled with claudeloop, with ARGS.",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    epilog="""\b
Examples:
  claudeloop claude --version
  claudeloop claude auth status --text
  claudeloop claude setup-token   a token for CLAUDE_CODE_OAUTH_TOKEN
  claudeloop claude -- --help     the CLI's own help
""",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def claude(args: tuple[str, ...]) -> None:
    """Run the Claude Code CLI bundled with claudeloop (none need be on PATH)
    with ARGS, in the environment a run gives it; exits with its exit code."""
    from claudeloop.cli import login as login_command

    login_command.claude(args=args)


def register(cli: click.Group) -> None:
    """Add the commands that set a project up, or check it, to `cli`."""
    for command in (config, doctor, init, completion, login, claude):
        cli.add_command(command)
