"""A SQLite cache of the judge's API replies, so a rerun of the same inputs costs nothing.

The key is a SHA-256 of the request as sent, minus credentials: the endpoint kind (`chat` or
`embeddings`), the model, the full messages or inputs, and every parameter (temperature,
response_format, ...). A new prompt template, a new model or a new parameter is a new key. Only
replies the judge's checks accepted are stored, so a rerun tries failed cases again.

The API key is never part of a key or a value: requests are stored by hash and replies hold only
the model's output and token usage. One connection, guarded by a lock, serves all threads; WAL mode
and a busy timeout let two processes share the file.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1


def cache_key(kind: str, request: Mapping[str, Any]) -> str:
    """A stable hash of one request: the same request always gives the same key."""
    canonical = json.dumps(
        {"v": SCHEMA_VERSION, "kind": kind, "request": request},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class JudgeCache:
    """get/put of JSON values by key; safe to share between threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(
            str(self.path), timeout=30.0, check_same_thread=False, isolation_level=None
        )
        try:
            self._connection.execute("PRAGMA busy_timeout = 30000")
            try:
                self._connection.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError:  # e.g. a network file system: fall back to the default
                pass
            self._connection.execute(
                "CREATE TABLE IF NOT EXISTS replies ("
                " key TEXT PRIMARY KEY,"
                " kind TEXT NOT NULL,"
                " model TEXT NOT NULL,"
                " created REAL NOT NULL,"
                " value TEXT NOT NULL)"
            )
        except sqlite3.Error:
            self._connection.close()
            raise

    def get(self, key: str) -> Any | None:
        with self._lock:
            row = self._connection.execute(
                "SELECT value FROM replies WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except ValueError:
            return None

    def put(self, key: str, *, kind: str, model: str, value: Any) -> None:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self._connection.execute(
                "INSERT OR REPLACE INTO replies (key, kind, model, created, value) VALUES (?, ?, ?, ?, ?)",
                (key, kind, model, time.time(), text),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._connection.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._connection.close()
