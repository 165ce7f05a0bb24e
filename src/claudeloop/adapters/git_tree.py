"""A commit's tree with some paths changed, written without the index.

After a turn the index holds what `git add` staged of the paths the turn changed
(adapters/git_checkpoint/quick_commit.py). `git write-tree` would make the commit's tree from the
whole index, reading and writing all of it again (a repository of 10,000 files: an
index of about 900 KB, half of a checkpoint's time). Only the trees on the way to a
changed path can differ from the last commit's, so only those are read
(`git cat-file --batch`) and written (`git mktree --batch`); every other tree is the
last commit's own, by its hash.

The hashes of the new trees are computed here too (a tree is its entries sorted as git
sorts them, each `mode name NUL hash`): a parent tree names its subtrees by hash, so all
of them can be given to one `git mktree`, whose own answer must then agree with ours.
Anything unforeseen (a path git cannot have, a tree that does not read back as one, an
answer that disagrees) is None, and the caller makes the tree the usual way.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from claudeloop.adapters.git_stream import GitStream

_TREE = "40000"
_TIMEOUT_SECONDS = 300


@dataclass(frozen=True, slots=True)
class Entry:
    """What a tree holds at a name: its mode as git writes it (`100644`, `100755`,
    `120000`, `160000`, or `40000` for a tree) and the object's hash."""

    mode: str
    sha: str

    @property
    def kind(self) -> str:
        if self.mode == _TREE:
            return "tree"
        return "commit" if self.mode == "160000" else "blob"


@dataclass(frozen=True, slots=True)
class Edited:
    """The new root tree, and the paths whose entry differs from the old tree's."""

    tree: str
    changed: tuple[str, ...]


class OldTrees:
    """The trees of `base` on the way to some paths, read by a `git cat-file` that runs
    meanwhile (a checkpoint starts it before its `git add`, which it does not need)."""

    def __init__(self, top: Path, base: str, paths: list[str]) -> None:
        self.base = base
        self._directories = _directories(paths)
        asked = "".join(
            f"{base}:{directory}\n" if directory else f"{base}\n" for directory in self._directories
        ).encode()
        self._read: dict[str, dict[str, Entry]] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        if any("\n" in path for path in paths):
            self._failed = True  # not a line of cat-file's input; the caller looks again
            return
        self._failed = False
        try:
            self._process = subprocess.Popen(
                ["git", "-C", str(top), "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            self._failed = True
            return
        if len(asked) < _PIPE_BYTES:
            # Taken whole by the pipe, however long git takes to answer: written now.
            self._asked = b""
            self._write(asked)
        else:
            self._asked = asked  # written with the reading, or both would wait

    def _write(self, asked: bytes) -> None:
        stdin = self._process.stdin if self._process is not None else None
        if stdin is None:
            return
        try:
            stdin.write(asked)
            stdin.close()
        except OSError:
            self._failed = True

    def trees(self) -> dict[str, dict[str, Entry]] | None:
        """Each directory's entries (empty where `base` has none), a copy to edit."""
        if self._read is None and not self._failed:
            self._read = self._collect()
            self._failed = self._read is None
        if self._read is None:
            return None
        return {directory: dict(entries) for directory, entries in self._read.items()}

    def close(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def _collect(self) -> dict[str, dict[str, Entry]] | None:
        process = self._process
        if process is None:
            return None
        try:
            if self._asked:
                out, _ = process.communicate(self._asked, timeout=_TIMEOUT_SECONDS)
            else:  # asked already; its stdin is closed
                assert process.stdout is not None  # a pipe, as started
                out = process.stdout.read()
                process.wait(timeout=_TIMEOUT_SECONDS)
        except (OSError, subprocess.TimeoutExpired):
            self.close()
            return None
        if process.returncode != 0:
            return None
        return _parse_batch(out, self._directories, hash_bytes=len(self.base) // 2)


# Linux's pipe holds 64 KiB: a request shorter than this never waits for git to read it.
_PIPE_BYTES = 60 * 1024


def _directories(paths: list[str]) -> list[str]:
    """The directories on the way to each path, the top ("") first."""
    directories = {""}
    for path in paths:
        parts = path.split("/")[:-1]
        directories.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    return sorted(directories)


def edited_tree(
    old: OldTrees, changes: Mapping[str, Entry | None], *, trees_out: GitStream
) -> Edited | None:
    """The old tree with each path of `changes` (relative to the top, with `/`) set to
    its entry, or removed where it is None; its new trees written through `trees_out`
    (a `git mktree -z --missing --batch`). None when it cannot be made this way (see
    the module's docstring)."""
    if not changes or any(not _is_clean(path) for path in changes):
        return None
    trees = old.trees()
    directories = _directories(list(changes))
    if trees is None or any(directory not in trees for directory in directories):
        return None
    base = old.base
    before = {path: _lookup(trees, path) for path in changes}
    for path, entry in changes.items():
        parent, _, name = path.rpartition("/")
        if entry is None:
            trees[parent].pop(name, None)
        else:
            trees[parent][name] = entry
    written: list[tuple[str, dict[str, Entry]]] = []
    root = base
    # The deepest first: a tree's hash is known before its parent names it.
    for directory in sorted(directories, key=lambda name: name.count("/") if name else -1)[::-1]:
        entries = trees[directory]
        if directory == "":
            if not entries:
                return None  # an empty root: git's own way says what it means
            root = _hash(entries, len(base))
            written.append((root, entries))
            continue
        parent, _, name = directory.rpartition("/")
        existing = trees[parent].get(name)
        if existing is not None and existing.mode != _TREE:
            if entries:
                return None  # a file and a directory at one path: the index cannot say so
            continue
        if not entries:
            trees[parent].pop(name, None)  # git keeps no empty directory
            continue
        sha = _hash(entries, len(base))
        trees[parent][name] = Entry(_TREE, sha)
        written.append((sha, entries))
    if root != base and not _write(trees_out, written):
        return None
    changed = tuple(sorted(path for path, entry in changes.items() if before[path] != entry))
    return Edited(tree=root, changed=changed)


def _is_clean(path: str) -> bool:
    parts = path.split("/")
    return all(part not in ("", ".", "..") for part in parts)


def _lookup(trees: Mapping[str, Mapping[str, Entry]], path: str) -> Entry | None:
    parent, _, name = path.rpartition("/")
    return trees.get(parent, {}).get(name)


def _parse_batch(
    out: bytes, directories: list[str], *, hash_bytes: int
) -> dict[str, dict[str, Entry]] | None:
    """`cat-file --batch`'s answers, one per directory asked, as each one's entries."""
    at = 0
    trees: dict[str, dict[str, Entry]] = {}
    for directory in directories:
        end = out.find(b"\n", at)
        if end < 0:
            return None
        header = out[at:end].split()
        at = end + 1
        if header and header[-1] == b"missing":
            trees[directory] = {}
            continue
        if len(header) != 3:
            return None
        size = int(header[2])
        body = out[at : at + size]
        at += size + 1
        if header[1] != b"tree":
            trees[directory] = {}  # a file or a link in the old tree, a directory now
            continue
        parsed = _parse(body, hash_bytes)
        if parsed is None:
            return None
        trees[directory] = parsed
    return trees


def _parse(body: bytes, hash_bytes: int) -> dict[str, Entry] | None:
    entries: dict[str, Entry] = {}
    at = 0
    while at < len(body):
        space = body.find(b" ", at)
        nul = body.find(b"\0", space)
        if space < 0 or nul < 0 or nul + 1 + hash_bytes > len(body):
            return None
        mode = body[at:space].decode()
        name = os.fsdecode(body[space + 1 : nul])
        entries[name] = Entry(mode, body[nul + 1 : nul + 1 + hash_bytes].hex())
        at = nul + 1 + hash_bytes
    return entries


def _hash(entries: Mapping[str, Entry], hex_length: int) -> str:
    """The hash git gives a tree of `entries` (sha-1, or sha-256 in such a repository)."""
    body = b"".join(
        f"{entry.mode} ".encode() + os.fsencode(name) + b"\0" + bytes.fromhex(entry.sha)
        for name, entry in sorted(entries.items(), key=_sort_key)
    )
    digest = hashlib.sha1 if hex_length == 40 else hashlib.sha256
    return digest(b"tree %d\0" % len(body) + body).hexdigest()


def _sort_key(item: tuple[str, Entry]) -> bytes:
    """Git sorts a tree's entries by name, a subtree's as though it ended in `/`."""
    name, entry = item
    return os.fsencode(name) + (b"/" if entry.mode == _TREE else b"")


def _write(trees_out: GitStream, trees: list[tuple[str, dict[str, Entry]]]) -> bool:
    """The trees written by `git mktree --batch`, whose hashes must be the ones computed."""
    for sha, entries in trees:
        record = b"".join(
            f"{entry.mode} {entry.kind} {entry.sha}\t".encode() + os.fsencode(name) + b"\0"
            for name, entry in entries.items()
        )
        if trees_out.ask(record + b"\0", lines=1) != [sha.encode()]:
            return False
    return True
