"""A run's branch in git: the worktree a `--worktree` run works in, and a commit per
answered turn (the `Checkpoints` port), which the fleet's `--repo` commits through too.

A worktree lives in the user state directory (`CLAUDELOOP_STATE_DIR/worktrees/`), not
in the checkout: a worktree inside the checkout would be seen by the checkout's own
tools (a test runner collecting its tests twice, a linter, Claude Code reading the
checkout's CLAUDE.md above the worktree's), and the checkout is never touched but for
its run directory. The branch is `claudeloop/RUN_ID`, made from HEAD.

A commit never holds the run's own files (`.claudeloop/`) nor a file holding a secret
the run knows (its `Redactor`'s values): such a file stays in the working tree,
uncommitted, and the runner says so with a `commit.refused` event.

A run's first commit looks at every file (`git add --all`) and starts a watch of the
tree (adapters/tree_watch.py); each later one stages only the paths the watch saw
change, makes the commit's tree from the last commit's (adapters/git_tree.py) and moves
the branch through a `git update-ref --stdin` kept for the run (adapters/git_stream.py),
so its cost follows what a turn changed, not the tree's size. Wherever that cannot be
sure (the watch overflowed or could not be kept, more than `_MAX_CHANGED_PATHS` paths,
a conflict in the index, git saying anything unforeseen), the commit looks at every
file again. Not seen by the watch, and so committed at the next look at every file: a
file the model staged itself without changing it in the turn, and a write through a
shared memory map.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from claudeloop.adapters.git_stream import GitStream
from claudeloop.adapters.git_tree import Entry, OldTrees, edited_tree
from claudeloop.adapters.tree_watch import Changed, TreeWatch
from claudeloop.application.branch import Merged
from claudeloop.application.errors import UsageError
from claudeloop.application.ports import Checkpoint
from claudeloop.domain.checkpoints import RUN_TRAILER, TURN_TRAILER, turn_of

_TIMEOUT_SECONDS = 300
_IDENTITY = ("-c", "user.name=claudeloop", "-c", "user.email=claudeloop@localhost")
# Never in a commit: the run directories, wherever they sit in the tree.
# (`**/` matches no directory too; a pathspec naming `.claudeloop` itself would make
# `git add` fail where it is ignored.)
_RUN_FILES = (":(exclude,glob,top)**/.claudeloop/**",)
# A file larger than this is not read for secrets; it is left out of the commit too.
MAX_SCANNED_BYTES = 20 * 1024 * 1024


class GitFailed(OSError):
    """A git command failed; the message is one line: what was done and what git said.
    An OSError, so a run it ends is `failed` with the reason, never a traceback."""


def run_branch(run_id: str) -> str:
    return f"claudeloop/{run_id}"


def git(
    directory: Path | None,
    *args: str,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    command = ["git", *(["-C", str(directory)] if directory else []), *args]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            timeout=_TIMEOUT_SECONDS,
            check=False,
            env=dict(env) if env is not None else None,
            input=stdin if stdin is not None else b"",
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitFailed(f"git {args[0]}: {error}") from None
    if check and done.returncode != 0:
        text = done.stderr.decode(errors="replace")
        said = [line for line in text.splitlines() if line.strip()]
        raise GitFailed(f"git {args[0]}: {said[-1] if said else f'exit {done.returncode}'}")
    return done


def _out(directory: Path, *args: str) -> str:
    return git(directory, *args).stdout.decode(errors="surrogateescape").strip()


# The worktree ----------------------------------------------------------------------


def worktrees_root(environ: Mapping[str, str]) -> Path:
    """CLAUDELOOP_STATE_DIR/worktrees, else the user state directory's."""
    override = environ.get("CLAUDELOOP_STATE_DIR")
    if override:
        return Path(override).expanduser() / "worktrees"
    import platformdirs

    return Path(platformdirs.user_state_dir("claudeloop")) / "worktrees"


@dataclass(frozen=True, slots=True)
class Worktree:
    """A run's worktree: `work_dir` is where the run works (the worktree, or the same
    subdirectory of it that the run was started in), `top` the worktree's root."""

    top: Path
    work_dir: Path
    branch: str
    # The branch of the checkout it was made from (None: a detached HEAD).
    base_branch: str | None
    # Uncommitted changes of the checkout that were left behind (--worktree-from head).
    left_behind: bool


def branch_exists(top: Path, branch: str) -> bool:
    done = git(top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
    return done.returncode == 0


def repository_top(cwd: Path) -> Path | None:
    """The top of the repository `cwd` is in (None: not in one, or no git)."""
    try:
        done = git(cwd, "rev-parse", "--show-toplevel", check=False)
    except GitFailed:
        return None
    if done.returncode != 0:
        return None
    return Path(done.stdout.decode(errors="surrogateescape").strip())


def make_worktree(
    cwd: Path, run_id: str, *, root: Path, carry: bool, merging: str | None = None
) -> Worktree:
    """A worktree of the repository `cwd` is in, on `claudeloop/RUN_ID` made from HEAD,
    under `root`; `carry`: the checkout's uncommitted changes (untracked files too) are
    copied into it, else left behind. `merging`: a branch merged into it at once, its
    conflicts left in the files for the run to resolve (its first commit concludes the
    merge). The checkout itself is not changed."""
    top = repository_top(cwd)
    if top is None:
        raise UsageError(
            f"--worktree: {cwd} is not in a git repository (or git is not installed); "
            "run it in a repository, or leave out --worktree"
        )
    if git(top, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
        raise UsageError(
            f"--worktree: the repository {top} has no commit yet to branch from; "
            "commit once, or leave out --worktree"
        )
    branch = run_branch(run_id)
    if (
        git(top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode
        == 0
    ):
        raise UsageError(
            f"--worktree: the branch {branch} already exists in {top}; pick another "
            "--run-id, or delete the branch"
        )
    base = git(top, "symbolic-ref", "--short", "--quiet", "HEAD", check=False)
    base_branch = base.stdout.decode().strip() or None if base.returncode == 0 else None
    common = _out(top, "rev-parse", "--path-format=absolute", "--git-common-dir")
    key = hashlib.sha256(common.encode(errors="surrogateescape")).hexdigest()[:8]
    path = root / f"{top.name}-{key}" / run_id
    path.parent.mkdir(parents=True, exist_ok=True)
    git(top, "worktree", "add", "--quiet", "-b", branch, str(path), "HEAD")
    dirty = _out(top, "status", "--porcelain", "--", ":/", *_RUN_FILES) != ""
    if carry and dirty:
        _carry(top, path)
    if merging is not None:
        identity = () if _has_identity(path) else _IDENTITY
        done = git(path, *identity, "merge", "--no-ff", "--no-commit", merging, check=False)
        started = git(path, "rev-parse", "--verify", "--quiet", "MERGE_HEAD", check=False)
        if started.returncode != 0:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            raise GitFailed(f"git merge {merging}: {said[-1] if said else 'it did not start'}")
    inside = cwd.resolve().relative_to(top.resolve())
    return Worktree(
        top=path,
        work_dir=path / inside,
        branch=branch,
        base_branch=base_branch,
        left_behind=dirty and not carry,
    )


def _carry(top: Path, worktree: Path) -> None:
    """The checkout's uncommitted changes into the worktree: the diff of tracked files
    against HEAD, then a copy of each untracked file git does not ignore."""
    diff = git(top, "diff", "HEAD", "--binary", "--", ":/", *_RUN_FILES).stdout
    if diff:
        git(worktree, "apply", "--binary", "--whitespace=nowarn", stdin=diff)
    listed = git(top, "ls-files", "--others", "--exclude-standard", "-z", "--", ":/", *_RUN_FILES)
    for name in listed.stdout.split(b"\0"):
        if not name:
            continue
        relative = os.fsdecode(name)
        target = worktree / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(top / relative, target, follow_symlinks=False)


def restore_worktree(worktree: Path, run_id: str, *, repository: Path) -> None:
    """The run's worktree again where a resume expects it, from the run's branch, when
    it is gone (a person removed it); nothing when it is there."""
    if (worktree / ".git").exists():
        return
    top = repository_top(repository)
    if top is None:
        raise UsageError(
            f"the run's worktree {worktree} is gone and {repository} is no git repository "
            "to make it again from"
        )
    git(top, "worktree", "prune")
    try:
        git(top, "worktree", "add", "--quiet", str(worktree), run_branch(run_id))
    except GitFailed as failed:
        raise UsageError(
            f"the run's worktree {worktree} is gone and cannot be made again: {failed}"
        ) from None


# The commits -----------------------------------------------------------------------


class GitCheckpoints:
    """Satisfies the application's `Checkpoints` port: the branch checked out in
    `directory`. `holds_secret`: whether a text holds a secret the run knows; `redact`:
    a text with them masked, as every message is written (it is the model's summary,
    kept in the repository's history and shown by `status`, `git log` and every clone).
    `own`: the worktree is the run's alone, so the locks a kill -9 left in the middle of
    a commit are removed before this process's first one."""

    def __init__(
        self,
        directory: Path,
        run_id: str,
        *,
        holds_secret: Callable[[str], bool],
        redact: Callable[[str], str],
        own: bool = False,
    ) -> None:
        self._directory = directory
        self._run_id = run_id
        self._holds_secret = holds_secret
        self._redact = redact
        self._stale_locks = own  # looked for once: only a killed process leaves them
        self._branch: str | None = None
        self._tree: GitLayout | None = None
        # The turn of this process's own last commit: the branch moves by no one else's
        # commit of this run, so it is asked of git only until then (after a resume).
        self._committed_turn: int | None = None
        # What changed since the last commit (adapters/tree_watch.py); None: not watched
        # yet, or the watch could not say, so the next commit looks at every file.
        self._watch: TreeWatch | None = None
        # HEAD as this process's last commit left it: not asked of git again while only
        # this run commits here (a commit on it by anyone else fails the update of the
        # branch, which is then tried again from HEAD as git says it).
        self._head: _Head | None = None
        # The paths in the index while the tree is watched (None: not watched).
        self._tracked: set[str] | None = None
        self._streams: _Streams | None = None

    @property
    def branch(self) -> str:
        if self._branch is None:
            done = git(self._directory, "symbolic-ref", "--short", "--quiet", "HEAD", check=False)
            self._branch = done.stdout.decode().strip() or "HEAD"
        return self._branch

    def last_turn(self) -> int:
        if self._committed_turn is not None:
            return self._committed_turn
        pattern = f"^{RUN_TRAILER}: {re.escape(self._run_id)}$"
        done = git(
            self._directory,
            "log",
            "-1",
            f"--format=%(trailers:key={TURN_TRAILER},valueonly)",
            f"--grep={pattern}",
            "HEAD",
            check=False,  # no commit yet: no turn
        )
        return turn_of(done.stdout.decode(errors="replace")) if done.returncode == 0 else 0

    def _commit_changed(
        self, message: str, changed: Changed, tree: GitLayout, tracked: set[str]
    ) -> tuple[Checkpoint, _Head | None] | None:
        """The commit of what the watch saw change; None when every file must be looked
        at instead."""
        if not changed:
            return Checkpoint(sha=None), self._head  # nothing changed since the last commit
        for believed in (self._head, None) if self._head is not None else (None,):
            head = believed or _head(self._directory)
            if head is None:
                return None  # no commit yet
            try:
                return _commit_changed(
                    self._directory,
                    message,
                    changed,
                    head,
                    tracked=tracked,
                    holds_secret=self._holds_secret,
                    tree=tree,
                    streams=self._streams_of(tree),
                )
            except GitFailed:
                continue  # HEAD moved by a commit of someone else's: once more from git's
        return None

    def _streams_of(self, tree: GitLayout) -> _Streams:
        if self._streams is None:
            self._streams = _Streams(tree.top)
        return self._streams

    def close(self) -> None:
        """Stop watching the tree and end the git processes kept for the next commit."""
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        if self._streams is not None:
            self._streams.close()
            self._streams = None

    def commit(self, message: str) -> Checkpoint:
        message = self._redact(message)
        if self._tree is None:
            self._tree = GitLayout.of(self._directory)
        if self._stale_locks:
            self._tree.remove_stale_locks(self.branch)
            self._stale_locks = False
        changed = self._watch.changes() if self._watch is not None else None
        quick = None
        if changed is not None and self._tracked is not None:
            quick = self._commit_changed(message, changed, self._tree, self._tracked)
        if quick is None:
            # Watched from before the look at every file: a change made meanwhile is seen
            # by the look or by the watch, or by both.
            if self._watch is not None:
                self._watch.close()
            self._watch = TreeWatch.start(self._tree.top)
            quick = _commit(
                self._directory, message, holds_secret=self._holds_secret, tree=self._tree
            )
            self._tracked = tracked_paths(self._tree.top) if self._watch is not None else None
        done, self._head = quick
        if done.sha is not None:
            said = [line for line in message.splitlines() if line.startswith(f"{TURN_TRAILER}:")]
            if said:
                self._committed_turn = turn_of(said[-1].split(":", 1)[1])
        return done


@dataclass(frozen=True, slots=True)
class GitLayout:
    """What a commit asks of a working tree once: its top, its git directories, and
    whether git knows who commits."""

    top: Path
    git_dir: Path
    common_dir: Path
    identity: tuple[str, ...]

    @classmethod
    def of(cls, directory: Path) -> GitLayout:
        said = _out(
            directory,
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--git-common-dir",
        ).splitlines()
        known = git(directory, "config", "user.email", check=False).stdout.strip() != b""
        return cls(
            top=Path(said[0]),
            git_dir=Path(said[1]),
            common_dir=Path(said[2]),
            identity=() if known else _IDENTITY,
        )

    def remove_stale_locks(self, branch: str) -> None:
        for lock in (
            self.git_dir / "index.lock",
            self.git_dir / "HEAD.lock",
            self.common_dir / "refs" / "heads" / f"{branch}.lock",
        ):
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()


def commit_all(
    directory: Path,
    message: str,
    *,
    holds_secret: Callable[[str], bool] | None = None,
    tree: GitLayout | None = None,
) -> Checkpoint:
    """Commit every change of the working tree of `directory` (the whole repository's,
    untracked files too) but the run files and the files holding a secret. The commit
    is written with git's plumbing (write-tree, commit-tree, update-ref): no hook, no
    signing, and no second look at every file of a big tree as `git commit` takes."""
    done, _ = _commit(
        directory, message, holds_secret=holds_secret, tree=tree or GitLayout.of(directory)
    )
    return done


def _commit(
    directory: Path,
    message: str,
    *,
    holds_secret: Callable[[str], bool] | None,
    tree: GitLayout,
) -> tuple[Checkpoint, _Head | None]:
    """`commit_all`, and HEAD after it (None: not known)."""
    # The untracked cache: a directory unchanged since the last look is not read again.
    git(directory, "-c", "core.untrackedCache=true", "add", "--all", "--", ":/", *_RUN_FILES)
    changes = _name_status(
        git(
            directory,
            "-c",
            "core.quotePath=false",
            "diff",
            "--cached",
            "--name-status",
            "-z",
            "--no-renames",
        ).stdout
    )
    if not changes:
        return Checkpoint(sha=None), None
    said = git(directory, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
    parent = said.stdout.decode().strip() if said.returncode == 0 else None
    return _commit_staged(directory, message, changes, parent, holds_secret=holds_secret, tree=tree)


def _commit_staged(
    directory: Path,
    message: str,
    changes: list[tuple[str, str]],
    parent: str | None,
    *,
    holds_secret: Callable[[str], bool] | None,
    tree: GitLayout,
    written: str | None = None,
) -> tuple[Checkpoint, _Head | None]:
    """The staged `changes` committed on `parent` (`written`: the index's tree, when it
    is known), but the files holding a secret, which are unstaged; and HEAD after it."""
    refused: list[str] = []
    if holds_secret is not None:
        refused = [
            name for kind, name in changes if kind != "D" and _holds(tree.top / name, holds_secret)
        ]
    if refused:
        _unstage(directory, refused)
        written = None
    committed = tuple(name for _, name in changes if name not in refused)
    if not committed:
        return Checkpoint(sha=None, refused=tuple(refused)), None
    if written is None:
        written = _out(directory, "write-tree")
    sha = _write_commit(directory, message, written, parent, tree=tree)
    return Checkpoint(sha=sha, files=committed, refused=tuple(refused)), _Head(sha, written)


def _write_commit(
    directory: Path,
    message: str,
    written: str,
    parent: str | None,
    *,
    tree: GitLayout,
    refs: GitStream | None = None,
) -> str:
    """A commit of the tree `written` on `parent`, HEAD moved to it only from `parent`
    (another's commit meanwhile fails it: GitFailed); `refs`: a run's own
    `git update-ref --stdin`, which moves it."""
    # A merge in progress (a run resolving another's conflicts): its commit has both.
    merge_head = tree.git_dir / "MERGE_HEAD"
    other = merge_head.read_text().split()[0] if merge_head.is_file() else None
    sha = (
        git(
            directory,
            *tree.identity,
            "commit-tree",
            "--no-gpg-sign",
            *(("-p", parent) if parent else ()),
            *(("-p", other) if other else ()),
            "-F",
            "-",
            written,
            stdin=message.encode(),
        )
        .stdout.decode()
        .strip()
    )
    if refs is not None and parent:
        moved = refs.ask(
            f"start\0update HEAD\0{sha}\0{parent}\0prepare\0commit\0".encode(), lines=3
        )
        if moved != [b"start: ok", b"prepare: ok", b"commit: ok"]:
            raise GitFailed("git update-ref: HEAD is no longer the commit it was")
    else:
        subject = message.splitlines()[0] if message else "claudeloop"
        git(directory, "update-ref", "-m", f"commit: {subject}", "HEAD", sha, parent or "")
    if other:
        git(directory, "merge", "--quit")  # concluded by the commit above
    return sha


class _Streams:
    """The long-lived git processes of a run's quick commits (adapters/git_stream.py)."""

    def __init__(self, top: Path) -> None:
        self.trees = GitStream(top, "mktree", "-z", "--missing", "--batch")
        # One reflog message for them all: a stream's is given once, at its start.
        self.refs = GitStream(
            top, "update-ref", "-z", "--stdin", "-m", "commit: a turn of claudeloop"
        )

    def close(self) -> None:
        self.trees.close()
        self.refs.close()


# More paths than this changed: every file is looked at (the paths go on a command line).
_MAX_CHANGED_PATHS = 2_000


@dataclass(frozen=True, slots=True)
class _Head:
    commit: str
    tree: str


def _head(directory: Path) -> _Head | None:
    done = git(directory, "rev-parse", "HEAD", "HEAD^{tree}", check=False)
    said = done.stdout.decode().split()
    return _Head(commit=said[0], tree=said[1]) if done.returncode == 0 and len(said) == 2 else None


def _name_status(out: bytes) -> list[tuple[str, str]]:
    """`--name-status -z` as (kind, name) pairs."""
    fields = out.split(b"\0")
    return [
        (fields[index].decode(), os.fsdecode(fields[index + 1]))
        for index in range(0, len(fields) - 1, 2)
    ]


def _commit_changed(
    directory: Path,
    message: str,
    changed: Changed,
    head: _Head,
    *,
    tracked: set[str],
    holds_secret: Callable[[str], bool] | None,
    tree: GitLayout,
    streams: _Streams,
) -> tuple[Checkpoint, _Head | None] | None:
    """`_commit` looking only at the paths a watch saw change; `tracked`: the paths in
    the index, kept up to date here. None when it cannot be sure (too many paths for a
    command line, or git said something unforeseen): every file is looked at instead.

    The commit holds, of those paths, what `git add --all` stages; its tree is the last
    commit's with those paths changed (adapters/git_tree.py), not the whole index's: a
    file the model staged itself but did not change in the turn is committed at the next
    look at every file."""
    asked = set(changed.paths)
    for gone in changed.gone:
        asked.update(path for path in tracked if path.startswith(f"{gone}/"))
    # A path made and removed within the turn is neither tracked nor there: given to
    # `git add`, it would fail the whole command.
    given = sorted(path for path in asked if path in tracked or os.path.lexists(tree.top / path))
    # A path under what is a file or a link now: `git add` of that file or link removes
    # it (and, for a link, refuses to be given it).
    replaced = {path for path in given if _under_a_file(tree.top, path) in asked}
    if any(_under_a_file(tree.top, path) for path in given if path not in replaced):
        return None
    if replaced:
        given = [path for path in given if path not in replaced]
        tracked.difference_update(replaced)
    if len(given) > _MAX_CHANGED_PATHS:
        return None
    if not given:
        return Checkpoint(sha=None), head
    old = OldTrees(tree.top, head.tree, given)
    try:
        return _stage_and_commit(
            directory,
            message,
            given=given,
            head=head,
            old=old,
            tracked=tracked,
            holds_secret=holds_secret,
            tree=tree,
            streams=streams,
        )
    finally:
        old.close()


def _stage_and_commit(
    directory: Path,
    message: str,
    *,
    given: list[str],
    head: _Head,
    old: OldTrees,
    tracked: set[str],
    holds_secret: Callable[[str], bool] | None,
    tree: GitLayout,
    streams: _Streams,
) -> tuple[Checkpoint, _Head | None] | None:
    literal = ("--literal-pathspecs", "-c", "core.quotePath=false")
    done = git(
        tree.top,
        *literal,
        "-c",
        "advice.addIgnoredFile=false",
        # A few paths: the threads that would look at them side by side cost more.
        "-c",
        "core.preloadIndex=false",
        "add",
        "--all",
        "--pathspec-from-file=-",
        "--pathspec-file-nul",
        stdin=b"\0".join(os.fsencode(path) for path in given),
        env={**os.environ, "LC_ALL": "C", "LANGUAGE": ""},
        check=False,
    )
    # New files git ignores are left out, said on stderr, and the exit is 1.
    if done.returncode != 0 and not (
        done.returncode == 1 and done.stderr.startswith(_IGNORED_SAID)
    ):
        return None
    staged = _staged(git(tree.top, *literal, "ls-files", "--stage", "-z", "--", *given).stdout)
    if staged is None:
        return None  # a conflict in the index: git's own way says what to commit
    changes: dict[str, Entry | None] = {path: staged.get(path) for path in given}
    edited = edited_tree(old, changes, trees_out=streams.trees)
    if edited is None:
        return None
    refused = [
        path
        for path in edited.changed
        if changes[path] is not None
        and holds_secret is not None
        and _holds(tree.top / path, holds_secret)
    ]
    if refused:
        _unstage(directory, refused)
        for path in refused:
            del changes[path]
        edited = edited_tree(old, changes, trees_out=streams.trees) if changes else None
        if changes and edited is None:
            return None
    for path in given:
        if staged.get(path) is not None:
            tracked.add(path)
        else:
            tracked.discard(path)
    if refused:  # unstaged: in the index again only where the last commit has them
        tracked.difference_update(refused)
        tracked.update(_names(tree.top, "--literal-pathspecs", "ls-files", "-z", "--", *refused))
    if edited is None or not edited.changed:
        return Checkpoint(sha=None, refused=tuple(refused)), head
    sha = _write_commit(directory, message, edited.tree, head.commit, tree=tree, refs=streams.refs)
    return Checkpoint(sha=sha, files=edited.changed, refused=tuple(refused)), _Head(
        sha, edited.tree
    )


def _under_a_file(top: Path, path: str) -> str | None:
    """The directory of `path` that is a file or a link now (None: none is)."""
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        directory = "/".join(parts[:depth])
        if not (top / directory).is_dir() or (top / directory).is_symlink():
            return directory if os.path.lexists(top / directory) else None
    return None


def _staged(out: bytes) -> dict[str, Entry] | None:
    """`ls-files --stage -z` as path -> entry; None when a path is in conflict."""
    staged: dict[str, Entry] = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        fields, _, path = record.partition(b"\t")
        said = fields.decode(errors="replace").split()
        if len(said) != 3:
            return None
        mode, sha, stage = said
        if stage != "0":
            return None
        staged[os.fsdecode(path)] = Entry(mode, sha)
    return staged


_IGNORED_SAID = b"The following paths are ignored by one of your .gitignore files:"


def tracked_paths(directory: Path) -> set[str]:
    """The paths in the index of the repository `directory` is in, from its top."""
    out = git(directory, "ls-files", "-z", "--full-name", "--", ":/").stdout
    return {os.fsdecode(name) for name in out.split(b"\0") if name}


def _names(directory: Path, *args: str) -> list[str]:
    out = git(directory, "-c", "core.quotePath=false", *args).stdout
    return [os.fsdecode(name) for name in out.split(b"\0") if name]


def _holds(path: Path, holds_secret: Callable[[str], bool]) -> bool:
    try:
        if path.is_symlink():
            return holds_secret(os.readlink(path))
        if path.stat().st_size > MAX_SCANNED_BYTES:
            return True  # not read, so not known to be free of one
        return holds_secret(path.read_bytes().decode(errors="replace"))
    except OSError:
        return False  # gone since it was staged: git commits what it staged


def _unstage(directory: Path, names: list[str]) -> None:
    has_head = (
        git(directory, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0
    )
    literal = [f":(literal,top){name}" for name in names]
    if has_head:
        git(directory, "reset", "--quiet", "HEAD", "--", *literal)
    else:
        git(directory, "rm", "--cached", "--quiet", "--", *literal)


def _has_identity(directory: Path) -> bool:
    return git(directory, "config", "user.email", check=False).stdout.strip() != b""


# Review, rewind and merge --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnCommit:
    turn: int
    sha: str
    subject: str


def turn_commits(directory: Path, run_id: str) -> list[TurnCommit]:
    """The commits of run `run_id` on the branch checked out in `directory`, oldest
    first, each with the turn its trailer names."""
    if git(directory, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode:
        return []
    pattern = f"^{RUN_TRAILER}: {re.escape(run_id)}$"
    log = git(
        directory,
        "log",
        "--reverse",
        f"--grep={pattern}",
        f"--format=%H%x1f%s%x1f%(trailers:key={TURN_TRAILER},valueonly,separator=)%x1e",
        "HEAD",
    ).stdout.decode(errors="replace")
    found: list[TurnCommit] = []
    for entry in log.split("\x1e"):
        parts = entry.strip("\n").split("\x1f")
        if len(parts) == 3:
            found.append(TurnCommit(turn=turn_of(parts[2]), sha=parts[0], subject=parts[1]))
    return found


def _start_of(directory: Path, commits: list[TurnCommit]) -> str:
    """The commit the run's first commit was made on (the empty tree for a root)."""
    first = commits[0].sha
    parent = git(directory, "rev-parse", "--verify", "--quiet", f"{first}^", check=False)
    if parent.returncode == 0:
        return parent.stdout.decode().strip()
    return git(directory, "hash-object", "-t", "tree", "/dev/null").stdout.decode().strip()


def run_diff(directory: Path, run_id: str, turn: int | None, *, stat: bool = False) -> str:
    """What the run's commits changed (`turn`: that turn's commit alone), as a patch
    or (`stat`) a diffstat; "" when there is no such commit."""
    commits = turn_commits(directory, run_id)
    if not commits:
        return ""
    if turn is None:
        start, end = _start_of(directory, commits), commits[-1].sha
    else:
        chosen = [commit for commit in commits if commit.turn == turn]
        if not chosen:
            return ""
        end = chosen[-1].sha
        start = _start_of(directory, [chosen[-1]])
    shape = ("--stat",) if stat else ("--stat", "--patch")
    return git(directory, "diff", *shape, start, end).stdout.decode(errors="replace")


def branch_facts(directory: Path, run_id: str) -> dict[str, object]:
    """The branch, its commits of this run and their diffstat, for `status`."""
    commits = turn_commits(directory, run_id)
    shortstat = ""
    if commits:
        done = git(directory, "diff", "--shortstat", _start_of(directory, commits), commits[-1].sha)
        shortstat = done.stdout.decode().strip()
    head = git(directory, "symbolic-ref", "--short", "--quiet", "HEAD", check=False)
    return {
        "branch": head.stdout.decode().strip() or None,
        "commits": [{"turn": c.turn, "sha": c.sha, "subject": c.subject} for c in commits],
        "diffstat": shortstat,
    }


def rewind_to(directory: Path, run_id: str, turn: int, *, own: bool) -> tuple[str, list[int]]:
    """The branch reset to the commit of `turn` (0: to where the run began); returns the
    commit it is on now and the turns undone. `own`: the worktree is the run's, so its
    uncommitted changes go too (else git refuses to lose a person's changes)."""
    commits = turn_commits(directory, run_id)
    if not commits:
        raise UsageError(f"run {run_id} has no commit on its branch to rewind")
    undone = [commit.turn for commit in commits if commit.turn > turn]
    if turn == 0:
        target = _start_of(directory, commits)
    else:
        kept = [commit for commit in commits if commit.turn <= turn]
        if not kept:
            raise UsageError(
                f"--to-turn {turn}: no commit of run {run_id} is of turn {turn} or before; "
                f"its commits are of turns {', '.join(str(c.turn) for c in commits)}, "
                "or 0 for where it began"
            )
        target = kept[-1].sha
    try:
        git(directory, "reset", "--quiet", "--hard" if own else "--keep", target)
    except GitFailed as failed:
        raise UsageError(f"cannot rewind run {run_id}: {failed}") from None
    return target, undone


def merge_branch(repository: Path, branch: str, into: str) -> Merged:
    """`branch` merged into `into`, which must be the checkout's current branch (with
    no uncommitted change to tracked files); a merge that conflicts is undone."""
    current = git(repository, "symbolic-ref", "--short", "--quiet", "HEAD", check=False)
    if current.stdout.decode().strip() != into:
        raise UsageError(
            f"the checkout {repository} is not on {into}, the branch the run came from; "
            f"`git switch {into}` first"
        )
    dirty = git(repository, "status", "--porcelain", "--untracked-files=no").stdout.strip()
    if dirty:
        raise UsageError(
            f"the checkout {repository} has uncommitted changes; commit or stash them first"
        )
    identity = () if _has_identity(repository) else _IDENTITY
    done = git(
        repository,
        "-c",
        "commit.gpgsign=false",
        *identity,
        "merge",
        "--no-ff",
        "--no-edit",
        "-m",
        f"Merge {branch}",
        branch,
        check=False,
    )
    if done.returncode == 0:
        return Merged(sha=_out(repository, "rev-parse", "HEAD"))
    conflicts = tuple(_names(repository, "diff", "--name-only", "--diff-filter=U", "-z"))
    git(repository, "merge", "--abort", check=False)
    if not conflicts:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise GitFailed(f"git merge: {said[-1] if said else f'exit {done.returncode}'}")
    return Merged(sha=None, conflicts=conflicts)
