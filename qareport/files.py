"""Writing a file so that readers never see half of it: one way, for every file qareport writes.

Every temporary file and folder qareport makes is known here until it is gone: when a run is
stopped (SIGINT, SIGTERM) in the middle of removing one, `remove_leftovers()` finishes the job, so
neither the output folder nor TMPDIR keeps anything of it.

The content goes to a temporary file beside the target, which is then renamed over it: a reader
(or a mail client attaching the report) sees the old file or the new one, never a mix, and a
failure leaves the previous file in place. The file gets the mode an ordinary new file gets
(0644 under the usual umask 022), not the private 0600 of a temporary file: a report is for sharing.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from qareport.errors import QAReportError

TEMPORARY_PREFIX = ".qareport-"
TEMPORARY_SUFFIX = ".tmp"
_RANDOM_CHARS = 8
_FIXED_BYTES = len(TEMPORARY_PREFIX) + 1 + _RANDOM_CHARS + len(TEMPORARY_SUFFIX)
"""What a temporary name adds to the target's name: `.qareport-<name>.<8 random>.tmp`."""


_IN_PROGRESS: set[Path] = set()
"""Temporary files and folders of this process that still exist (or may)."""


def _discard(path: Path) -> None:
    """Remove a temporary file or folder of ours, whatever is left of it."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass
    _IN_PROGRESS.discard(path)


def remove_leftovers() -> None:
    """Remove every temporary file and folder of this process that is still there: called when a
    run is stopped, in case the stop came while one was being removed."""
    for path in list(_IN_PROGRESS):
        _discard(path)


@contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A new private folder in TMPDIR, removed with all it holds when the block ends, however it ends."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    _IN_PROGRESS.add(folder)
    try:
        yield folder
    finally:
        _discard(folder)


def name_limits(folder: str | Path) -> tuple[int, int]:
    """The longest file name (bytes) and path (bytes, without the final NUL) the folder's file system
    takes: NAME_MAX and PATH_MAX - 1 (255 and 4095 on Linux)."""
    try:
        name_max = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    try:
        path_max = os.pathconf(folder, "PC_PATH_MAX") - 1
    except (OSError, ValueError):
        path_max = 4095
    return name_max, path_max


def name_too_long(path: str | Path) -> str | None:
    """Why `path` cannot exist (its name or the whole path longer than the file system takes), or None."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    try:
        name_max, path_max = name_limits(folder if folder.is_dir() else ".")
    except OSError:  # the folder's own path is too long to look at
        name_max, path_max = name_limits(".")
    name_bytes = len(os.fsencode(target.name))
    if name_bytes > name_max:
        return f"the name is {name_bytes} bytes long; the file system takes at most {name_max}"
    path_bytes = len(os.fsencode(str(target)))
    if path_bytes > path_max:
        return f"the path is {path_bytes} bytes long; the file system takes at most {path_max}"
    if path_bytes - name_bytes + _FIXED_BYTES > path_max:
        return (f"the path is {path_bytes} bytes long, too near the file system's limit of {path_max} to write it "
                "safely beside a temporary file; use a shorter folder path")
    return None


def temporary_name(target: Path) -> str:
    """The temporary file's name for `target` (without its random part): the target's name is cut so
    that the temporary name fits wherever the target's does (NAME_MAX, and PATH_MAX for the path
    as given)."""
    folder = target.parent if str(target.parent) else Path(".")
    name_max, path_max = name_limits(folder)
    name = target.name
    budget = min(name_max, path_max - (len(os.fsencode(str(target))) - len(os.fsencode(name)))) - _FIXED_BYTES
    while name and len(os.fsencode(name)) > max(budget, 0):
        name = name[:-1]
    return f"{TEMPORARY_PREFIX}{name}."


def _create_temporary(target: Path, folder: Path) -> Path:
    """A new empty file (mode 0600) beside `target` for its content; never an existing one."""
    prefix = temporary_name(target)
    for _ in range(100):
        candidate = folder / f"{prefix}{secrets.token_hex(_RANDOM_CHARS // 2)}{TEMPORARY_SUFFIX}"
        _IN_PROGRESS.add(candidate)
        try:
            handle = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        except FileExistsError:
            _IN_PROGRESS.discard(candidate)
            continue
        except BaseException:  # a stop may come as the file was made: removed if it was
            _discard(candidate)
            raise
        os.close(handle)
        return candidate
    raise FileExistsError(f"no free temporary name beside {target}")


def _shared_mode() -> int:
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def atomic_path(path: str | Path, *, what: str) -> Iterator[Path]:
    """A temporary path to write to; renamed over `path` when the block ends without an error.

    `what` names the file in messages ("the workbook"): a folder that does not exist or cannot be
    written becomes a `QAReportError` saying so.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise QAReportError(f"{target}: the folder {folder} does not exist; create it first")
    try:
        temporary = _create_temporary(target, folder)
    except OSError as error:
        raise QAReportError(f"{target}: cannot write {what}: {error.strerror or error}") from error
    try:
        yield temporary
        os.chmod(temporary, _shared_mode())
        os.replace(temporary, target)
        _IN_PROGRESS.discard(temporary)
    except OSError as error:
        raise QAReportError(f"{target}: cannot write {what}: {error.strerror or error}") from error
    finally:
        if temporary in _IN_PROGRESS:
            _discard(temporary)


def write_atomically(path: str | Path, data: bytes, *, what: str) -> None:
    """Write `data` to `path` atomically (see the module's docstring)."""
    with atomic_path(path, what=what) as temporary:
        temporary.write_bytes(data)


def home_folder(environ: Mapping[str, str]) -> str | None:
    """$HOME, else the user's entry in the password database; None when there is neither (a
    container's user id without a passwd entry and HOME unset)."""
    home = environ.get("HOME")
    if home:
        return home
    try:
        found = str(Path.home())
    except (RuntimeError, KeyError, OSError):
        return None
    return found if found and found != "~" else None


def cache_home(environ: Mapping[str, str]) -> str | None:
    """Where qareport keeps files between runs (the judge's answers, parsed test cases):
    `$XDG_CACHE_HOME/qareport`, else `~/.cache/qareport`; None when there is no home folder
    either (the caches are then off, see `qareport.pipeline`)."""
    base = environ.get("XDG_CACHE_HOME")
    if not base:
        home = home_folder(environ)
        if home is None:
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "qareport")
