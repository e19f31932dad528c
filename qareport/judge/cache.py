"""A SQLite cache of the judge's API replies, so a rerun of the same inputs costs nothing.

The key is a SHA-256 of the request as sent, minus credentials, and of where it was sent: the
endpoint kind (`chat` or `embeddings`), the endpoint (the base URL without credentials, or the
litellm route), the model, the full messages or inputs, and every parameter (temperature,
response_format, ...). A new prompt template, a new model, a new parameter or the same model name on
another server is a new key. Only replies the judge's checks accepted are stored, so a rerun tries
failed cases again. A batch run (`judge.batch`) also keeps here, under keys of their own, the
batches it submitted (kind `batch`) and the replies they gave until the run has checked them (kind
`batch_reply`): see `qareport.judge.batch`. With judge repeats, each repeat but the first
adds its number to the key.

The API key is never part of a key or a value: requests are stored by hash and replies hold only
the model's output and token usage. One connection, guarded by a lock, serves all threads; WAL mode
and a short busy timeout let two processes share the file.

The cache is an optimisation only, and its file is trusted as the parse cache's entries are (see
`files.open_trusted_folder`): a file that another user owns or may write to, in a folder that another
user could write, is not used. Neither is one that cannot be opened or written, is damaged, or
stays locked by another process for more than `LOCK_WAIT_SEC`: `on_warning` is told once why, and
from then on every `get` misses and every `put` is dropped, so the run goes on without the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from qareport.files import CLOSE_ON_EXEC, NO_FOLLOW, UntrustedCacheError, open_trusted_folder

SCHEMA_VERSION = 2  # 2: the endpoint is part of the key
LOCK_WAIT_SEC = 2.0
"""How long a request waits for another process's lock on the file before the cache is given up."""
SIDE_FILES = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside the database, checked as it is."""


def cache_key(kind: str, request: Mapping[str, Any], *, endpoint: str, attempt: int | None = None,
              repeat: int = 0) -> str:
    """A stable hash of one request to `endpoint`: the same request to the same endpoint always
    gives the same key. `attempt`: which attempt of a case answered several times the request
    judges, so that two attempts' identical answers are judged (and cached) apart; None, for a case
    run once, leaves the key as it always was. `repeat`: which repeat of a judgment asked several
    times (`--judge-repeats`) the request is; the first (0) has the key of a run without repeats."""
    keyed: dict[str, Any] = {"v": SCHEMA_VERSION, "kind": kind, "endpoint": endpoint, "request": request}
    if attempt is not None:
        keyed["attempt"] = attempt
    if repeat:
        keyed["repeat"] = repeat
    canonical = json.dumps(
        keyed,
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class JudgeCache:
    """get/put of JSON values by key; safe to share between threads. Never raises for the file's
    faults: see the module's docstring (`warning` keeps the sentence `on_warning` was told)."""

    def __init__(self, path: str | Path, *, on_warning: Callable[[str], None] | None = None,
                 lock_wait: float = LOCK_WAIT_SEC):
        self.path = Path(path)
        self.on_warning = on_warning
        self.warning: str | None = None
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._lock_wait = lock_wait
        try:
            self._connection = self._connect(lock_wait)
        except UntrustedCacheError as error:
            self._give_up(f"another user could have written it: {error}")
        except (sqlite3.Error, OSError) as error:
            self._give_up(_why(error, lock_wait))

    def _connect(self, lock_wait: float) -> sqlite3.Connection:
        """The connection, once the file and every folder above it are checked; the file is made
        readable by its owner only when it is new."""
        name = self.path.name
        with open_trusted_folder(self.path.parent, create=True) as folder:
            for side in SIDE_FILES:
                folder.check_file(name + side)
            if not folder.check_file(name) and folder.descriptor is not None:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW | CLOSE_ON_EXEC
                try:
                    os.close(os.open(name, flags, 0o600, dir_fd=folder.descriptor))
                except FileExistsError:  # made at the same moment by another run: check it
                    folder.check_file(name)
            real = folder.shown(name)
        # the folders on the way can be written by nobody else, so the path stays what was checked
        connection = sqlite3.connect(real, timeout=lock_wait, check_same_thread=False, isolation_level=None)
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(lock_wait * 1000)}")
            try:
                connection.execute("PRAGMA journal_mode = WAL")
                # with WAL, NORMAL syncs at checkpoints, not at every reply stored: a crash may lose
                # the last replies (asked again on the next run), never the file's consistency
                connection.execute("PRAGMA synchronous = NORMAL")
            except sqlite3.OperationalError as error:  # e.g. a network file system: fall back to the default
                if _locked(error):
                    raise
            connection.execute(
                "CREATE TABLE IF NOT EXISTS replies ("
                " key TEXT PRIMARY KEY,"
                " kind TEXT NOT NULL,"
                " model TEXT NOT NULL,"
                " created REAL NOT NULL,"
                " value TEXT NOT NULL)"
            )
        except BaseException:
            connection.close()
            raise
        return connection

    @property
    def usable(self) -> bool:
        """Whether the cache is still in use (not given up)."""
        return self._connection is not None

    def _give_up(self, why: str) -> None:
        """Stop using the cache (the lock is held, or it is the constructor), and say so once."""
        if self._connection is not None:
            try:
                self._connection.close()
            except sqlite3.Error:
                pass
            self._connection = None
        if self.warning is None:
            self.warning = (f"the judge cache {self.path} is not used: {why}; "
                            "the judge runs without it (--no-cache turns it off, --cache-path chooses another)")
            if self.on_warning is not None:
                self.on_warning(self.warning)

    def get(self, key: str) -> Any | None:
        with self._lock:
            if self._connection is None:
                return None
            try:
                row = self._connection.execute("SELECT value FROM replies WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as error:
                self._give_up(_why(error, self._lock_wait))
                return None
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except (TypeError, ValueError):
            return None

    def put(self, key: str, *, kind: str, model: str, value: Any) -> None:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            if self._connection is None:
                return
            try:
                self._connection.execute(
                    "INSERT OR REPLACE INTO replies (key, kind, model, created, value) VALUES (?, ?, ?, ?, ?)",
                    (key, kind, model, time.time(), text),
                )
            except sqlite3.Error as error:
                self._give_up(_why(error, self._lock_wait))

    def delete(self, keys: list[str]) -> None:
        """Remove these keys' entries (keys not stored are ignored)."""
        with self._lock:
            if self._connection is None or not keys:
                return
            try:
                self._connection.executemany("DELETE FROM replies WHERE key = ?", [(key,) for key in keys])
            except sqlite3.Error as error:
                self._give_up(_why(error, self._lock_wait))

    def claim(self, keys: list[str], value: Mapping[str, Any], *, kind: str,
              held: Callable[[Any], bool]) -> set[str]:
        """In one transaction: store `value` under each key that is not stored, or whose stored value
        `held(value)` says is no longer held; the keys stored so (claimed), an empty set when the cache
        is not in use. Two processes claiming the same key: one gets it."""
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            connection = self._connection
            if connection is None or not keys:
                return set()
            try:
                connection.execute("BEGIN IMMEDIATE")
                try:
                    stored: dict[str, str] = {}
                    for start in range(0, len(keys), 500):
                        part = keys[start:start + 500]
                        stored.update(connection.execute(
                            f"SELECT key, value FROM replies WHERE key IN ({','.join('?' * len(part))})",
                            part).fetchall())
                    claimed = {key for key in keys if key not in stored or not held(_json_or_none(stored[key]))}
                    now = time.time()
                    connection.executemany(
                        "INSERT OR REPLACE INTO replies (key, kind, model, created, value) VALUES (?, ?, '', ?, ?)",
                        [(key, kind, now, text) for key in claimed])
                except BaseException:
                    connection.execute("ROLLBACK")
                    raise
                connection.execute("COMMIT")
            except sqlite3.Error as error:
                self._give_up(_why(error, self._lock_wait))
                return set()
            return claimed

    def values_of_kind(self, kind: str) -> list[tuple[str, Any]]:
        """(key, value) of every entry of this kind (the judge's batch records), oldest first."""
        with self._lock:
            if self._connection is None:
                return []
            try:
                rows = self._connection.execute(
                    "SELECT key, value FROM replies WHERE kind = ? ORDER BY created", (kind,)).fetchall()
            except sqlite3.Error as error:
                self._give_up(_why(error, self._lock_wait))
                return []
        found = []
        for key, text in rows:
            try:
                found.append((str(key), json.loads(text)))
            except (TypeError, ValueError):
                continue
        return found

    def __len__(self) -> int:
        with self._lock:
            if self._connection is None:
                return 0
            return int(self._connection.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _locked(error: sqlite3.Error) -> bool:
    return isinstance(error, sqlite3.OperationalError) and "locked" in str(error)


def _why(error: sqlite3.Error | OSError, lock_wait: float) -> str:
    """Why the cache cannot be used, in words."""
    if isinstance(error, OSError):
        return f"its folder cannot be used ({error.strerror or error})"
    if _locked(error):
        return f"another process held a lock on it for more than {lock_wait:g} s"
    text = str(error)
    if type(error) is sqlite3.DatabaseError or "malformed" in text or "not a database" in text:
        return f"it is damaged ({text}); delete it to start a new one"
    return f"it cannot be used ({text})"
