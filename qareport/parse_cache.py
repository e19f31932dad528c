"""Test-case files parsed in earlier runs, kept by their content, so an unchanged file is not parsed again.

A weekly run usually reads the same test cases as last week with new responses. Parsing a large
test-case file is most of the loading (10,000 Q&A questions: 3.4 s of YAML and record building). So
what parsing a file gave (its test cases, and its problems in the order they were found) is written
to `<folder>/<code>-<content>.jsonl`, where `content` is the sha256 of the file's path and bytes (the
records name the path) and `code` a hash of qareport's own source (and of any kind plugged in): an
edited or moved file, or another version of qareport, is a new key, never a stale hit.

An entry is plain JSON data (lists, strings, numbers), one item a line and their count on the last
line, written and read a line at a time with orjson, and the typed records are rebuilt from it field
by field (`_encoded_item`, `_decoded_item`): reading an entry runs no code of the entry's. What
would not come back equal and of the same type (a value JSON cannot hold, such as a tuple in a
plugged-in kind's target, a date or a NaN) is not kept: the file is parsed each time.

Only files of at least `MIN_CACHED_BYTES` are kept (a small file parses faster than a cache file
is found). Entries of other code versions are removed when an entry is written, then the least
recently used ones beyond `BUDGET_BYTES`. The cache is an optimisation only: an entry that cannot be
read (truncated, damaged) is parsed again and replaced; a folder that cannot be written, or that
another user could have written (see `files.open_trusted_folder`: the folder and every folder above
it must be ours or root's and writable by nobody else), is not used, said once through `on_warning`,
and the run goes on without the cache. Entries are opened relative to the checked folder's
descriptor, never followed through a link.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from qareport import kinds
from qareport.files import CLOSE_ON_EXEC, NO_FOLLOW, TrustedFolder, UntrustedCacheError, cache_home, open_trusted_folder
from qareport.records import Location, Problem, Target, TestCase, Turn, Unloaded

CACHE_FORMAT = 3  # raised when what an entry holds changes shape (1: pickles)
MIN_CACHED_BYTES = 1 << 20
BUDGET_BYTES = 1 << 30
SUFFIX = ".jsonl"
END = "end"  # the tag of an entry's last line, which holds the count of items before it
FORMER_SUFFIXES = (".pickle",)  # entries of earlier versions, removed when an entry is written
TEMPORARY_SUFFIX = ".tmp"
TEMPORARY_AGE_SEC = 3600  # a temporary entry this old was left by a run that stopped
DUMP_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS  # refused, never converted

ParsedItem = TestCase | Problem | Unloaded
"""What parsing a file gives, in order: its test cases, interleaved with its problems and the parts
that could not be read, so that a cached file reports exactly as a parsed one does."""


def default_folder(environ: Mapping[str, str]) -> Path:
    """`testcases` in qareport's cache folder (`files.cache_home`)."""
    return Path(cache_home(environ)) / "testcases"


class ParseCache:
    """Parsed test-case files in `folder`, keyed by the files' content (see the module doc).

    `on_warning` is told once, in words, why the cache is not used (another user could write its
    folder, or it cannot be written); `warning` keeps that sentence.
    """

    def __init__(self, folder: str | Path, *, min_bytes: int = MIN_CACHED_BYTES,
                 budget_bytes: int = BUDGET_BYTES, on_warning: Callable[[str], None] | None = None,
                 known: kinds.RunKinds | None = None) -> None:
        self.folder = Path(folder)
        self.known = known if known is not None else kinds.catalogue()  # the run's kinds, which parse
        self.min_bytes = min_bytes
        self.budget_bytes = budget_bytes
        self.on_warning = on_warning
        self.hits = 0  # files read back instead of parsed, in this process
        self.warning: str | None = None  # why the cache is not used, once it is not
        self._code: str | None = None

    def key(self, path: str, data: bytes) -> str | None:
        """The key of the file `path` holding `data`, or None when it is not worth keeping (too
        small, a plugged-in kind whose source cannot be hashed, or the cache refused). The path is
        part of the key: the records and problems name it."""
        if len(data) < self.min_bytes or self.warning is not None:
            return None
        code = self._code_hash()
        if not code:
            return None
        content = hashlib.sha256(path.encode("utf-8", "surrogateescape") + b"\0")
        content.update(data)
        return f"{code}-{content.hexdigest()}"

    def get(self, key: str) -> list[ParsedItem] | None:
        """What parsing the file of `key` gave, or None when it is not kept (or cannot be read)."""
        folder = self._open_folder(create=False)
        if folder is None:
            return None
        name = key + SUFFIX
        try:
            try:
                items = self._read(folder, name)
            except FileNotFoundError:
                return None
            except UntrustedCacheError as error:
                self._refuse(f"another user could have written it: {error}")
                return None
            except Exception:  # noqa: BLE001 - a damaged entry is parsed again, and replaced
                self._remove(folder, name)
                return None
            self._touch(folder, name)  # the least recently used entries go first
        finally:
            folder.close()
        self.hits += 1
        return items

    def put(self, key: str, items: Sequence[ParsedItem]) -> None:
        """Keep what parsing a file gave, then trim the folder; nothing is raised."""
        folder = self._open_folder(create=True)
        if folder is None:
            return
        try:
            self._write(folder, key + SUFFIX, items)
        except (TypeError, ValueError):  # a value JSON would not give back as it was: parsed each time
            pass
        except OSError as error:
            self._refuse(f"it cannot be written ({error.strerror or error})")
        else:
            self._trim(folder, keep=key)
        finally:
            folder.close()

    # -- the folder, checked

    def _refuse(self, why: str) -> None:
        """Stop using the cache for this run, and say so once."""
        if self.warning is None:
            self.warning = (f"the parse cache {self.folder} is not used: {why}; "
                            "test cases are parsed without it")
            if self.on_warning is not None:
                self.on_warning(self.warning)

    def _open_folder(self, *, create: bool) -> TrustedFolder | None:
        """The folder, opened after its checks; None (and a warning, unless it is only missing)
        when it cannot be used."""
        if self.warning is not None:
            return None
        try:
            return open_trusted_folder(self.folder, create=create)
        except FileNotFoundError:
            if create:
                self._refuse("its folder cannot be made")
            return None
        except UntrustedCacheError as error:
            self._refuse(f"another user could have written it: {error}")
            return None
        except OSError as error:
            self._refuse(f"its folder cannot be {'made' if create else 'opened'} ({error.strerror or error})")
            return None

    def _read(self, folder: TrustedFolder, name: str) -> list[ParsedItem]:
        """The items of an entry, a line at a time (no second copy of the whole entry in memory);
        ValueError when it does not end with its own count of items."""
        if not folder.check_file(name):
            raise FileNotFoundError(name)
        handle = os.open(folder.name(name), os.O_RDONLY | NO_FOLLOW | CLOSE_ON_EXEC, dir_fd=folder.descriptor)
        items: list[ParsedItem] = []
        with os.fdopen(handle, "rb") as stream:
            for line in stream:
                value = orjson.loads(line)
                if value[0] == END:
                    if value[1] != len(items) or stream.read(1):
                        raise ValueError("an entry whose count of items is wrong")
                    return items
                items.append(_decoded_item(value, self.known))
        raise ValueError("an entry cut short")

    def _write(self, folder: TrustedFolder, name: str, items: Sequence[ParsedItem]) -> None:
        """Write `name`, an item a line and then their count, through a temporary file renamed over
        it: a reader never sees half an entry. TypeError or ValueError (and no entry) when an item
        does not come back from JSON as it was."""
        temporary = f".{name}.{os.getpid()}.{time.monotonic_ns()}{TEMPORARY_SUFFIX}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW | CLOSE_ON_EXEC
        handle = os.open(folder.name(temporary), flags, 0o600, dir_fd=folder.descriptor)
        try:
            with os.fdopen(handle, "wb") as stream:
                for item in items:
                    stream.write(orjson.dumps(_encoded_item(item, self.known),
                                              option=DUMP_OPTIONS | orjson.OPT_APPEND_NEWLINE))
                stream.write(orjson.dumps([END, len(items)], option=orjson.OPT_APPEND_NEWLINE))
            os.replace(folder.name(temporary), folder.name(name),
                       src_dir_fd=folder.descriptor, dst_dir_fd=folder.descriptor)
        except BaseException:
            self._remove(folder, temporary)
            raise

    def _trim(self, folder: TrustedFolder, *, keep: str) -> None:
        code = keep.split("-", 1)[0]
        entries = []
        try:
            for name in os.listdir(folder.descriptor if folder.descriptor is not None else folder.path):
                status = os.stat(folder.name(name), dir_fd=folder.descriptor, follow_symlinks=False)
                entries.append((status, name))
        except OSError:
            return
        used = 0
        now = time.time()
        for status, name in sorted(entries, key=lambda pair: pair[0].st_mtime, reverse=True):
            if name.endswith(FORMER_SUFFIXES) or (
                    name.endswith(TEMPORARY_SUFFIX) and now - status.st_mtime > TEMPORARY_AGE_SEC):
                self._remove(folder, name)
            elif not name.endswith(SUFFIX):
                continue
            elif name == keep + SUFFIX:
                used += status.st_size
            elif not name.startswith(code + "-") or used + status.st_size > self.budget_bytes:
                self._remove(folder, name)
            else:
                used += status.st_size

    @staticmethod
    def _remove(folder: TrustedFolder, name: str) -> None:
        try:
            os.unlink(folder.name(name), dir_fd=folder.descriptor)
        except OSError:
            pass

    @staticmethod
    def _touch(folder: TrustedFolder, name: str) -> None:
        try:
            os.utime(folder.name(name), dir_fd=folder.descriptor)
        except (OSError, NotImplementedError):
            pass

    def _code_hash(self) -> str:
        """A hash of the code that turns a file into records: qareport's source, the kinds
        plugged in, the Python version and this cache's format ("" when a kind has no source file)."""
        if self._code is None:
            digest = hashlib.sha256(f"{CACHE_FORMAT} {sys.version}".encode())
            package = Path(__file__).resolve().parent
            sources = sorted(package.rglob("*.py"))
            for kind in self.known:
                module = sys.modules.get(type(kind).__module__)
                source = getattr(module, "__file__", None)
                if not source:
                    self._code = ""
                    return self._code
                if not Path(source).resolve().is_relative_to(package):
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


# --- records as plain data, and back -----------------------------------------------------------------
# Each record is a list of its fields in a fixed order (tagged "c" test case, "p" problem, "u" a
# part that could not be read); tuples become lists and are made tuples again.


def _encoded_item(item: ParsedItem, known: kinds.RunKinds) -> list[Any]:
    if isinstance(item, TestCase):
        return ["c", item.id, item.kind, item.name, list(item.groups),
                [_encoded_turn(turn, known) for turn in item.turns],
                item.location.path, item.location.line, item.comments, item.definition_hash,
                list(item.declared_targets), item.cluster]
    if isinstance(item, Problem):
        return ["p", item.location.path, item.location.line, item.message, item.case_id]
    if isinstance(item, Unloaded):
        return ["u", item.path, item.line, item.case_id, item.whole_file]
    raise TypeError(f"not a parsed item: {type(item).__name__}")


def _encoded_turn(turn: Turn, known: kinds.RunKinds) -> list[Any]:
    target = turn.target
    parts = {name: kind.encode_part(part) if (kind := known.named(name)) else part
             for name, part in target.parts.items()}  # a part no kind reads: kept as the plain data it is
    _check_plain(parts)
    return [turn.number, turn.user_message, parts, target.lines]


def _check_plain(value: Any) -> None:
    """Raise ValueError unless `value` comes back from JSON equal and of the same types: mappings,
    lists, text, finite numbers, booleans and None (orjson itself refuses other objects, integers
    beyond 64 bits and keys that are not text; it would write a tuple as a list and NaN as null)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError("not a finite number")
        elif not (item is None or isinstance(item, (str, int))):
            raise ValueError(f"{type(item).__name__} is not plain JSON data")


def _decoded_item(data: list[Any], known: kinds.RunKinds) -> ParsedItem:
    tag = data[0]
    if tag == "c":
        _, case_id, kind, name, groups, turns, path, line, comments, definition_hash, declared, cluster = data
        return TestCase(id=case_id, kind=kind, name=name, groups=tuple(groups),
                        turns=tuple(_decoded_turn(turn, known) for turn in turns), location=Location(path, line),
                        comments=comments, definition_hash=definition_hash, declared_targets=tuple(declared),
                        cluster=cluster)
    if tag == "p":
        _, path, line, message, case_id = data
        return Problem(Location(path, line), message, case_id)
    if tag == "u":
        _, path, line, case_id, whole_file = data
        return Unloaded(path, line, case_id, whole_file)
    raise ValueError(f"unknown entry item {tag!r}")


def _decoded_turn(data: list[Any], known: kinds.RunKinds) -> Turn:
    number, user_message, parts, lines = data
    return Turn(number, user_message, Target(
        parts={name: kind.decode_part(part) if (kind := known.named(name)) else part for name, part in parts.items()},
        lines={name: line for name, line in lines.items()},
    ))
