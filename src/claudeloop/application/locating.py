"""Where a run named by its id lives: the project folder a command is in, or, when that
folder holds no run of the id, the one this machine's index of runs knows it in (a run
started in another folder, named from here)."""

from __future__ import annotations

from pathlib import Path

from claudeloop.application.errors import UsageError
from claudeloop.application.ports import ProjectRuns, RunIndex


def project_of_run(run_id: str, *, runs: ProjectRuns, index: RunIndex) -> Path:
    """The project folder of run `run_id`: that of `runs` when they hold it, else the
    one folder the index knows it in. UsageError, naming both places looked, when
    neither has it, or when the index knows it in several folders (which is for --cwd
    to say)."""
    here = runs.where
    if run_id in runs.run_ids():
        return here
    known = [run for run in index.runs() if run.run_id == run_id and index.present(run)]
    projects = sorted({run.cwd for run in known if run.cwd != here})
    if len(projects) == 1:
        return projects[0]
    if projects:
        folders = ", ".join(str(project) for project in projects)
        raise UsageError(
            f"RUN {run_id}: no such run in {here}; this machine's index of runs knows "
            f"runs of that id in {folders}: name the folder with --cwd"
        )
    raise UsageError(
        f"RUN {run_id}: no such run in {here}, nor in this machine's index of runs "
        "(`claudeloop runs --all` lists every run it knows)"
    )
