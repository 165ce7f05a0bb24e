"""One module or package per outside thing: the Claude Code SDK, the disk, the clock."""
