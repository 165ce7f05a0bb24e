"""claudeloop commands run with Claude Code's transcripts on a full disk.

Claude Code writes a session's transcript under `$CLAUDE_CONFIG_DIR/projects/`. As root
(CI runs as root) no `chmod` stops a write, so the directory is put on a small tmpfs,
nearly full, in a private mount namespace (`unshare -rm`: no root needed, nothing
outside sees the mount). `python full_disk.py PLAN.json` runs inside that namespace: it
mounts, fills, runs each command of the plan, frees the space when a step says so, and
writes what each command did to the plan's `out` file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

# The tmpfs, and what is left free on it: the first lines of a transcript fit (measured:
# the CLI's transcript stops at 8 KB), the rest of the session's do not.
SIZE_KB = 128
FREE_KB = 8


def why_not() -> str | None:
    """Why a full disk cannot be played here (None: it can)."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount is not installed"
    probe = "mount -t tmpfs -o size=4k tmpfs /mnt 2>&1 || mount -t tmpfs -o size=4k tmpfs /tmp"
    tried = subprocess.run(
        ["unshare", "-rm", "sh", "-c", probe], capture_output=True, text=True, check=False
    )
    if tried.returncode != 0:
        said = (tried.stderr or tried.stdout).strip().splitlines()
        return f"no private mount namespace with a tmpfs here: {said[-1] if said else 'refused'}"
    return None


def run_on_a_full_disk(
    projects: Path, steps: list[dict[str, Any]], *, env: dict[str, str], work: Path
) -> list[dict[str, Any]]:
    """Each step (`args`: claudeloop's, `free_first`: free the disk before it) run with
    `projects` on a nearly full tmpfs; what each did: `exit_code`, `stdout`, `stderr`."""
    plan = work / "full-disk-plan.json"
    out = work / "full-disk-out.json"
    plan.write_text(json.dumps({"projects": str(projects), "steps": steps, "out": str(out)}))
    projects.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["unshare", "-rm", sys.executable, __file__, str(plan)],
        env=env,
        check=True,
        timeout=300,
    )
    return list(json.loads(out.read_text()))


def _main(plan_path: Path) -> None:
    plan = json.loads(plan_path.read_text())
    projects = Path(plan["projects"])
    size = f"size={SIZE_KB}k"
    subprocess.run(["mount", "-t", "tmpfs", "-o", size, "tmpfs", str(projects)], check=True)
    filler = projects / "filler"
    filler.write_bytes(b"\0" * ((SIZE_KB - FREE_KB) * 1024))
    done: list[dict[str, Any]] = []
    for step in plan["steps"]:
        if step.get("free_first"):
            filler.unlink(missing_ok=True)
        ran = subprocess.run(
            [sys.executable, "-m", "claudeloop", *step["args"]],
            capture_output=True,
            text=True,
            timeout=200,
            check=False,
        )
        done.append({"exit_code": ran.returncode, "stdout": ran.stdout, "stderr": ran.stderr})
    Path(plan["out"]).write_text(json.dumps(done))


if __name__ == "__main__":
    _main(Path(sys.argv[1]))
