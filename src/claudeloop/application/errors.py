"""The errors a user can cause or meet: one tree, drawn here once.

Each carries the exit code the command line documents (README, "Exit codes");
`claudeloop` prints its message as one line, `claudeloop: error: MESSAGE`, and exits with
that code, so no layer translates another's errors just to say them (httpx's
`_exceptions.py` is the model)::

    ClaudeloopError        exit 1   met, not caused: a file that cannot be written, a
    │                               Claude Code that does not run
    ├── UsageError         exit 2   a flag, file, key or value that cannot be used; the
    │   │                           message names it and what would be accepted
    │   ├── ConfigError             a configuration source: the file or variable, the
    │   │   │                       key, the value
    │   │   ├── NotToml             a configuration file that is not TOML at all (its
    │   │   │                       line and column)
    │   │   └── ProfileNotDefined   a profile selected that no file defines (the ones
    │   │                           that are, and where to add it)
    │   ├── BadEngine               a fleet engine URL (`--engine`, CLAUDELOOP_ENGINE)
    │   └── NoRun                   no run to act on; `status`, `stop` and `wind-down`
    │                               say so and exit 0, `resume` and `logs` exit 2
    ├── NoCredentials      exit 77  Claude Code has no credentials at all
    └── FleetUnavailable   exit 1   the fleet's database cannot be reached or set up

A run's own ends (blocked, a budget, a wait too long, wound down, refused credentials, a
misconfigured backend, a stop) are outcomes with exit codes of their own, not errors.

Errors a user never sees as they are. Each is raised inside one adapter (or the
rehearsal, or the record's codec) and caught at its edge, where it becomes a line of the
tree above, a run's outcome with its reason, or something the loop goes on without:

- `RunLocked`: a run another live driver holds; a UsageError naming its process.
- `CorruptRecordError`, `NewerRecordError`: state.json damaged, or written by a newer
  claudeloop; a UsageError naming the file (what to upgrade, for the newer).
- `DecodeError`, `NewerFormat`: a stored value that is not what its type says, or from
  a newer format; the record's codec says it as the two above.
- `UnreadableEventLine`: a warning, not an error: a line of events.jsonl cut by a crash
  is skipped.
- `NotATaskFile`, `TaskTooLarge`: a prompt or plan path that is no regular file, or too
  large; a UsageError naming the path.
- `GitFailed`, `RepoFailed`: a git command that failed; the run ends `failed` with what
  git said, or the fleet's run does.
- `RunIdTaken`: a run id already in the fleet's queue; a UsageError.
- `Fenced`, `WorkerRunning`: a fleet worker that was taken over, or a second worker of
  one name; the run is handed back, or the worker says so in one line.
- `Cancelled`: a fleet's run cancelled before its worker could start it; the worker
  says so in one line and does not start it.
- `NoRoom`: a fleet's run whose account has its limit of runs running; the worker
  says so in one line and starts it once one of them ends.
- `BoardBusy`, `BoardUnavailable`: the capacity board could not be read or written; the
  loop goes on alone and says so.
- `NotifyUnavailable`: notifications configured that cannot be sent; a UsageError at
  start naming where `notify` was set.
- `ScenarioError`, `BadRequest`: a rehearsal scenario that cannot be played (a
  UsageError of `rehearse`), or a request the rehearsal API answers with a 400.
- `OutputClosed`: the reader of claudeloop's output went away; exit 141, nothing said.

tests/docs/test_error_tree.py holds this page to the code: every exception class of
claudeloop is named here, and every ClaudeloopError is defined in this module.
"""

from __future__ import annotations


class ClaudeloopError(Exception):
    """One line for the person, and the exit code for the shell (1 unless said)."""

    exit_code: int = 1

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(ClaudeloopError):
    """A flag, file, key or value that cannot be used: the message names it and what
    would be accepted (exit 2)."""

    exit_code = 2


class ConfigError(UsageError):
    """A source says something claudeloop cannot use; the message is one line naming
    the file or variable, the key, the value and what would be accepted."""


class NotToml(ConfigError):
    """A configuration file that is not TOML at all: no key of it could be read. The
    message names where (line and column) and what the reader met there."""


class ProfileNotDefined(ConfigError):
    """A profile selected (--profile, `profile`, CLAUDELOOP_PROFILE) that no file
    defines: `name`, and the profiles that are defined (`defined`, sorted)."""

    def __init__(self, message: str, *, name: str, defined: tuple[str, ...]) -> None:
        super().__init__(message)
        self.name = name
        self.defined = defined


class BadEngine(UsageError, ValueError):
    """An engine URL that cannot be used; the message is one line, password masked."""


class NoRun(UsageError):
    """No run to act on: none in the working directory, or none a live driver drives.
    `status`, `stop` and `wind-down` say so in a line and exit 0 (there is nothing to
    report or end, and nothing the user typed was wrong); where a run is needed to go on
    (`resume`, `logs`) it stays a usage error, exit 2."""


class NoCredentials(ClaudeloopError):
    """Claude Code has no credentials at all: a run would be refused at its first turn,
    so it does not start (exit 77, the code of refused credentials)."""

    exit_code = 77


class FleetUnavailable(ClaudeloopError, OSError):
    """The engine's database could not be reached or set up; one line, no password."""
