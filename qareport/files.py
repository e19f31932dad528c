"""Writing a file so that readers never see half of it: one way, for every file qareport writes.

Every temporary file and folder qareport makes is known here until it is gone: when a run is
stopped (SIGINT, SIGTERM) in the middle of removing one, `remove_leftovers()` finishes the job, so
neither the output folder nor TMPDIR keeps anything of it.

The content goes to a temporary file beside the target, which is then renamed over it: a reader
(or a mail client attaching the report) sees the old file or the new one, never a mix, and a
failure leaves the previous file in place. The file gets the mode an ordinary new file gets
(0644 under the usual umask 022), not the private 0600 of a temporary file: a report is for sharing.

Where qareport keeps files between runs (`cache_home`), and how a cache folder is opened so that
no other user can have written what is read from it (`open_trusted_folder`, `TrustedFolder`).
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
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


def cache_home(environ: Mapping[str, str]) -> str:
    """Where qareport keeps files between runs (the judge's answers, parsed test cases):
    `$XDG_CACHE_HOME/qareport`, else `~/.cache/qareport`; without a home (HOME unset under a user
    id that has no passwd entry, as in many containers) `qareport-<uid>` in the temporary folder,
    which the caches check as they check any folder (`open_trusted_folder`)."""
    base = environ.get("XDG_CACHE_HOME")
    if not base:
        home = home_folder(environ)
        if home is None:
            user = os.geteuid() if hasattr(os, "geteuid") else "user"
            return os.path.join(tempfile.gettempdir(), f"qareport-{user}")
        base = os.path.join(home, ".cache")
    return os.path.join(base, "qareport")


# --- caches: folders no other user can write -------------------------------------------------------

NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
CLOSE_ON_EXEC = getattr(os, "O_CLOEXEC", 0)
OWNERS_CHECKED = hasattr(os, "geteuid") and NO_FOLLOW != 0 and os.open in os.supports_dir_fd
"""Whether files have POSIX owners and can be opened relative to a folder's descriptor without
following links; where not (Windows), the caches are used by path, unchecked."""


class UntrustedCacheError(QAReportError):
    """A cache that another user could have written: not used (never raised out of a cache)."""


def _is_link(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _writable_by_others(mode: int) -> bool:
    return bool(mode & (stat.S_IWGRP | stat.S_IWOTH))


def _check_owner(status: os.stat_result, path: str, *, holds_entries: bool) -> None:
    """Refuse what another user owns or may write to. A folder on the way to a cache may be
    writable by others when its sticky bit is set (as /tmp): nobody can then replace what is ours in it."""
    if status.st_uid not in (os.geteuid(), 0):
        raise UntrustedCacheError(f"{path} belongs to another user (uid {status.st_uid})")
    if _writable_by_others(status.st_mode) and (holds_entries or not status.st_mode & stat.S_ISVTX):
        raise UntrustedCacheError(
            f"{path} can be written by {'other users' if status.st_mode & stat.S_IWOTH else 'its group'} "
            f"(mode {stat.S_IMODE(status.st_mode):04o}; `chmod go-w` it if it is yours)")


class TrustedFolder:
    """A cache folder that no other user can have written, opened: `path` is the folder as walked
    (links resolved), `descriptor` the folder's, to reach its files relative to (None where owners
    are not checked: then files are reached by path). Use `name(entry)` with `dir_fd=descriptor`;
    close it (or use it as a context manager)."""

    __slots__ = ("descriptor", "path")

    def __init__(self, path: str, descriptor: int | None) -> None:
        self.path = path
        self.descriptor = descriptor

    def name(self, entry: str) -> str:
        """What to give `os` functions (with `dir_fd=self.descriptor`) to reach `entry`."""
        return entry if self.descriptor is not None else os.path.join(self.path, entry)

    def shown(self, entry: str) -> str:
        """`entry`'s path, for messages."""
        return os.path.join(self.path, entry)

    def check_file(self, entry: str) -> bool:
        """Whether `entry` is there, a regular file that only this user or root can have written;
        False when there is none. Raises `UntrustedCacheError` for a link, something else than a
        file, or another user's file."""
        if self.descriptor is None:
            return os.path.exists(self.name(entry))
        try:
            status = os.stat(entry, dir_fd=self.descriptor, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if not stat.S_ISREG(status.st_mode):
            raise UntrustedCacheError(f"{self.shown(entry)} is not a regular file (a link, or something else)")
        _check_owner(status, self.shown(entry), holds_entries=True)
        return True

    def close(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None

    def __enter__(self) -> TrustedFolder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def open_trusted_folder(folder: str | Path, *, create: bool = False) -> TrustedFolder:
    """`folder`, opened after checking that no other user can have written it or swap it.

    Links are resolved once; the folder found is then opened from the root one folder at a time
    with `O_NOFOLLOW`, each checked on its open descriptor: owned by this user or root, and not
    writable by its group or others (sticky folders such as /tmp excepted, but not `folder`
    itself). So no other user can swap a folder of theirs in between the check and the use, and
    files opened relative to the descriptor are those of the folder checked. `create` makes what is
    missing, readable by its owner only. Raises `UntrustedCacheError`, or `OSError`
    (`FileNotFoundError` for a missing folder without `create`).
    """
    real = os.path.realpath(folder)
    if not OWNERS_CHECKED:
        if create:
            Path(real).mkdir(mode=0o700, parents=True, exist_ok=True)
        elif not os.path.isdir(real):
            raise FileNotFoundError(errno.ENOENT, "no such folder", real)
        return TrustedFolder(real, None)
    names = [name for name in real.split(os.sep) if name]
    descriptor = os.open(os.sep, os.O_RDONLY | DIRECTORY | CLOSE_ON_EXEC)
    try:
        _check_owner(os.fstat(descriptor), os.sep, holds_entries=not names)
        walked = ""
        for number, name in enumerate(names, start=1):
            walked += os.sep + name
            flags = os.O_RDONLY | DIRECTORY | NO_FOLLOW | CLOSE_ON_EXEC
            try:
                inner = os.open(name, flags, dir_fd=descriptor)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, 0o700, dir_fd=descriptor)
                except FileExistsError:  # made at the same moment by another run
                    pass
                inner = os.open(name, flags, dir_fd=descriptor)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, descriptor):
                    raise UntrustedCacheError(f"{walked} became a link while it was checked") from None
                raise
            os.close(descriptor)
            descriptor = inner
            _check_owner(os.fstat(descriptor), walked, holds_entries=number == len(names))
    except BaseException:
        os.close(descriptor)
        raise
    return TrustedFolder(real, descriptor)
