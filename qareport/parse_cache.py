"""Test-case files parsed in earlier runs, kept by their content, so an unchanged file is not parsed again.

A weekly run usually reads the same test cases as last week with new responses. Parsing a large
test-case file is most of the loading (10,000 Q&A questions: 3.4 s of YAML and record building,
against 0.5 s to read back what that gave). So what parsing a file gave (its test cases, and its
problems in the order they were found) is written to `<folder>/<code>-<content>.pickle`, where
`content` is the sha256 of the file's path and bytes (the records name the path) and `code` a hash
of qareport's own source (and of any kind plugged in): an edited or moved file, or another version
of qareport, is a new key, never a stale hit.

Only files of at least `MIN_CACHED_BYTES` are kept (a small file parses faster than a cache file
is found). Entries of other code versions are removed when an entry is written, then the least
recently used ones beyond `BUDGET_BYTES`. The cache is an optimisation only: a folder that cannot
be written, an entry that cannot be read (truncated, from an incompatible Python) or data that
cannot be kept is passed over and the file parsed, as without a cache.

The folder is the user's own (created 0700): its entries are read back with pickle, which trusts
what it reads, so a folder that another user owns, or that others may write to, is not used.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Union

from qareport import kinds
from qareport.files import atomic_path, cache_home
from qareport.records import Problem, TestCase, Unloaded

CACHE_FORMAT = 1  # raised when what an entry holds changes shape
MIN_CACHED_BYTES = 1 << 20
BUDGET_BYTES = 1 << 30
SUFFIX = ".pickle"

ParsedItem = Union[TestCase, Problem, Unloaded]
"""What parsing a file gives, in order: its test cases, interleaved with its problems and the parts
that could not be read, so that a cached file reports exactly as a parsed one does."""


def default_folder(environ: Mapping[str, str]) -> Path | None:
    """`$XDG_CACHE_HOME/qareport/testcases`, else `~/.cache/qareport/testcases`; None without a
    home folder (no cache)."""
    folder = cache_home(environ)
    return None if folder is None else Path(folder) / "testcases"


class ParseCache:
    """Parsed test-case files in `folder`, keyed by the files' content (see the module doc)."""

    def __init__(self, folder: str | Path, *, min_bytes: int = MIN_CACHED_BYTES,
                 budget_bytes: int = BUDGET_BYTES) -> None:
        self.folder = Path(folder)
        self.min_bytes = min_bytes
        self.budget_bytes = budget_bytes
        self.hits = 0  # files read back instead of parsed, in this process
        self._code: str | None = None

    def key(self, path: str, data: bytes) -> str | None:
        """The key of the file `path` holding `data`, or None when it is not worth keeping (too
        small, or a plugged-in kind whose source cannot be hashed). The path is part of the key:
        the records and problems name it."""
        if len(data) < self.min_bytes:
            return None
        code = self._code_hash()
        if not code:
            return None
        content = hashlib.sha256(path.encode("utf-8", "surrogateescape") + b"\0")
        content.update(data)
        return f"{code}-{content.hexdigest()}"

    def get(self, key: str) -> list[ParsedItem] | None:
        """What parsing the file of `key` gave, or None when it is not kept (or cannot be read)."""
        path = self.folder / (key + SUFFIX)
        if not _private(self.folder):
            return None
        try:
            with path.open("rb") as stream:
                items = pickle.load(stream)
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001 - a damaged or incompatible entry is parsed again, and replaced
            _remove(path)
            return None
        if not isinstance(items, list) or not all(isinstance(item, (TestCase, Problem, Unloaded)) for item in items):
            _remove(path)
            return None
        try:
            os.utime(path)  # the least recently used entries go first
        except OSError:
            pass
        self.hits += 1
        return items

    def put(self, key: str, items: Sequence[ParsedItem]) -> None:
        """Keep what parsing a file gave, then trim the folder; nothing is raised."""
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not _private(self.folder):
                return
            with atomic_path(self.folder / (key + SUFFIX), what="a test-case cache entry") as temporary:
                with temporary.open("wb") as stream:
                    pickle.dump(list(items), stream, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an unwritable folder or data pickle refuses: no entry
            return
        self._trim(keep=key)

    def _trim(self, *, keep: str) -> None:
        code = keep.split("-", 1)[0]
        try:
            entries = [(entry.stat(), entry) for entry in self.folder.glob("*" + SUFFIX)]
        except OSError:
            return
        used = 0
        for status, entry in sorted(entries, key=lambda pair: pair[0].st_mtime, reverse=True):
            if entry.stem == keep:
                used += status.st_size
            elif not entry.name.startswith(code + "-") or used + status.st_size > self.budget_bytes:
                _remove(entry)
            else:
                used += status.st_size

    def _code_hash(self) -> str:
        """A hash of the code that turns a file into records: qareport's source, the kinds
        plugged in, the Python version and this cache's format ("" when a kind has no source file)."""
        if self._code is None:
            digest = hashlib.sha256(f"{CACHE_FORMAT} {sys.version}".encode())
            package = Path(__file__).resolve().parent
            sources = sorted(package.rglob("*.py"))
            for kind in kinds.extra_kinds():
                module = sys.modules.get(type(kind).__module__)
                source = getattr(module, "__file__", None)
                if not source:
                    self._code = ""
                    return self._code
                sources.append(Path(source))
            try:
                for source in sources:
                    digest.update(str(source).encode())
                    digest.update(source.read_bytes())
            except OSError:
                self._code = ""
                return self._code
            self._code = digest.hexdigest()[:16]
        return self._code


def _private(folder: Path) -> bool:
    """Whether only the current user can have written the folder's entries (always, where
    there are no POSIX owners)."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return True
    try:
        status = folder.stat()
    except OSError:
        return False
    return status.st_uid == getuid() and not status.st_mode & 0o022


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
