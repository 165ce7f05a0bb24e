"""The run directory: `<cwd>/.claudeloop/runs/<run_id>/` with events, state, control, lock."""

from claudeloop.adapters.run_directory.layout import RunDirectory, runs_root

__all__ = ["RunDirectory", "runs_root"]
