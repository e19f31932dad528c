"""Hostile and odd input: each kind becomes a problem with its file and line (or a usage error),
never a crash, and everything valid beside it is still evaluated. Every input is generated here,
into a temporary folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from openpyxl import load_workbook

from qareport.cli import main
from qareport.json_input import MAX_DEPTH, deep_nesting_at, nests_too_deeply, parse_json

REPO = Path(__file__).resolve().parent.parent

GOOD_CASE = """- id: good
  name: a valid case
  conversation:
  - role: user
    content: GDP of Mexico
    target:
      indicator_selection:
      - dataset_id: WEO
        dimensions:
        - dimension_name: COUNTRY
          values: [{id: MEX, name: Mexico}]
"""
GOOD_RESPONSE = {"id": "good", "indicator_selection": [
    {"dataset_id": "WEO", "dimensions": [{"dimension_name": "COUNTRY", "values": [{"id": "MEX", "name": "Mexico"}]}]}]}


def case(case_id: str) -> str:
    return GOOD_CASE.replace("id: good", f"id: {case_id}", 1)


def write_inputs(folder: Path, cases: str, responses: list | str) -> tuple[Path, Path]:
    (folder / "cases").mkdir()
    (folder / "cases" / "cases.yaml").write_text(cases, encoding="utf-8")
    path = folder / "responses.json"
    path.write_text(responses if isinstance(responses, str) else json.dumps(responses), encoding="utf-8")
    return folder / "cases", path


def run(folder: Path, testcases: Path, responses: Path, capsys) -> tuple[int, str, dict[str, str], list[tuple]]:
    report = folder / "report.xlsx"
    status = main(["run", str(testcases), "--responses", str(responses), "--output", str(report), "--no-llm", "-q"])
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    statuses, problems = read_report(report)
    return status, err, statuses, problems


def read_report(report: Path) -> tuple[dict[str, str], list[tuple]]:
    """Each case's status in the Overview, and the rows of the Problems sheet."""
    book = load_workbook(report)
    statuses = {row[0]: row[[c.value for c in book["Overview"][1]].index("status")]
                for row in book["Overview"].iter_rows(min_row=2, values_only=True)}
    problems = list(book["Problems"].iter_rows(min_row=2, values_only=True)) if "Problems" in book.sheetnames else []
    return statuses, problems


def problem_at(problems: list[tuple], file_end: str, line: int | None, text: str) -> bool:
    return any(str(p[0]).endswith(file_end) and (line is None or p[1] == line) and text in str(p)
               for p in problems)


# --- numbers too big -------------------------------------------------------------------------------


def test_a_5000_digit_id_is_a_problem_and_kept_as_text(tmp_path, capsys):
    huge = "9" * 5000
    testcases, responses = write_inputs(tmp_path, GOOD_CASE + case(huge), [GOOD_RESPONSE])
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert status == 0 and statuses["good"] == "success"
    assert problem_at(problems, "cases.yaml", 12, "too long to read as a number; it is kept as text")
    assert statuses[huge] == "missing"


@pytest.mark.parametrize("digits", [400, 5000])
def test_a_token_count_too_big_for_a_number_is_a_problem_and_the_response_is_still_evaluated(tmp_path, capsys, digits):
    record = {**GOOD_RESPONSE, "input_tokens": 0}
    text = json.dumps([record]).replace('"input_tokens": 0', '"input_tokens": 1' + "0" * digits)
    testcases, responses = write_inputs(tmp_path, GOOD_CASE, text)
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert status == 0 and statuses["good"] == "success"
    assert any("input_tokens" in str(p) or "digits" in str(p) for p in problems), problems


# --- memory and stack ------------------------------------------------------------------------------

BILLION_LAUGHS = """- id: bomb
  name: &a0 [x, x, x, x, x, x, x, x, x, x]
  a1: &a1 [*a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0]
  a2: &a2 [*a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1]
  a3: &a3 [*a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2]
  a4: &a4 [*a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3]
  a5: &a5 [*a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4]
  a6: &a6 [*a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5]
  a7: &a7 [*a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6]
  a8: &a8 [*a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7]
  conversation: [*a8]
"""


def test_a_billion_laughs_test_case_is_refused_and_the_valid_case_is_evaluated(tmp_path, capsys):
    testcases, responses = write_inputs(tmp_path, GOOD_CASE + BILLION_LAUGHS, [GOOD_RESPONSE])
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert status == 0 and statuses == {"good": "success"}
    assert problem_at(problems, "cases.yaml", None, "billion laughs")


def test_a_billion_laughs_response_file_is_refused(tmp_path, capsys):
    testcases, _ = write_inputs(tmp_path, GOOD_CASE, [])
    responses = tmp_path / "responses.yaml"
    responses.write_text(BILLION_LAUGHS.replace("- id: bomb", "- id: good"), encoding="utf-8")
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert status == 1  # nothing could be evaluated: an incomplete run
    assert problem_at(problems, "responses.yaml", None, "billion laughs")


def test_an_alias_that_contains_itself_is_refused(tmp_path, capsys):
    looping = "- id: loop\n  conversation: &c\n  - role: user\n    content: *c\n"
    testcases, responses = write_inputs(tmp_path, GOOD_CASE + looping, [GOOD_RESPONSE])
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert statuses["good"] == "success"
    assert any("contains itself" in str(p) or "no user message" in str(p) for p in problems), problems


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_deeply_nested_yaml_is_refused_with_its_line_without_exhausting_the_stack(tmp_path, capsys, depth):
    nested = f"- id: deep\n  conversation: {'[' * depth}{']' * depth}\n"
    testcases, responses = write_inputs(tmp_path, GOOD_CASE + nested, [GOOD_RESPONSE])
    # in a child process: a crash of libyaml's composer would end it, not the test run
    done = subprocess.run([sys.executable, "-m", "qareport", "run", str(testcases), "--responses", str(responses),
                           "--output", str(tmp_path / "report.xlsx"), "--no-llm", "-q"],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cases.yaml:13: collections nested more than 100 levels deep" in done.stderr


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_deeply_nested_json_is_refused_with_a_problem(tmp_path, capsys, depth):
    text = "[" + json.dumps(GOOD_RESPONSE) + ", " + "[" * depth + "]" * depth + "]"
    testcases, responses = write_inputs(tmp_path, GOOD_CASE, text)
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert problem_at(problems, "responses.json", None, "nests too deeply")
    assert statuses["good"] == "missing"  # the file could not be read at all: said, not crashed


@pytest.mark.parametrize("depth", [101, 5_000, 100_000])
def test_a_response_nesting_too_deeply_inside_a_field_is_refused_at_its_line_on_every_python(tmp_path, capsys, depth):
    """Python 3.12 and later parse 5,000 levels that 3.11 refuses; the refusal is qareport's own, at
    the same depth on every version, before any reader recurses into the value."""
    deep = {**GOOD_RESPONSE, "actual_answer": "PLACEHOLDER"}
    text = json.dumps([deep], indent=1).replace('"PLACEHOLDER"', "[" * depth + "]" * depth)
    testcases, responses = write_inputs(tmp_path, GOOD_CASE, text)
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    line = text[:text.index("[" * depth)].count("\n") + 1
    assert problem_at(problems, "responses.json", line, f"nests too deeply (more than {MAX_DEPTH} levels")
    assert statuses["good"] == "missing"


def test_a_response_nesting_as_deep_as_allowed_is_read():
    text = json.dumps({**GOOD_RESPONSE, "extra": "PLACEHOLDER"}).replace('"PLACEHOLDER"', "[" * 99 + "]" * 99)
    value, problems = parse_json(text, line=None)
    assert problems == [] and value["id"] == "good"


@pytest.mark.parametrize(("text", "exp"), [
    ("[" * 100 + "]" * 100, None),
    ("[" * 101 + "]" * 101, 100),
    ("{" + '"a":{' * 100 + "}" * 101, 500),  # objects count as arrays do
    ('["' + "[" * 500 + '"]', None),  # brackets inside a string are text
    ('["\\\\"' + ", [" * 101 + "]" * 101 + "]", 304),  # an escaped backslash, then the string's end
    ("[]" * 500, None),  # wide, not deep
    ("]" + "[]" * 200, None),  # brackets that do not pair off: a syntax error, not nesting
    ("\n[\n" + "[" * 150, 102),  # never closed: it still nests that deep before the error
])
def test_deep_nesting_is_found_at_the_bracket_that_passes_the_limit(text, exp):
    assert deep_nesting_at(text) == exp


@pytest.mark.parametrize(("depth", "exp"), [(0, False), (1, False), (100, False), (101, True), (5_000, True)])
@pytest.mark.parametrize("container", ["list", "dict"])
def test_a_value_nests_too_deeply_past_the_limit_however_deep(depth, exp, container):
    value: object = "a step's output: [[[[[[ is text"
    for _ in range(depth):
        value = [value, 1] if container == "list" else {"a": value, "b": 2}
    assert nests_too_deeply(value) is exp


def test_deeply_nested_json_lines_cost_only_their_line(tmp_path, capsys):
    testcases, _ = write_inputs(tmp_path, GOOD_CASE, [])
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps(GOOD_RESPONSE) + "\n" + "[" * 50_000 + "]" * 50_000 + "\n", encoding="utf-8")
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert status == 0 and statuses["good"] == "success"
    assert problem_at(problems, "responses.jsonl", 2, "nests too deeply")


# --- broken YAML -----------------------------------------------------------------------------------


def test_a_syntax_error_after_valid_cases_keeps_the_cases_before_and_after_it(tmp_path, capsys):
    broken = "- id: broken\n  name: [unclosed\n  conversation: []\n"
    testcases, responses = write_inputs(tmp_path, GOOD_CASE + broken + case("after"),
                                        [GOOD_RESPONSE, {**GOOD_RESPONSE, "id": "after"}])
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert status == 0 and statuses == {"good": "success", "after": "success"}
    assert problem_at(problems, "cases.yaml", None, "invalid YAML")
    (line,) = [p[1] for p in problems if "invalid YAML" in str(p)]
    assert 12 <= line <= 14


def test_a_nul_byte_in_yaml_is_a_problem_with_its_line(tmp_path, capsys):
    testcases, responses = write_inputs(tmp_path, GOOD_CASE + case("nul").replace("GDP of Mexico", "GDP\x00"),
                                        [GOOD_RESPONSE])
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert statuses == {"good": "success"}
    assert problem_at(problems, "cases.yaml", 16, "NUL byte")


def test_a_key_given_twice_in_one_mapping_is_a_problem(tmp_path, capsys):
    twice = case("first").replace("  name: a valid case\n", "  name: a valid case\n  id: second\n")
    testcases, responses = write_inputs(tmp_path, twice, [GOOD_RESPONSE])
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert problem_at(problems, "cases.yaml", 3, "the key 'id' is given twice in one mapping (lines 1 and 3)")


@pytest.mark.parametrize("content", ["# only a comment\n# and another\n", "~\n"])
def test_a_file_of_only_comments_or_null_is_named(tmp_path, capsys, content):
    testcases, responses = write_inputs(tmp_path, GOOD_CASE, [GOOD_RESPONSE])
    (testcases / "empty.yaml").write_text(content, encoding="utf-8")
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert statuses == {"good": "success"}
    assert problem_at(problems, "empty.yaml", None, "holds no data")


# --- files that are not files ----------------------------------------------------------------------


def test_a_symlink_loop_in_an_input_folder_is_named_and_the_files_are_read_once(tmp_path, capsys):
    testcases, responses = write_inputs(tmp_path, GOOD_CASE, [GOOD_RESPONSE])
    (testcases / "loop").symlink_to(testcases)
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert status == 0 and statuses == {"good": "success"}
    assert problem_at(problems, "loop", None, "a loop")
    assert not any("duplicate test case id" in str(p) for p in problems)


def test_a_dangling_link_in_an_input_folder_is_named(tmp_path, capsys):
    testcases, responses = write_inputs(tmp_path, GOOD_CASE, [GOOD_RESPONSE])
    (testcases / "gone.yaml").symlink_to(tmp_path / "nowhere.yaml")
    status, err, statuses, problems = run(tmp_path, testcases, responses, capsys)
    assert statuses == {"good": "success"}
    assert problem_at(problems, "gone.yaml", None, "a link to something that does not exist")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_fifo_given_as_an_input_is_named_as_such_and_never_read(tmp_path, capsys):
    testcases, responses = write_inputs(tmp_path, GOOD_CASE, [GOOD_RESPONSE])
    os.mkfifo(testcases / "pipe.yaml")
    fifo = tmp_path / "more-responses.json"
    os.mkfifo(fifo)
    report = tmp_path / "report.xlsx"
    assert main(["run", str(testcases), "--responses", str(responses), str(fifo), "--output", str(report),
                 "--no-llm", "-q"]) == 0
    err = capsys.readouterr().err
    assert f"{testcases / 'pipe.yaml'}: a named pipe (FIFO), not a file" in err
    assert f"{fifo}: a named pipe (FIFO), not a file" in err


def test_an_unreadable_folder_among_the_inputs_is_named(other_user):
    folder = other_user.folder
    testcases, responses = write_inputs(folder, GOOD_CASE, [GOOD_RESPONSE])
    locked = testcases / "locked"
    locked.mkdir()
    (locked / "more.yaml").write_text(case("more"), encoding="utf-8")
    for path in (testcases, testcases / "cases.yaml", locked, locked / "more.yaml", responses):
        other_user.give(path)
    locked.chmod(0)  # its owner, the user who runs qareport, may not read it
    done = other_user.run_qareport("run", testcases, "--responses", responses, "--output", folder / "report.xlsx",
                                   "--no-llm", "-q")
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    statuses, problems = read_report(folder / "report.xlsx")
    assert problem_at(problems, "locked", None, "cannot read this folder")
    assert statuses == {"good": "success"}


# --- a cell too small for the text -----------------------------------------------------------------


def test_a_text_cut_in_its_cell_is_whole_in_the_full_texts_sheet(tmp_path, capsys):
    answer = "".join(f"line {number}: {'word ' * 30}\n" for number in range(400))
    qa_case = ("- template_id: t\n  questions:\n  - id: q1\n    question_text: what?\n"
               "    reference_answer: something\n")
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "qa.yaml").write_text(qa_case, encoding="utf-8")
    (tmp_path / "responses.json").write_text(json.dumps([{"question_id": "q1", "actual_answer": answer}]))
    status, err, statuses, problems = run(tmp_path, tmp_path / "cases", tmp_path / "responses.json", capsys)
    book = load_workbook(tmp_path / "report.xlsx")
    headers = [c.value for c in book["Overview"][1]]
    cell = book["Overview"].cell(2, headers.index("actual answer") + 1).value
    assert "full text: the Full texts sheet" in cell
    parts = [row for row in book["Full texts"].iter_rows(min_row=2, values_only=True)]
    assert [row[:2] for row in parts] == [("q1", "actual answer")] * len(parts) and len(parts) >= 2
    assert "\n".join(row[3] for row in parts) == answer.rstrip("\n") or "\n".join(row[3] for row in parts) == answer


# --- the answer-correctness command ----------------------------------------------------------------


def test_a_non_utf8_tsv_is_one_line_naming_the_file(tmp_path):
    tsv = tmp_path / "in.tsv"
    tsv.write_bytes(b"Question\tReference answer\tActual answer\nq\t\xe9t\xe9\ta\n")
    done = subprocess.run([sys.executable, "-m", "qareport", "answer-correctness", "-i", str(tsv),
                           "-o", str(tmp_path / "out.tsv")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == f"answer-correctness: {tsv}:2: not UTF-8 text (byte 0xe9); save the file as UTF-8"


def test_everything_here_left_no_stray_files_in_the_repository():
    assert shutil.which("git") is None or not subprocess.run(
        ["git", "status", "--porcelain", "--", "testcases"], cwd=REPO, capture_output=True, text=True).stdout


def _depth_problems(text: str) -> list:
    from qareport.yaml_guards import YamlProblem
    from qareport.yaml_input import yaml_documents

    return [part for part in yaml_documents(text) if isinstance(part, YamlProblem)]


@pytest.mark.parametrize("depth", [150, 1_001, 1_500, 3_000])
def test_nesting_past_libyamls_own_limit_gets_qareports_refusal_not_a_syntax_error(depth):
    # libyaml 0.2.6 (PyYAML 6.0.4) refuses 1,000 levels itself, 0.2.5 (6.0.3) does not; fewer than
    # 4,000 brackets are not suspected by the first check: the same refusal on every PyYAML
    text = f"- id: good\n  name: fine\n- id: deep\n  conversation: {'[' * depth}{']' * depth}\n"
    (problem,) = _depth_problems(text)
    assert problem.line == 4 and problem.lost and problem.item_id == "deep"
    assert problem.message.startswith("collections nested more than 100 levels deep")


def test_block_nesting_past_libyamls_limit_is_refused_at_the_line_that_passes_qareports_limit():
    # one mapping per line, one more space each: the 101st level is on line 101 (libyaml stops near 1,000)
    text = "".join(f"{' ' * level}k{level}:\n" for level in range(1_200)) + f"{' ' * 1_200}leaf\n"
    (problem,) = _depth_problems(text)
    assert problem.message.startswith("collections nested more than 100 levels deep")
    assert problem.line == 101
