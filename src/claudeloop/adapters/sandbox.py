"""The boundary on this machine: whether it can be built, Claude Code's sandbox settings
for a run's turns, and bubblewrap around the checks claudeloop runs itself.

Claude Code's own sandbox (bubblewrap and socat on Linux, Seatbelt on macOS) confines
the model's shell commands; `permissions.blockReadsOutsideWorkingDirectories` keeps its
file tools and its commands out of the home. Measured with Claude Code 2.1.337
(docs/architecture/threat-model.md): a secret in ~/.ssh is "No such file or directory",
a write outside the tree "Read-only file system", a connection to a domain not allowed
a 403 with a `<sandbox_violations>` line. The checks (`--verify`) are claudeloop's own
processes, so claudeloop holds the same lines around them with bubblewrap.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, assert_never

from claudeloop.adapters.redaction import looks_secret
from claudeloop.domain.confinement import (
    CommandsRefused,
    Confined,
    Posture,
    Unavailable,
    Unconfined,
)

# The toolchains and caches of a home that commands may read: interpreters, compilers,
# package caches. Everything else of the home (ssh, cloud and registry credentials,
# netrc, forge CLIs' tokens, shell profiles, Claude Code's and claudeloop's own state)
# stays hidden, by principle: what is not named here or in `sandbox_allow_read` is not
# readable. A named folder that holds a credential file is named below it (cargo's bin
# and registry, never ~/.cargo/credentials.toml).
TOOLCHAINS: tuple[str, ...] = (
    ".pyenv",
    ".local/bin",
    ".local/lib",
    ".local/pipx",
    ".local/share/uv",
    ".cache/pip",
    ".cache/uv",
    ".cargo/bin",
    ".cargo/registry",
    ".rustup",
    ".nvm",
    ".volta",
    ".bun/bin",
    ".deno/bin",
    ".rbenv",
    ".sdkman",
    ".asdf",
    "go/pkg",
    ".m2/repository",
    ".gradle/caches",
)
# What the trial of bubblewrap runs: a new user, pid and network namespace, as the
# checks get.
_TRIAL = ("--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--unshare-net", "true")


def unavailable(environ: Mapping[str, str] = os.environ) -> Unavailable | None:
    """Why the sandbox cannot run here (None: it can). On Linux it needs bubblewrap and
    socat, and namespaces the kernel lets us make; macOS has Seatbelt built in."""
    system = platform.system()
    if system == "Darwin":
        return None
    if system != "Linux":
        return Unavailable(
            why=f"{system} has no sandbox Claude Code supports", fix="run on Linux or macOS"
        )
    path = environ.get("PATH")
    missing = [tool for tool in ("bwrap", "socat") if shutil.which(tool, path=path) is None]
    if missing:
        names = " and ".join("bubblewrap" if tool == "bwrap" else tool for tool in missing)
        return Unavailable(why=f"{names} not installed", fix=install_command())
    bwrap = shutil.which("bwrap", path=path)
    assert bwrap is not None
    try:
        trial = subprocess.run(
            [bwrap, *_TRIAL], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return Unavailable(why=f"bubblewrap did not run ({error})", fix=_NAMESPACES)
    if trial.returncode != 0:
        said = (trial.stderr.strip().splitlines() or ["no reason given"])[-1]
        return Unavailable(why=f"bubblewrap cannot make a sandbox here ({said})", fix=_NAMESPACES)
    return None


_NAMESPACES = (
    "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; "
    "in a container, run it with --privileged or a seccomp profile that allows them)"
)


def install_command() -> str:
    """The command that installs bubblewrap and socat with this machine's packager."""
    for packager, command in (
        ("apt-get", "sudo apt-get install bubblewrap socat"),
        ("dnf", "sudo dnf install bubblewrap socat"),
        ("pacman", "sudo pacman -S bubblewrap socat"),
        ("zypper", "sudo zypper install bubblewrap socat"),
        ("apk", "sudo apk add bubblewrap socat"),
    ):
        if shutil.which(packager) is not None:
            return command
    return "install bubblewrap and socat with your system's packager"


def home_reads(home: Path, allow_read: Iterable[str]) -> list[str]:
    """The home's folders commands may read: the toolchains that exist, and what the
    user named (`~` is the home)."""
    named = [home / folder for folder in TOOLCHAINS]
    named += [Path(os.path.expanduser(path)) if path.startswith("~") else Path(path)
              for path in allow_read]  # fmt: skip
    return [str(path) for path in named if path.exists()]


def claude_settings(
    chosen: Posture,
    *,
    run_dir: Path,
    reads: Sequence[str],
    secret_names: Iterable[str],
) -> dict[str, Any] | None:
    """Claude Code's settings for the run's turns (`--settings`, over the user's own);
    None where the user said `--sandbox off`. `run_dir`: claudeloop's own folder, which
    no command or tool of the model may change (its control file steers the run).
    `reads`: folders outside the tree commands may read (toolchains, a worktree's git
    directory)."""
    deny_own = [f"Edit(/{run_dir}/**)"]  # `//` begins an absolute path in a rule
    match chosen:
        case Confined(allow_domains=domains):
            return {
                "sandbox": {
                    "enabled": True,
                    "autoAllowBashIfSandboxed": True,
                    "allowUnsandboxedCommands": False,
                    # Never the warning and unconfined commands where bubblewrap broke
                    # since the start's check.
                    "failIfUnavailable": True,
                    "network": {"allowedDomains": list(domains)},
                    "filesystem": {"allowRead": list(reads), "denyWrite": [str(run_dir)]},
                    "credentials": {
                        "envVars": [{"name": name, "mode": "deny"} for name in sorted(secret_names)]
                    },
                },
                "permissions": {"blockReadsOutsideWorkingDirectories": True, "deny": deny_own},
            }
        case CommandsRefused():
            # Whatever the permission mode says: a command here would run unconfined.
            return {
                "sandbox": {"enabled": False},
                "permissions": {
                    "blockReadsOutsideWorkingDirectories": True,
                    "deny": ["Bash", *deny_own],
                },
            }
        case Unconfined():
            return None
        case _:
            assert_never(chosen)


def secret_names(*environments: Mapping[str, str]) -> set[str]:
    """The variables of these environments that hold a secret (the redactor's rule)."""
    return {name for environment in environments for name in environment if looks_secret(name)}


def without_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with no variable that holds a secret: what a check may see."""
    return {name: value for name, value in environ.items() if not looks_secret(name)}


@dataclass(frozen=True, slots=True)
class CheckBoundary:
    """The lines Claude Code's sandbox holds for commands, held by bubblewrap around a
    check: the system read-only, the home hidden but for `reads`, writes only in
    `work_dir` and a private temp, claudeloop's `run_dir` read-only, no network (a
    loopback of its own), no other process to see, no secret in the environment."""

    work_dir: Path
    run_dir: Path
    home: Path | None
    reads: tuple[str, ...] = ()
    bwrap: str = "bwrap"

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """`argv` inside bubblewrap."""
        args = [self.bwrap, "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/"]
        args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        if self.home is not None and self.home != Path("/"):
            args += ["--tmpfs", str(self.home)]
            for path in self.reads:
                args += ["--ro-bind-try", path, path]
        args += ["--bind", str(self.work_dir), str(self.work_dir)]
        if self.run_dir.is_relative_to(self.work_dir) and self.run_dir.exists():
            args += ["--ro-bind", str(self.run_dir), str(self.run_dir)]
        return [*args, "--chdir", str(self.work_dir), "--", *argv]

    def environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        """`environ` without a variable that holds a secret."""
        return without_secrets(environ)
