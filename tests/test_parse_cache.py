"""Large test-case files are parsed once and read back on later runs, with the same cases and the
same problems, and never from a stale entry."""

from __future__ import annotations

import os
import pickle
import textwrap
from pathlib import Path

import pytest

from qareport import kinds
from qareport.loading import load_suite
from qareport.parse_cache import ParseCache, default_folder

from conftest import run_qareport
from test_kinds import ExpectedKeywords

CASE = """\
- id: {id}
  name: population {id}
  tags: [imf]
  conversation:
  - role: user
    content: Population numbers for country {id}?
    target:
      indicator_selection:
      - dataset_id: IMF.RES:WEO
        dimensions:
        - dimension_name: COUNTRY
          values:
          - {{id: C{id}, name: Country {id}}}
"""

FLAWS = """\
- id: case-0001
  conversation: []
- id: broken
  conversation: 5
- just a string
"""
"""A duplicate id, a case whose conversation is not a list, an item that is not a case."""


def write_suite(folder: Path, count: int, *, flaws: bool = True) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / "cases.yaml"
    text = "".join(CASE.format(id=f"case-{n:04d}") for n in range(1, count + 1))
    path.write_text(text + (FLAWS if flaws else ""), encoding="utf-8")
    return path


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.pickle")) if folder.exists() else []


def test_an_unchanged_file_is_read_back_with_the_same_cases_and_problems_in_the_same_order(tmp_path):
    write_suite(tmp_path / "cases", 50)
    cache = ParseCache(tmp_path / "cache", min_bytes=0)
    parsed = load_suite([tmp_path / "cases"], [], cache=cache)
    assert cache.hits == 0 and len(entries(tmp_path / "cache")) == 1

    reread = load_suite([tmp_path / "cases"], [], cache=cache)

    assert cache.hits == 1
    assert reread.cases == parsed.cases and len(parsed.cases) == 51  # 50 good ones and the broken one
    assert reread.problems == parsed.problems
    assert [(p.case_id, p.message.split(";")[0].split(" (")[0]) for p in parsed.problems] == [
        ("case-0001", "case 'case-0001' has no user message with a 'target'"),
        ("case-0001", "duplicate test case id 'case-0001'"),
        ("broken", "case 'broken': 'conversation' must be a list"),
        (None, "expected a test case or a Q&A template mapping"),
    ]
    assert reread.inputs == parsed.inputs  # the inputs' hashes are those of the files, cached or not


def test_a_syntax_error_is_reported_again_from_the_cache_with_its_line(tmp_path):
    path = write_suite(tmp_path / "cases", 5, flaws=False)
    path.write_text(path.read_text() + "- id: unclosed\n  name: [oops\n", encoding="utf-8")
    cache = ParseCache(tmp_path / "cache", min_bytes=0)
    parsed = load_suite([path], [], cache=cache)
    reread = load_suite([path], [], cache=cache)
    assert cache.hits == 1
    assert [c.id for c in reread.cases] == [c.id for c in parsed.cases] == [f"case-{n:04d}" for n in range(1, 6)]
    assert reread.problems == parsed.problems and parsed.problems[0].location.line is not None
    assert reread.unloaded == parsed.unloaded and parsed.unloaded


def test_an_edited_file_is_parsed_again(tmp_path):
    path = write_suite(tmp_path / "cases", 20)
    cache = ParseCache(tmp_path / "cache", min_bytes=0)
    load_suite([path], [], cache=cache)
    path.write_text(path.read_text().replace("Country case-0007", "Land case-0007"), encoding="utf-8")

    edited = load_suite([path], [], cache=cache)

    assert cache.hits == 0
    case = next(c for c in edited.cases if c.id == "case-0007")
    assert case.turns[0].target.indicator_selection[0].dimensions[0].values[0].name == "Land case-0007"


def test_the_same_content_at_another_path_is_not_taken_for_the_first_file(tmp_path):
    first = write_suite(tmp_path / "a", 10)
    second = tmp_path / "b" / "cases.yaml"
    second.parent.mkdir()
    second.write_bytes(first.read_bytes())
    cache = ParseCache(tmp_path / "cache", min_bytes=0)
    load_suite([first], [], cache=cache)
    moved = load_suite([second], [], cache=cache)
    assert cache.hits == 0
    assert {c.location.path for c in moved.cases} == {str(second)}


def test_a_damaged_entry_is_parsed_again_and_replaced(tmp_path):
    path = write_suite(tmp_path / "cases", 10)
    cache = ParseCache(tmp_path / "cache", min_bytes=0)
    parsed = load_suite([path], [], cache=cache)
    (entry,) = entries(tmp_path / "cache")
    entry.write_bytes(entry.read_bytes()[:100])  # truncated, as by a full disk

    again = load_suite([path], [], cache=cache)

    assert cache.hits == 0 and again.cases == parsed.cases and again.problems == parsed.problems
    (replaced,) = entries(tmp_path / "cache")
    with replaced.open("rb") as stream:
        assert len(pickle.load(stream)) > 10


def test_an_entry_holding_something_else_is_not_used(tmp_path):
    path = write_suite(tmp_path / "cases", 10)
    cache = ParseCache(tmp_path / "cache", min_bytes=0)
    parsed = load_suite([path], [], cache=cache)
    (entry,) = entries(tmp_path / "cache")
    entry.write_bytes(pickle.dumps(["not a test case"]))
    assert load_suite([path], [], cache=cache).cases == parsed.cases and cache.hits == 0


def test_small_files_are_not_kept(tmp_path):
    path = write_suite(tmp_path / "cases", 10)
    assert path.stat().st_size < 1 << 20
    cache = ParseCache(tmp_path / "cache")
    load_suite([path], [], cache=cache)
    assert entries(tmp_path / "cache") == []


def test_a_folder_that_cannot_be_written_costs_nothing_but_the_cache(tmp_path):
    path = write_suite(tmp_path / "cases", 10)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    cache = ParseCache(blocked / "testcases", min_bytes=0)
    suite = load_suite([path], [], cache=cache)
    assert len(suite.cases) == 11 and cache.hits == 0


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
def test_a_folder_others_may_write_to_is_not_trusted(tmp_path):
    path = write_suite(tmp_path / "cases", 10)
    folder = tmp_path / "cache"
    cache = ParseCache(folder, min_bytes=0)
    load_suite([path], [], cache=cache)
    folder.chmod(0o777)  # anyone could have put an entry there
    assert len(load_suite([path], [], cache=cache).cases) == 11 and cache.hits == 0
    folder.chmod(0o700)
    load_suite([path], [], cache=cache)
    assert cache.hits == 1


def test_entries_of_other_code_and_beyond_the_budget_are_removed_the_newest_kept(tmp_path):
    folder = tmp_path / "cache"
    cache = ParseCache(folder, min_bytes=0)
    paths = [write_suite(tmp_path / f"suite{n}", 10) for n in range(3)]
    load_suite([paths[0]], [], cache=cache)
    (first,) = entries(folder)
    stale = folder / ("0" * 16 + "-" + "1" * 64 + ".pickle")  # an entry of another version of qareport
    stale.write_bytes(b"old")
    os.utime(first, (1, 1))  # long unused
    budget = first.stat().st_size * 2 + 10
    cache = ParseCache(folder, min_bytes=0, budget_bytes=budget)
    load_suite([paths[1]], [], cache=cache)
    assert not stale.exists() and len(entries(folder)) == 2
    load_suite([paths[2]], [], cache=cache)
    assert first not in entries(folder) and len(entries(folder)) == 2  # the least recently used went


def test_a_plugged_in_kind_is_part_of_the_key(tmp_path):
    path = write_suite(tmp_path / "cases", 5)
    plain = ParseCache(tmp_path / "cache", min_bytes=0).key(str(path), path.read_bytes())
    kind = kinds.register(ExpectedKeywords())
    try:
        with_kind = ParseCache(tmp_path / "cache", min_bytes=0).key(str(path), path.read_bytes())
    finally:
        kinds.unregister(kind.name)
    assert plain and with_kind and plain != with_kind


def big_suite(folder: Path) -> Path:
    """A test-case file over the size the run keeps parsed (1 MiB), with responses for its cases."""
    cases = write_suite(folder / "testcases", 3200, flaws=False)
    assert cases.stat().st_size > 1 << 20
    responses = folder / "responses.jsonl"
    lines = []
    for n in range(1, 3201):
        found = f"C{'case-%04d' % n}" if n % 3 else "CXXX"
        lines.append(
            '{"test_case_id": "case-%04d", "indicator_selection": [{"dataset_id": "IMF.RES:WEO", "dimensions": '
            '[{"dimension_name": "COUNTRY", "values": [{"id": "%s", "name": "x"}]}]}]}' % (n, found)
        )
    responses.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_a_second_run_reads_the_test_cases_back_and_writes_the_same_workbook(tmp_path):
    suite = big_suite(tmp_path)
    environ = {"XDG_CACHE_HOME": str(tmp_path / "xdg"), "SOURCE_DATE_EPOCH": "1700000000"}
    args = ["run", suite / "testcases", "--responses", suite / "responses.jsonl", "--verbose"]
    first = run_qareport(*args, "--output", tmp_path / "first.xlsx", env=environ)
    second = run_qareport(*args, "--output", tmp_path / "second.xlsx", env=environ)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr

    assert len(entries(default_folder(environ))) == 1
    assert "parse cache" not in first.stderr
    assert "loaded 3,200 test cases (1 file read back from the parse cache)" in second.stderr
    assert (tmp_path / "second.xlsx").read_bytes() == (tmp_path / "first.xlsx").read_bytes()


def test_no_cache_neither_reads_nor_writes_parsed_test_cases(tmp_path):
    suite = big_suite(tmp_path)
    environ = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    result = run_qareport("run", suite / "testcases", "--responses", suite / "responses.jsonl", "--no-cache",
                          "--output", tmp_path / "out.xlsx", env=environ)
    assert result.returncode == 0, result.stderr
    assert entries(default_folder(environ)) == []


def test_the_configuration_can_turn_the_cache_off(tmp_path):
    suite = big_suite(tmp_path)
    (tmp_path / "qareport.yaml").write_text(textwrap.dedent("testcase_cache: false\n"), encoding="utf-8")
    environ = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    result = run_qareport("run", suite / "testcases", "--responses", suite / "responses.jsonl",
                          "--output", tmp_path / "out.xlsx", cwd=tmp_path, env=environ)
    assert result.returncode == 0, result.stderr
    assert entries(default_folder(environ)) == []
