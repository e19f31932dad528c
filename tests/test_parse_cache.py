"""Large test-case files are parsed once and read back on later runs, with the same cases and the
same problems, and never from a stale entry."""

from __future__ import annotations

import json
import os
import pickle
import tempfile
import textwrap
from pathlib import Path

import pytest
from conftest import TESTCASES, run_qareport
from test_kinds import ExpectedKeywords

from qareport import kinds
from qareport.loading import load_suite
from qareport.parse_cache import ParseCache, default_folder

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
    return sorted(folder.glob("*.jsonl")) if folder.exists() else []


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
    assert len(replaced.read_bytes().splitlines()) > 10


@pytest.mark.parametrize("cut", ["at a line's end", "inside a line"])
def test_an_entry_cut_short_is_parsed_again_and_replaced(tmp_path, cut):
    path = write_suite(tmp_path / "cases", 10)
    cache = ParseCache(tmp_path / "cache", min_bytes=0)
    parsed = load_suite([path], [], cache=cache)
    (entry,) = entries(tmp_path / "cache")
    lines = entry.read_bytes().splitlines(keepends=True)
    entry.write_bytes(b"".join(lines[:5]) + (lines[5][:20] if cut == "inside a line" else b""))

    again = load_suite([path], [], cache=cache)

    assert cache.hits == 0 and again.cases == parsed.cases and again.problems == parsed.problems
    (replaced,) = entries(tmp_path / "cache")
    assert replaced.read_bytes().splitlines()[-1] == b'["end",%d]' % (len(lines) - 1)


def test_an_entry_holding_something_else_is_not_used(tmp_path):
    path = write_suite(tmp_path / "cases", 10)
    cache = ParseCache(tmp_path / "cache", min_bytes=0)
    parsed = load_suite([path], [], cache=cache)
    (entry,) = entries(tmp_path / "cache")
    entry.write_text('["not a test case", ["c", 5]]\n["end", 1]\n')
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
    cache = ParseCache(folder, min_bytes=0)  # the next run: a refused cache stays off for the rest of a run
    load_suite([path], [], cache=cache)
    assert cache.hits == 1


def test_entries_of_other_code_and_beyond_the_budget_are_removed_the_newest_kept(tmp_path):
    folder = tmp_path / "cache"
    cache = ParseCache(folder, min_bytes=0)
    paths = [write_suite(tmp_path / f"suite{n}", 10) for n in range(3)]
    load_suite([paths[0]], [], cache=cache)
    (first,) = entries(folder)
    stale = folder / ("0" * 16 + "-" + "1" * 64 + ".jsonl")  # an entry of another version of qareport
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


# --- what an entry is, and whose folders it may live in -------------------------------------------

def write_mixed_suite(folder: Path) -> Path:
    """Conversation cases with comments and several turns, Q&A questions with reference steps and
    answers, and broken items: every kind of field a cache entry holds."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mixed.yaml"
    sources = [TESTCASES / "imf", TESTCASES / "power-system"]
    texts = [p.read_text(encoding="utf-8") for source in sources for p in sorted(source.rglob("*.yaml"))]
    path.write_text("\n---\n".join(texts) + "\n---\n" + FLAWS, encoding="utf-8")
    return path


def test_the_records_rebuilt_from_an_entry_equal_the_parsed_ones(tmp_path):
    path = write_mixed_suite(tmp_path / "cases")
    cache = ParseCache(tmp_path / "cache", min_bytes=0)
    parsed = load_suite([path], [], cache=cache)
    assert any(t.target.reference_steps for c in parsed.cases for t in c.turns)
    assert any(t.target.indicator_selection for c in parsed.cases for t in c.turns)
    assert any(len(c.turns) > 1 for c in parsed.cases) and parsed.problems

    cache = ParseCache(tmp_path / "cache", min_bytes=0)
    reread = load_suite([path], [], cache=cache)

    assert cache.hits == 1
    assert reread.cases == parsed.cases and reread.problems == parsed.problems
    assert reread.unloaded == parsed.unloaded
    for got in reread.cases:  # the same types all the way down, not only equal values
        assert type(got.groups) is tuple and type(got.turns) is tuple
        for turn in got.turns:
            steps, selection = turn.target.reference_steps, turn.target.indicator_selection
            assert steps is None or (type(steps) is tuple and all(type(group) is tuple for group in steps))
            assert selection is None or all(type(d.dimensions) is tuple and all(
                type(dimension.values) is tuple for dimension in d.dimensions) for d in selection)


def test_an_entry_is_plain_json_data(tmp_path):
    path = write_suite(tmp_path / "cases", 5)
    load_suite([path], [], cache=ParseCache(tmp_path / "cache", min_bytes=0))
    (entry,) = entries(tmp_path / "cache")
    items = [json.loads(line) for line in entry.read_bytes().splitlines()]
    assert [item[0] for item in items][:2] == ["c", "c"] and items[-2][0] == "p"
    assert items[-1] == ["end", len(items) - 1]


class RunsCode:
    """A pickle that, when loaded, makes a file: what a forged cache entry did."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_forged_pickle_in_the_cache_runs_no_code(tmp_path):
    path = write_suite(tmp_path / "cases", 10)
    cache = ParseCache(tmp_path / "cache", min_bytes=0)
    parsed = load_suite([path], [], cache=cache)
    key = cache.key(str(path), path.read_bytes())
    marker = tmp_path / "the-pickle-ran"
    for suffix in (".pickle", ".jsonl"):
        (tmp_path / "cache" / (key + suffix)).write_bytes(pickle.dumps([RunsCode(marker)]))

    again = load_suite([path], [], cache=ParseCache(tmp_path / "cache", min_bytes=0))

    assert not marker.exists()
    assert again.cases == parsed.cases


def test_a_value_json_cannot_hold_as_it_was_is_not_kept(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text(textwrap.dedent("""\
        - template_id: t
          questions:
          - id: q1
            question_text: what?
            reference_steps: [[{name: lookup, args: {x: .nan}}]]
        """), encoding="utf-8")
    cache = ParseCache(tmp_path / "cache", min_bytes=0)
    parsed = load_suite([path], [], cache=cache)
    assert parsed.cases and entries(tmp_path / "cache") == []  # NaN would come back as null


def warnings_of(folder: Path) -> tuple[ParseCache, list[str]]:
    said: list[str] = []
    return ParseCache(folder, min_bytes=0, on_warning=said.append), said


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")
def test_a_parent_folder_others_may_write_to_refuses_the_cache_with_one_warning(tmp_path):
    first, second = write_suite(tmp_path / "a", 10), write_suite(tmp_path / "b", 10)
    shared = tmp_path / "shared"
    folder = shared / "me" / "cache"
    load_suite([first], [], cache=ParseCache(folder, min_bytes=0))
    assert len(entries(folder)) == 1
    shared.chmod(0o777)  # another user could rename `me` away and put a folder of theirs there

    cache, said = warnings_of(folder)
    suite = load_suite([first, second], [], cache=cache)

    assert len(suite.cases) == 11 and cache.hits == 0  # the second file repeats the ids of the first
    assert len(said) == 1 and str(shared) in said[0] and "0777" in said[0] and "parsed without it" in said[0]
    assert len(entries(folder)) == 1  # nothing written there either


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")
def test_a_sticky_parent_folder_others_may_write_to_is_trusted(tmp_path):
    path = write_suite(tmp_path / "cases", 10)
    shared = tmp_path / "tmp-like"
    shared.mkdir()
    shared.chmod(0o1777)  # as /tmp: others cannot rename or remove what is ours in it
    load_suite([path], [], cache=ParseCache(shared / "cache", min_bytes=0))
    cache, said = warnings_of(shared / "cache")
    load_suite([path], [], cache=cache)
    assert cache.hits == 1 and said == []


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")
def test_a_linked_cache_folder_is_checked_where_the_link_leads(tmp_path):
    path = write_suite(tmp_path / "cases", 10)
    real = tmp_path / "real"
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    load_suite([path], [], cache=ParseCache(tmp_path / "link" / "cache", min_bytes=0))
    cache, said = warnings_of(tmp_path / "link" / "cache")
    load_suite([path], [], cache=cache)
    assert cache.hits == 1 and said == [] and len(entries(real / "cache")) == 1

    real.chmod(0o777)  # where the link leads, others may write
    cache, said = warnings_of(tmp_path / "link" / "cache")
    load_suite([path], [], cache=cache)
    assert cache.hits == 0 and len(said) == 1 and str(real) in said[0]


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")
def test_an_entry_that_is_a_link_is_not_followed(tmp_path):
    path = write_suite(tmp_path / "cases", 10)
    folder = tmp_path / "cache"
    load_suite([path], [], cache=ParseCache(folder, min_bytes=0))
    (entry,) = entries(folder)
    elsewhere = tmp_path / "elsewhere.jsonl"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)

    cache, said = warnings_of(folder)
    suite = load_suite([path], [], cache=cache)

    assert len(suite.cases) == 11 and cache.hits == 0
    assert len(said) == 1 and "not a regular file" in said[0]


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")
def test_the_folder_checked_is_the_one_entries_are_read_from(tmp_path):
    """Entries are opened relative to the checked folder's descriptor: a folder put in its place
    after the check is not read."""
    from qareport.files import open_trusted_folder

    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    (folder / "entry").write_text("mine")
    with open_trusted_folder(folder) as opened:
        folder.rename(tmp_path / "moved")
        folder.mkdir()
        (folder / "entry").write_text("someone else's")
        handle = os.open(opened.name("entry"), os.O_RDONLY | os.O_NOFOLLOW, dir_fd=opened.descriptor)
        with os.fdopen(handle) as stream:
            assert stream.read() == "mine"


OTHER_UID = 65534  # nobody


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a folder away")
@pytest.mark.parametrize("owned", ["cache", "parent"])
def test_a_cache_in_a_folder_another_user_owns_is_not_used(tmp_path, owned):
    path = write_suite(tmp_path / "cases", 10)
    folder = tmp_path / "parent" / "cache"
    parsed = load_suite([path], [], cache=ParseCache(folder, min_bytes=0))
    os.chown(tmp_path / owned if owned == "parent" else folder, OTHER_UID, -1)

    cache, said = warnings_of(folder)
    suite = load_suite([path], [], cache=cache)

    assert suite.cases == parsed.cases and cache.hits == 0
    assert len(said) == 1 and f"uid {OTHER_UID}" in said[0]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a folder away")
def test_a_link_to_another_users_folder_is_not_followed_into(tmp_path):
    path = write_suite(tmp_path / "cases", 10)
    theirs = tmp_path / "theirs"
    load_suite([path], [], cache=ParseCache(theirs / "cache", min_bytes=0))  # an entry that would be a hit
    os.chown(theirs, OTHER_UID, -1)
    (tmp_path / "mine").symlink_to(theirs)
    cache, said = warnings_of(tmp_path / "mine" / "cache")
    load_suite([path], [], cache=cache)
    assert cache.hits == 0 and len(said) == 1 and str(theirs) in said[0]


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")
def test_a_run_whose_cache_others_may_write_to_warns_once_and_writes_the_workbook(tmp_path):
    suite = big_suite(tmp_path)
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    xdg.chmod(0o777)
    result = run_qareport("run", suite / "testcases", "--responses", suite / "responses.jsonl",
                          "--output", tmp_path / "out.xlsx", env={"XDG_CACHE_HOME": str(xdg)})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.xlsx").exists()
    warnings = [line for line in result.stderr.splitlines() if "parse cache" in line]
    assert len(warnings) == 1 and str(xdg) in warnings[0] and "is not used" in warnings[0]
    assert entries(default_folder({"XDG_CACHE_HOME": str(xdg)})) == []


def test_a_plugged_in_kind_whose_target_json_would_change_is_parsed_each_time(tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text(CASE.format(id="case-0001").replace(
        "      indicator_selection:", "      expected_keywords: [population, country]\n      indicator_selection:"),
        encoding="utf-8")
    kind = kinds.register(ExpectedKeywords())  # its target is a tuple: JSON would give a list back
    try:
        cache = ParseCache(tmp_path / "cache", min_bytes=0)
        parsed = load_suite([path], [], cache=cache)
        again = load_suite([path], [], cache=cache)
    finally:
        kinds.unregister(kind.name)
    # every kind's part is in `parts` now, the built-in ones too
    assert parsed.cases[0].turns[0].target.parts["expected_keywords"] == ("population", "country")
    assert again.cases == parsed.cases and cache.hits == 0 and entries(tmp_path / "cache") == []


def test_every_field_of_the_records_an_entry_holds_is_kept():
    """A guard: a field added to one of these records must be added to parse_cache's
    `_encoded_item` / `_decoded_item` (and here), or entries would drop it."""
    from dataclasses import fields

    from qareport import records

    kept = {
        records.TestCase: ["id", "kind", "name", "groups", "turns", "location", "comments", "definition_hash",
                           "declared_targets", "cluster"],
        records.Turn: ["number", "user_message", "target"],
        records.Target: ["parts", "lines"],  # every kind's part, by kind name
        records.DatasetSelection: ["dataset_id", "dimensions"],
        records.DimensionTerms: ["dimension_name", "values"],
        records.Term: ["id", "name"],
        records.Location: ["path", "line"],
        records.Problem: ["location", "message", "case_id"],
        records.Unloaded: ["path", "line", "case_id", "whole_file"],
    }
    for record, names in kept.items():
        assert [field.name for field in fields(record)] == names, record.__name__


def test_without_a_home_the_caches_live_in_the_temporary_folder_and_a_run_works(tmp_path, monkeypatch, capsys):
    """HOME unset under a user id without a passwd entry (many containers): Python cannot tell the
    home folder, and the run went down with it, even with --no-llm."""
    from qareport.cli import main
    from qareport.files import cache_home

    def no_home(cls):
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", classmethod(no_home))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert cache_home({}) == str(tmp_path / f"qareport-{os.geteuid()}")

    status = main(["run", str(TESTCASES), "--responses", str(TESTCASES / "responses"), "--no-llm", "-q",
                   "--output", str(tmp_path / "out.xlsx")])

    assert status == 0, capsys.readouterr().err
    assert (tmp_path / "out.xlsx").exists()


def test_every_field_of_a_parsed_test_case_comes_back_from_an_entry():
    """A field added to the records later must be kept too: every field set to a value other than
    its default comes back from the entry's plain data equal."""
    import dataclasses

    from qareport import parse_cache
    from qareport.records import DatasetSelection, DimensionTerms, Location, Target, Term, TestCase, Turn

    target = Target(
        parts={"indicator_selection": (DatasetSelection("WEO", (DimensionTerms("INDICATOR", (Term("GDP", "gdp"),)),)),),
               "reference_answer": "answer", "reference_steps": (({"name": "sparql", "output": "x"},),),
               "custom": {"a": 1}},
        lines={"reference_steps": 7},
    )
    case = TestCase(id="c1", kind="conversation", name="n", groups=("g",), turns=(Turn(2, "hello", target),),
                    location=Location("cases.yaml", 3), comments="why", definition_hash="abc",
                    declared_targets=("indicator_selection",), cluster="family 1")
    for record in (case, case.turns[0], target):
        defaults = type(record)  # every field of these records is set above, none left to its default
        for field in dataclasses.fields(defaults):
            if field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING:
                default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
                assert getattr(record, field.name) != default, f"{defaults.__name__}.{field.name} left at its default"

    encoded = json.loads(json.dumps(parse_cache._encoded_item(case, kinds.catalogue())))
    assert parse_cache._decoded_item(encoded, kinds.catalogue()) == case
