"""claudeloop: run Claude Code unattended until a task is truly done."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("claudeloop")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"
