"""Notifications through apprise: what is worth telling a person (`messages`), how a URL
is shown without its secrets (`urls`), and the event sink that sends them (`sender`).
Import the submodules: this package stays empty so `claudeloop --help` loads none of it
but the few lines `urls` needs to check a --notify flag."""
