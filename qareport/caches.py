"""The caches qareport keeps between runs, by name: where each is, how much it holds, and clearing it.

`CACHES` lists them; `qareport cache` shows and clears what is listed there, so a cache that goes
away is one line less here. Each lives under `files.cache_home` unless the judge's is set
elsewhere (`--cache-path`, `judge.cache_path`). Looking never creates a cache; clearing removes
only the cache's own files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from qareport.errors import UsageError
from qareport.judge.cache import SIDE_FILES, JudgeCache
from qareport.judge.settings import default_cache_path


@dataclass(frozen=True, slots=True)
class CacheUsage:
    """What one cache holds now: `entries` and `size_bytes` are 0 where there is nothing yet."""

    name: str
    what: str
    path: Path
    exists: bool
    entries: int
    size_bytes: int
    unusable: str | None = None
    """Why a run would not use the cache as it is (another user could write it, it is damaged), if so."""


@dataclass(frozen=True, slots=True)
class Cache:
    """One kind of cache: its `name` on the command line, what it keeps, where it is by default, and
    how its files are counted and removed."""

    name: str
    what: str
    default_path: Callable[[Mapping[str, str]], Path]
    usage: Callable[[Cache, Path], CacheUsage]
    clear: Callable[[Path], None]


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _judge_usage(cache: Cache, path: Path) -> CacheUsage:
    files = [path, *(path.with_name(path.name + side) for side in SIDE_FILES)]
    if not path.is_file():
        return CacheUsage(cache.name, cache.what, path, exists=False, entries=0, size_bytes=0)
    warnings: list[str] = []
    judge_cache = JudgeCache(path, on_warning=warnings.append)
    try:
        entries = len(judge_cache)
    finally:
        judge_cache.close()
    return CacheUsage(cache.name, cache.what, path, exists=True, entries=entries,
                      size_bytes=sum(_file_size(file) for file in files), unusable=warnings[0] if warnings else None)


def _clear_judge(path: Path) -> None:
    for file in (path, *(path.with_name(path.name + side) for side in SIDE_FILES)):
        _remove(Path.unlink, file)


def _remove(remove: Callable[[Path], None], path: Path) -> None:
    try:
        remove(path)
    except FileNotFoundError:
        pass  # nothing to clear, or another run cleared it first
    except OSError as error:
        raise UsageError(f"cannot remove {path} ({error.strerror or error}); remove it by hand") from None


JUDGE = Cache("judge", "the judge's replies, so that a rerun asks again only what changed",
              lambda environ: Path(default_cache_path(environ)), _judge_usage, _clear_judge)
CACHES = (JUDGE,)


def cache_usage(caches: tuple[Cache, ...] = CACHES, *, environ: Mapping[str, str] | None = None,
                paths: Mapping[str, str | Path] | None = None) -> list[CacheUsage]:
    """What each cache holds; `paths` puts a cache (by name) somewhere other than its default."""
    environ = os.environ if environ is None else environ
    return [cache.usage(cache, _path_of(cache, environ, paths)) for cache in caches]


def clear_caches(caches: tuple[Cache, ...] = CACHES, *, environ: Mapping[str, str] | None = None,
                 paths: Mapping[str, str | Path] | None = None) -> list[CacheUsage]:
    """Remove the caches' files; what each held before, for the caller to report."""
    environ = os.environ if environ is None else environ
    before = cache_usage(caches, environ=environ, paths=paths)
    for cache, usage in zip(caches, before):
        cache.clear(usage.path)
    return before


def _path_of(cache: Cache, environ: Mapping[str, str], paths: Mapping[str, str | Path] | None) -> Path:
    given = (paths or {}).get(cache.name)
    return Path(given).expanduser() if given else cache.default_path(environ)
