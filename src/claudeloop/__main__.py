"""`python -m claudeloop` is the `claudeloop` command."""

from claudeloop.cli.main import main

main()
