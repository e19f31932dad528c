"""Input files found and read: the files a given path stands for (folders searched, nothing skipped
in silence), their bytes hashed into the inputs' sha256 as each is read once, decoded as UTF-8, and
the documents of a YAML file one at a time."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from qareport.input_problems import ProblemCollector
from qareport.records import Unloaded
from qareport.yaml_guards import YamlProblem
from qareport.yaml_input import yaml_documents


def expand_paths(
    paths: Iterable[str | Path], suffixes: Sequence[str], problems: ProblemCollector, *, role: str
) -> list[tuple[str, list[Path]]]:
    """Each given path with the files it stands for (folders searched recursively, sorted).

    Nothing is skipped silently: a named pipe, a dangling link, a link that loops back into its own
    folder and a folder that cannot be read are each a problem.
    """
    expanded = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files = _files_in(path, suffixes, problems)
            if not files and not any(p.location.path.startswith(str(path)) for p in problems.problems):
                problems.add(
                    str(path), None, f"no {role} files ({', '.join(suffixes)}) in this directory"
                )
        elif path.is_file():
            files = [path]
        elif _is_fifo(path):
            problems.add(str(path), None, "a named pipe (FIFO), not a file; give a regular file")
            files = []
        elif (special := special_file(path)) is not None:
            problems.add(str(path), None, f"{special}, not a file; give a regular file")
            files = []
        elif path.is_symlink():
            problems.add(str(path), None, "a link to something that does not exist; fix or remove the link")
            files = []
        else:
            problems.add(str(path), None, f"no such file or directory (given as {role})")
            files = []
        expanded.append((str(given), files))
    return expanded


def _is_fifo(path: Path) -> bool:
    try:
        return stat.S_ISFIFO(path.stat().st_mode)
    except OSError:
        return False


_SPECIAL_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                  (stat.S_ISSOCK, "a socket"), (stat.S_ISFIFO, "a named pipe (FIFO)"))


def special_file(path: str | Path) -> str | None:
    """What `path` is when it leads to something other than a file or a folder ("a character
    device", "a link to /dev/zero, a character device"); None for a file, a folder, or nothing."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    kind = next((words for test, words in _SPECIAL_KINDS if test(mode)), None)
    if kind is None:
        return None
    return f"a link to {os.path.realpath(path)}, {kind}" if os.path.islink(path) else kind


def _files_in(folder: Path, suffixes: Sequence[str], problems: ProblemCollector) -> list[Path]:
    """The files with one of `suffixes` below `folder`, following links to folders once each."""
    files: list[Path] = []
    seen: set[tuple[int, int]] = set()

    def unreadable(error: OSError) -> None:
        problems.add(str(error.filename or folder), None,
                     f"cannot read this folder ({error.strerror or error}); its files are not loaded")

    for root, folders, names in os.walk(folder, onerror=unreadable, followlinks=True):
        here = Path(root)
        try:
            identity = here.stat()
            seen.add((identity.st_dev, identity.st_ino))
        except OSError:
            continue
        for name in list(folders):
            child = here / name
            try:
                status = child.stat()
            except OSError:
                continue
            if (status.st_dev, status.st_ino) in seen:
                folders.remove(name)
                problems.add(str(child), None, "a link back into a folder already searched (a loop); it is skipped")
        for name in names:
            candidate = here / name
            if candidate.suffix.lower() not in suffixes:
                continue
            if candidate.is_file():
                files.append(candidate)
            elif _is_fifo(candidate):
                problems.add(str(candidate), None, "a named pipe (FIFO), not a file; it is not read")
            elif (special := special_file(candidate)) is not None:
                problems.add(str(candidate), None, f"{special}, not a file; it is not read")
            elif candidate.is_symlink():
                problems.add(str(candidate), None, "a link to something that does not exist; fix or remove the link")
    return sorted(files)


class InputDigest:
    """The sha256 of the files a given path stands for, in order, fed as each file is read (once)."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()

    def update(self, data: bytes, /) -> None:
        self.hash.update(data)

    def hexdigest(self) -> str:
        return self.hash.hexdigest()


def read_input_text(path: Path, problems: ProblemCollector, digest: InputDigest) -> str | None:
    """The text of a file, read once: its bytes also go to `digest` (the inputs' sha256)."""
    data = read_input_bytes(path, problems, digest)
    return None if data is None else decoded_text(path, data, problems)


def read_input_bytes(path: Path, problems: ProblemCollector, digest: InputDigest) -> bytes | None:
    try:
        data = path.read_bytes()
    except OSError as error:
        problems.add(str(path), None, f"cannot read the file: {error.strerror or error}")
        return None
    digest.update(data)
    return data


def decoded_text(path: Path, data: bytes, problems: ProblemCollector) -> str | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        problems.add(
            str(path),
            line,
            f"the file is not UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start}); "
            "save it as UTF-8",
        )
        return None
    if not text.strip():
        problems.add(str(path), None, "the file is empty")
        return None
    return text


def yaml_file_documents(path: Path, text: str, problems: ProblemCollector, *, testcases: bool = False) -> Iterator[Any]:
    """The documents of a YAML file (for a top-level sequence, one per item: see `yaml_input`), one
    at a time, so that only one item's raw data is alive; a syntax error costs only its item."""
    found = reported = 0
    for part in yaml_documents(text):
        if isinstance(part, YamlProblem):
            problems.add(str(path), part.line, part.message, part.item_id)
            reported += 1
            if part.lost and testcases:
                problems.unloaded.append(Unloaded(str(path), part.line, part.item_id, whole_file=part.item_id is None))
        else:
            found += 1
            yield part
    if not found and not reported:
        problems.add(str(path), None, "the file holds no data (only comments, or null); add to it or remove it")
