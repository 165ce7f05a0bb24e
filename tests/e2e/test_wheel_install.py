"""The README's install from a built wheel, as a user does it: the wheel built from this
checkout, installed into a fresh venv outside the repository, runs `claudeloop
rehearse` from a folder of its own with nothing of the checkout on sys.path; and the
hint for a missing extra is a command that works there, word for word.

pip's own cache serves the dependencies `make install` already fetched, so the test
downloads nothing a second time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPOSITORY = Path(__file__).resolve().parents[2]


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

    built = run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
        "--wheel-dir", tmp_path / "dist", REPOSITORY,
        cwd=outside, env={**env, "HOME": os.environ.get("HOME", "/root")},
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("claudeloop-*-py3-none-any.whl")

    venv = tmp_path / "venv"
    made = run(sys.executable, "-m", "venv", venv, cwd=outside, env=env)
    assert made.returncode == 0, made.stderr
    # The user's pip cache (HOME as it is) serves what `make install` already fetched.
    pip_env = {**env, "HOME": os.environ.get("HOME", "/root")}
    installed = run(
        venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheel, cwd=outside, env=pip_env
    )
    assert installed.returncode == 0, installed.stderr

    where = run(
        venv / "bin" / "python",
        "-c",
        "import claudeloop; print(claudeloop.__file__)",
        cwd=outside,
        env=env,
    )
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout

    rehearsed = run(venv / "bin" / "claudeloop", "rehearse", cwd=outside, env=env)
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
    assert hint.startswith(f"{venv / 'bin' / 'python'} -m pip install 'apprise"), hint
    added = subprocess.run(
        hint,
        shell=True,
        cwd=outside,
        env=pip_env,
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
