"""claudeloop: run Claude Code unattended until a task is truly done."""


def __getattr__(name: str) -> str:
    # Looked up when asked for: reading the installed metadata costs every command that
    # never shows the version about 50 ms at its start.
    if name != "__version__":
        raise AttributeError(f"module 'claudeloop' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("claudeloop")
    except PackageNotFoundError:  # pragma: no cover - a source tree without install
        return "0.0.0"
