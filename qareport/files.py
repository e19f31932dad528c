"""Writing a file so that readers never see half of it: one way, for every file qareport writes.

The content goes to a temporary file beside the target, which is then renamed over it: a reader
(or a mail client attaching the report) sees the old file or the new one, never a mix, and a
failure leaves the previous file in place. The file gets the mode an ordinary new file gets
(0644 under the usual umask 022), not the private 0600 of a temporary file: a report is for sharing.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from qareport.errors import QAReportError

TEMPORARY_PREFIX = ".qareport-"


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
        handle, name = tempfile.mkstemp(prefix=f"{TEMPORARY_PREFIX}{target.name}.", suffix=".tmp", dir=folder)
    except OSError as error:
        raise QAReportError(f"{target}: cannot write {what}: {error.strerror or error}") from error
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        os.chmod(temporary, _shared_mode())
        os.replace(temporary, target)
    except OSError as error:
        raise QAReportError(f"{target}: cannot write {what}: {error.strerror or error}") from error
    finally:
        if temporary.exists():
            temporary.unlink()


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
