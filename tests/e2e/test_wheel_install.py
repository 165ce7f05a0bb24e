"""The README's install from a built wheel, as a user does it: the wheel built from this
checkout, installed into a fresh venv outside the repository, runs `claudeloop
rehearse happy` from a folder of its own with nothing of the checkout on sys.path; and the
hint for a missing extra is a command that works there, word for word.

The dependencies are the versions uv.lock names (`make test` installs the same), so a
release on the registry today changes nothing here; uv installs them from the cache `make`
filled, so the test downloads nothing a second time. The missing extra's hint names uv,
the installer of that venv, and is run as the user would run it, held to the lock by
UV_CONSTRAINT.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPOSITORY = Path(__file__).resolve().parents[2]
# The uv `make` installs from requirements/uv.txt, the one that made this checkout's venvs.
UV = REPOSITORY / ".venv-uv" / "bin" / "uv"


def run(*command: str | Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )


def test_the_wheel_installs_in_a_fresh_venv_and_rehearses_outside_the_repository(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert not outside.is_relative_to(REPOSITORY)
    # A user's shell: nothing of this checkout's venv or sys.path, no credentials.
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ANTHROPIC_", "CLAUDE", "PYTHON", "VIRTUAL_ENV", "PIP_REQUIRE"))
    }
    env["HOME"] = str(tmp_path / "home")

    assert UV.exists(), f"{UV} is missing: `make test` installs it (requirements/uv.txt)"
    # The user's caches (HOME as it is) serve what `make` already fetched.
    cached = {**env, "HOME": os.environ.get("HOME", "/root")}
    built = run(
        UV, "build", "--wheel", "--quiet", "--out-dir", tmp_path / "dist", REPOSITORY,
        cwd=outside, env=cached,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("claudeloop-*-py3-none-any.whl")
    locked = tmp_path / "constraints.txt"
    exported = run(
        UV, "export", "--frozen", "--all-extras", "--no-hashes", "--no-emit-project",
        "--project", REPOSITORY, "--output-file", locked,
        cwd=outside, env=cached,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr

    venv = tmp_path / "venv"
    # uv installs here, not pip: the venv goes without pip's own copy (ensurepip alone
    # cost more CPU than the rest of the install).
    made = run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=outside, env=env)
    assert made.returncode == 0, made.stderr
    installed = run(
        UV, "pip", "install", "--quiet", "--python", venv / "bin" / "python",
        "--constraints", locked, wheel,
        cwd=outside, env=cached,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    # The user has the uv that installed the venv on PATH, and keeps to the lock.
    uv_env = {
        **cached,
        "PATH": f"{UV.parent}{os.pathsep}{env.get('PATH', '')}",
        "UV_CONSTRAINT": str(locked),
    }

    where = run(
        venv / "bin" / "python",
        "-c",
        "import claudeloop; print(claudeloop.__file__)",
        cwd=outside,
        env=env,
    )
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout

    # The plain three turns: the waits and probes of the other scenarios are the same
    # code, rehearsed by the end-to-end tests against this checkout.
    rehearsed = run(venv / "bin" / "claudeloop", "rehearse", "happy", cwd=outside, env=env)
    assert rehearsed.returncode == 0, rehearsed.stderr
    assert "claudeloop: done (exit 0)" in rehearsed.stderr
    assert "Outcome: **done** (exit 0)" in rehearsed.stdout + rehearsed.stderr

    # Without the notify extra a run that notifies names the command that adds it here.
    refused = run(
        venv / "bin" / "claudeloop", "run", "--prompt", "x", "--notify", "json://127.0.0.1:9/",
        cwd=outside, env=env,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    hint = refused.stderr.strip().rsplit("(the notify extra): ", 1)[1]
    assert hint.startswith(f"uv pip install --python {venv / 'bin' / 'python'} 'apprise"), hint
    added = subprocess.run(
        hint,
        shell=True,
        cwd=outside,
        env=uv_env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert added.returncode == 0, added.stderr
    # Now the same run gets past its notifications, to the credentials it lacks.
    again = run(
        venv / "bin" / "claudeloop", "run", "--prompt", "x", "--notify", "json://127.0.0.1:9/",
        cwd=outside, env=env,
    )  # fmt: skip
    assert again.returncode == 77, again.stderr
    assert "apprise" not in again.stderr
