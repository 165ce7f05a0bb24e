"""The Claude Code executable outside a turn: which one a run starts, what it says of its
own login (`claude auth status`), and running it for the user (`claudeloop login`,
`claudeloop claude ...`).

After `pip install claudeloop` or `uv tool install claudeloop` there is no `claude` on
PATH: the CLI is only inside the claude-agent-sdk wheel. Finding it does not import the
SDK, so the commands that need no turn stay fast.

What the CLI accepts as credentials is more than any list kept here could say (measured
on 2.1.332: ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN, an
`apiKeyHelper` in any settings file, the login in CLAUDE_CONFIG_DIR or ~/.claude or the
macOS keychain, Bedrock, Vertex, Foundry, Mantle, Anthropic on AWS or Google Cloud), so
the CLI is asked: `claude auth status` prints `"loggedIn": false` and exits 1 exactly
when a turn would end "Not logged in · Please run /login" without sending a request.

Its login, measured on 2.1.332: `auth login` (`--claudeai`, the default, `--console`,
`--sso`, `--email ADDRESS`) prints the URL to open and waits for the code the browser
shows, in a terminal or not; `setup-token` makes a long-lived token for
CLAUDE_CODE_OAUTH_TOKEN; `auth status` (`--json`, the default, or `--text`) and
`auth logout`. The REPL's `/login` needs the interactive session; `auth login` does not.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from claudeloop.application.errors import ClaudeloopError

# `claude auth status` reads files and settings; it starts in about a second.
_STATUS_TIMEOUT = 60.0


def bundled_executable() -> Path | None:
    """The CLI inside the claude-agent-sdk wheel, where the SDK itself looks first."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        return None
    name = "claude.exe" if sys.platform == "win32" else "claude"
    candidate = Path(next(iter(spec.submodule_search_locations))) / "_bundled" / name
    return candidate if candidate.is_file() else None


def bundled_version() -> str | None:
    """The bundled CLI's version, as the wheel writes it beside the executable
    ("2.1.332 (Claude Code)"), read without starting the 400 MB binary."""
    found = bundled_executable()
    if found is None:
        return None
    try:
        said = found.with_name("claude.version").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return said.removesuffix("(Claude Code)").strip() or None


def executable(configured: Path | None) -> Path | None:
    """The CLI a run starts: `configured` (CLAUDELOOP_CLI_PATH), else the bundled one,
    else a `claude` on PATH (the SDK's order); None when there is none."""
    if configured is not None:
        return configured
    on_path = shutil.which("claude")
    return bundled_executable() or (Path(on_path) if on_path else None)


def environment(backend_env: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a run gives the CLI: ours with the backend's over it (as the SDK
    merges them), without CLAUDECODE, which would make it think it runs inside a session."""
    merged = {key: value for key, value in environ.items() if key != "CLAUDECODE"}
    merged.update(backend_env)
    return merged


@dataclass(frozen=True, slots=True)
class LoginStatus:
    """What `claude auth status` said. `known` False: it said nothing readable (an older
    CLI, another executable, a crash), and nothing may be concluded from it."""

    known: bool
    logged_in: bool = False
    # How the CLI authenticates, in its words ("claude.ai", "api_key", "third_party", ...).
    method: str = ""
    # Where it looked for a login of its own.
    config_directory: str = ""


UNKNOWN = LoginStatus(known=False)


def login_status(cli: Path, env: Mapping[str, str], cwd: Path) -> LoginStatus:
    """Ask `cli` whether it has credentials, with the run's environment, in the run's
    directory (a project's settings may hold an apiKeyHelper). Never the secret itself:
    the answer names the kind of credentials only."""
    try:
        done = subprocess.run(
            [str(cli), "auth", "status", "--json"],
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_STATUS_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return UNKNOWN
    try:
        said = json.loads(done.stdout)
    except ValueError:
        return UNKNOWN
    if not isinstance(said, dict) or not isinstance(said.get("loggedIn"), bool):
        return UNKNOWN
    logged_in = said["loggedIn"]
    # A "not logged in" is believed only with the failing exit that goes with it.
    if not logged_in and done.returncode == 0:
        return UNKNOWN
    return LoginStatus(
        known=True,
        logged_in=logged_in,
        method=str(said.get("authMethod") or ""),
        config_directory=str(said.get("configDirectory") or ""),
    )


def run_interactively(cli: Path, args: Sequence[str], env: Mapping[str, str]) -> int:
    """Run `cli ARGS` on the user's terminal (stdin, stdout and stderr passed through)
    and return its exit code, 128 + N when signal N ended it, as a shell reports it."""
    with _interrupts_go_to_the_child():
        try:
            done = subprocess.run([str(cli), *args], env=dict(env), check=False)
        except OSError as error:
            raise ClaudeloopError(f"{cli} does not run: {error.strerror or error}") from None
    code = done.returncode
    return 128 - code if code < 0 else code


@contextlib.contextmanager
def _interrupts_go_to_the_child() -> Iterator[None]:
    # Ctrl-C reaches the whole foreground process group: the CLI decides what it means
    # (it cancels a login prompt), and we report the exit it chose.
    if sys.platform == "win32":
        yield
        return
    # A handler, not SIG_IGN: an ignored signal stays ignored in the child after exec.
    previous = signal.signal(signal.SIGINT, _let_the_child_decide)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _let_the_child_decide(_signal: int, _frame: FrameType | None) -> None:
    pass
