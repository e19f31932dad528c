"""The judge cache (judge.sqlite3) is optional: one that another user could have written, that is
damaged, locked or cannot be written is skipped with one warning, and the run still ends with a
judged workbook. Its keys name the server that answered."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import RESPONSES, TESTCASES, run_qareport
from openai_stub import serve_stub
from openpyxl import load_workbook

from qareport.judge import Judge, JudgeSettings
from qareport.judge.cache import LOCK_WAIT_SEC, JudgeCache

KEY = "sk-test-cache-0123456789"
OTHER_UID = 65534  # nobody
POSIX = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")
ROOT = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a file away")


def qa(reference: str = "OSLO T1; OSLO T2", actual: str = "OSLO T1; OSLO T3") -> dict:
    return {"question_id": "q1", "status": "success", "question_text": "Which?", "reference_answer": reference,
            "actual_answer": actual}


def judge_once(server, cache_path: Path, *, on_warning=None, results=None):
    """Judge answer correctness of one or more answers; (judged results, usage, warnings said)."""
    said: list[str] = []
    settings = JudgeSettings(base_url=server.url, api_key=KEY, cache_path=str(cache_path), timeout=5.0,
                             metrics=("answer_correctness",))
    with Judge(settings, on_warning=said.append if on_warning is None else on_warning) as judge:
        run = judge.judge_results(results or [qa()])
    return run.results, run.usage, said


def fill(server, cache_path: Path) -> None:
    """A cache that holds the answers of `judge_once`, closed (its WAL written back)."""
    results, usage, said = judge_once(server, cache_path)
    assert said == [] and usage.calls > 0 and "answer_f1" in results[0]
    assert judge_once(server, cache_path)[1].calls == 0  # served from the cache


# --- whose file it is ---------------------------------------------------------------------------


FORGED = {"reason": "forged", "reference_claims_count": 2, "actual_claims_count": 2, "matching_claims_count": 2}


def forge(path: Path) -> None:
    """What an attacker would plant: every answer fully correct."""
    connection = sqlite3.connect(path)
    try:
        with connection:
            connection.execute("UPDATE replies SET value = ? WHERE kind = 'chat'",
                               (json.dumps({"content": json.dumps(FORGED), "model": "m", "usage": {}}),))
    finally:
        connection.close()


@ROOT
def test_a_forged_cache_owned_by_another_user_is_not_used(server, tmp_path):
    path = tmp_path / "cache" / "judge.sqlite3"
    fill(server, path)
    forge(path)
    os.chown(path, OTHER_UID, -1)
    path.chmod(0o666)
    calls = server.chat_calls

    results, usage, said = judge_once(server, path)

    assert server.chat_calls > calls and usage.cached_calls == 0
    assert results[0]["answer_f1"] == pytest.approx(0.5)  # the server's judgment: 1 of 2 claims each way
    assert len(said) == 1 and f"uid {OTHER_UID}" in said[0] and str(path) in said[0]


@ROOT
def test_a_cache_in_a_folder_another_user_owns_is_not_used(server, tmp_path):
    path = tmp_path / "theirs" / "judge.sqlite3"
    fill(server, path)
    os.chown(path.parent, OTHER_UID, -1)
    results, usage, said = judge_once(server, path)
    assert usage.cached_calls == 0 and usage.calls > 0 and "answer_f1" in results[0]
    assert len(said) == 1 and f"uid {OTHER_UID}" in said[0]


@POSIX
@pytest.mark.parametrize("what", ["file", "folder", "parent"])
def test_a_cache_others_may_write_to_is_not_used(server, tmp_path, what):
    path = tmp_path / "parent" / "cache" / "judge.sqlite3"
    fill(server, path)
    {"file": path, "folder": path.parent, "parent": path.parent.parent}[what].chmod(0o777 if what != "file" else 0o666)

    results, usage, said = judge_once(server, path)

    assert usage.cached_calls == 0 and usage.calls > 0 and "answer_f1" in results[0]
    assert len(said) == 1 and ("0777" in said[0] or "0666" in said[0]) and "not used" in said[0]


@POSIX
def test_a_sticky_folder_others_may_write_to_holds_a_cache(server, tmp_path):
    shared = tmp_path / "tmp-like"
    shared.mkdir()
    shared.chmod(0o1777)
    fill(server, shared / "mine" / "judge.sqlite3")


@POSIX
def test_a_new_cache_is_readable_by_its_owner_only(server, tmp_path):
    path = tmp_path / "new" / "judge.sqlite3"
    judge_once(server, path)
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700


@POSIX
def test_a_cache_file_that_is_a_link_is_not_followed(server, tmp_path):
    real = tmp_path / "elsewhere" / "judge.sqlite3"
    fill(server, real)
    link = tmp_path / "cache" / "judge.sqlite3"
    link.parent.mkdir()
    link.symlink_to(real)
    results, usage, said = judge_once(server, link)
    assert usage.cached_calls == 0 and len(said) == 1 and "not a regular file" in said[0]


# --- faults: damaged, locked, not writable --------------------------------------------------------


def damage_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[:100] = b"\xff" * 100
    path.write_bytes(bytes(data))


def damage_pages(path: Path) -> None:
    """Keep the header page, overwrite every page after it: the file opens, reading it fails."""
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    assert len(data) > page, "the cache should span more than one page"
    data[page:] = bytes((n * 37 + 11) % 256 for n in range(len(data) - page))
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    """Cut the file inside its second page, as a full disk or a killed copy would."""
    data = path.read_bytes()
    page = int.from_bytes(data[16:18], "big")
    path.write_bytes(data[:page + 10])


@pytest.mark.parametrize("damage", [damage_header, damage_pages, truncate])
def test_a_damaged_cache_is_skipped_with_one_warning(server, tmp_path, damage):
    path = tmp_path / "judge.sqlite3"
    fill(server, path)
    damage(path)

    results, usage, said = judge_once(server, path, results=[qa(), {**qa(), "question_id": "q2"}])

    assert usage.calls > 0 and usage.cached_calls == 0
    assert all("answer_f1" in result for result in results)
    assert len(said) == 1 and "damaged" in said[0] and "delete it" in said[0]


def hold_write_lock(path: Path, *, readers_too: bool = False) -> subprocess.Popen:
    """Another process that holds a write lock on the cache until it is stopped; `readers_too`:
    in SQLite's rollback-journal mode, where an exclusive lock keeps readers out as well."""
    script = (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        + ("c.execute('PRAGMA journal_mode = DELETE')\n" if readers_too else "")
        + "c.execute('BEGIN EXCLUSIVE')\n"
        "c.execute(\"INSERT OR REPLACE INTO replies VALUES ('held', 'chat', 'm', 0, '{}')\")\n"
        "print('locked', flush=True)\n"
        "time.sleep(120)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def stop(process: subprocess.Popen) -> None:
    process.kill()
    process.wait(timeout=10)
    if process.stdout is not None:
        process.stdout.close()


def test_a_locked_cache_waits_a_couple_of_seconds_then_is_skipped(server, tmp_path):
    path = tmp_path / "judge.sqlite3"
    fill(server, path)
    holder = hold_write_lock(path)
    try:
        started = time.monotonic()
        results, usage, said = judge_once(server, path, results=[qa(actual="OSLO T9"), qa(actual="OSLO T8")])
        elapsed = time.monotonic() - started
    finally:
        stop(holder)
    assert all("answer_f1" in result for result in results) and usage.calls > 0
    assert len(said) == 1 and "lock" in said[0]
    assert elapsed < 4 * LOCK_WAIT_SEC + 8  # one wait of LOCK_WAIT_SEC, not one per request (was 61 s)


def test_a_cache_whose_folder_cannot_be_made_is_skipped(server, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("where the cache folder would be")
    results, usage, said = judge_once(server, blocked / "judge.sqlite3")
    assert "answer_f1" in results[0] and usage.calls > 0
    assert len(said) == 1 and "cannot" in said[0]


def test_a_cache_in_a_folder_that_cannot_be_written_is_skipped(server, other_user):
    folder = other_user.folder / "read-only"
    folder.mkdir()
    other_user.give(folder)
    folder.chmod(0o500)  # its owner, the user who runs qareport, may not write in it
    report = other_user.folder / "report.xlsx"
    done = other_user.run_qareport("run", TESTCASES, "-r", RESPONSES, "-o", report, "--cache-path",
                                   folder / "judge.sqlite3", "--quiet",
                                   env={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": KEY})
    assert done.returncode == 0, done.stderr
    assert judged_f1(report) and server.requests  # judged, without the cache
    said = [line for line in done.stderr.splitlines() if "cache" in line]
    assert len(said) == 1 and "cannot" in said[0], done.stderr
    assert list(folder.iterdir()) == []


def test_the_cache_given_up_during_a_run_stops_asking_it(tmp_path):
    path = tmp_path / "judge.sqlite3"
    said: list[str] = []
    cache = JudgeCache(path, on_warning=said.append)
    cache.put("k", kind="chat", model="m", value={"content": "x"})
    assert cache.get("k") == {"content": "x"}
    holder = hold_write_lock(path)
    try:
        started = time.monotonic()
        for n in range(5):
            cache.put(f"k{n}", kind="chat", model="m", value={})
        elapsed = time.monotonic() - started
    finally:
        stop(holder)
        cache.close()
    assert not cache.usable and cache.get("k") is None and len(said) == 1
    assert elapsed < LOCK_WAIT_SEC + 4  # one wait, then no more


# --- a run against the loopback server still writes its judged workbook ----------------------------


def judged_run(server, tmp_path: Path, cache_path: Path) -> subprocess.CompletedProcess:
    return run_qareport("run", TESTCASES, "-r", RESPONSES, "-o", tmp_path / "report.xlsx",
                        "--cache-path", cache_path, "--quiet",
                        env={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": KEY})


def judged_f1(workbook: Path) -> list[float]:
    book = load_workbook(workbook, read_only=True)
    try:
        rows = book["Overview"].iter_rows(values_only=True)
        header = list(next(rows))
        column = header.index("answer F1")
        return [row[column] for row in rows if isinstance(row[column], (int, float))]
    finally:
        book.close()


def forget(path: Path) -> None:
    """Empty the cache, so that a run must write to it."""
    connection = sqlite3.connect(path)
    try:
        with connection:
            connection.execute("DELETE FROM replies")
    finally:
        connection.close()


@pytest.mark.parametrize("fault", ["damaged header", "damaged pages", "locked", "locked to readers", "foreign"])
def test_a_run_with_a_faulty_judge_cache_writes_the_judged_workbook(server, tmp_path, fault):
    path = tmp_path / "cache" / "judge.sqlite3"
    first = judged_run(server, tmp_path, path)
    assert first.returncode == 0, first.stderr
    expected = judged_f1(tmp_path / "report.xlsx")
    assert expected
    (tmp_path / "report.xlsx").unlink()
    holder = None
    if fault == "damaged header":
        damage_header(path)
    elif fault == "damaged pages":
        damage_pages(path)
    elif fault.startswith("locked"):
        forget(path)
        holder = hold_write_lock(path, readers_too=fault == "locked to readers")
    elif hasattr(os, "geteuid") and os.geteuid() == 0:
        os.chown(path, OTHER_UID, -1)
    else:
        path.chmod(0o666)
    try:
        started = time.monotonic()
        result = judged_run(server, tmp_path, path)
        elapsed = time.monotonic() - started
    finally:
        if holder is not None:
            stop(holder)

    assert result.returncode == 0, result.stderr
    assert judged_f1(tmp_path / "report.xlsx") == expected
    warnings = [line for line in result.stderr.splitlines() if "judge cache" in line]
    assert len(warnings) == 1 and str(path) in warnings[0] and "Traceback" not in result.stderr
    if fault.startswith("locked"):
        assert elapsed < 60  # it waited 61 s for the lock before


# --- the key names the server ----------------------------------------------------------------------


def test_the_same_model_on_another_server_is_asked_again(tmp_path):
    path = tmp_path / "judge.sqlite3"

    def generous(prompt, body):
        return {"reason": "generous", "reference_claims_count": 2, "actual_claims_count": 2,
                "matching_claims_count": 2}

    with serve_stub() as first, serve_stub() as second:
        second.rules["answer_correctness"] = generous
        one, _, _ = judge_once(first, path)
        two, usage, _ = judge_once(second, path)
        again, usage_again, _ = judge_once(first, path)

    assert one[0]["answer_f1"] == pytest.approx(0.5) and two[0]["answer_f1"] == 1.0
    assert second.chat_calls == 1 and usage.cached_calls == 0
    assert again[0]["answer_f1"] == pytest.approx(0.5) and usage_again.calls == 0  # each server's own


def test_a_claim_on_a_key_goes_to_one_of_two_processes_until_let_go_or_no_longer_held(tmp_path):
    first, second = JudgeCache(tmp_path / "c.sqlite3"), JudgeCache(tmp_path / "c.sqlite3")
    try:
        def held_by_other(mine):
            return lambda value: isinstance(value, dict) and value.get("run") != mine and value.get("alive", False)

        got_first = first.claim(["a", "b"], {"run": "A", "alive": True}, kind="claim", held=held_by_other("A"))
        got_second = second.claim(["b", "c"], {"run": "B", "alive": True}, kind="claim", held=held_by_other("B"))
        assert (got_first, got_second) == ({"a", "b"}, {"c"})
        first.delete(["b"])  # let go
        assert second.claim(["b"], {"run": "B", "alive": True}, kind="claim", held=held_by_other("B")) == {"b"}
        first.put("a", kind="claim", model="", value={"run": "A", "alive": False})  # its run stopped
        assert second.claim(["a"], {"run": "B", "alive": True}, kind="claim", held=held_by_other("B")) == {"a"}
    finally:
        first.close()
        second.close()
