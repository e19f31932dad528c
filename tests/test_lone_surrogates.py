"""A lone surrogate (`"\\ud800"`, half of a character) in a response is replaced by U+FFFD where the
record is read, with a problem at its line: the results file, the judge's requests and the console
can then always encode the text. Every input is generated here."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qareport.cli import main
from qareport.kinds.qa_turn import answer_of
from qareport.loading import load_suite
from qareport.lone_surrogates import may_hold_surrogates, replace_lone_surrogates

QA = """\
- template_id: t1
  questions:
    - id: q1
      question_text: How many?
      reference_answer: three
"""


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])  # libyaml refuses the escape: a YAML syntax problem
def test_a_lone_surrogate_in_an_answer_is_replaced_and_said_at_its_line(tmp_path, suffix):
    (tmp_path / "qa.yaml").write_text(QA)
    record = '{"question_id": "q1", "actual_answer": "three \\ud800 x", "actual_steps": []}'
    text = {".json": f"[\n{record}\n]", ".jsonl": f"{record}\n"}[suffix]
    (tmp_path / f"r{suffix}").write_text(text)
    suite = load_suite([tmp_path / "qa.yaml"], [tmp_path / f"r{suffix}"])
    assert answer_of(suite.responses["q1"].turns[0]) == "three \ufffd x"
    (problem,) = suite.problems
    assert problem.location.line == {".json": 2, ".jsonl": 1}[suffix]
    assert problem.message.startswith("1 lone surrogate(s)") and "replaced by U+FFFD" in problem.message


def test_a_run_with_a_lone_surrogate_writes_its_results_file(tmp_path, capsys):
    (tmp_path / "qa.yaml").write_text(QA)
    (tmp_path / "r.json").write_text('[{"question_id": "q1", "actual_answer": "three \\udfff", "actual_steps": []}]')
    results = tmp_path / "week.results.json"
    assert main(["run", str(tmp_path / "qa.yaml"), "--responses", str(tmp_path / "r.json"), "--output",
                 str(tmp_path / "week.xlsx"), "--results", str(results), "--no-llm", "-q"]) == 0
    assert "three \ufffd" in results.read_text(encoding="utf-8")
    assert "internal error" not in capsys.readouterr().err


def test_a_pair_of_escapes_is_one_character_and_left_alone(tmp_path):
    (tmp_path / "qa.yaml").write_text(QA)
    (tmp_path / "r.json").write_text('[{"question_id": "q1", "actual_answer": "\\ud83d\\ude00", "actual_steps": []}]')
    assert may_hold_surrogates(tmp_path / "r.json")
    suite = load_suite([tmp_path / "qa.yaml"], [tmp_path / "r.json"])
    assert suite.problems == () and answer_of(suite.responses["q1"].turns[0]) == "\U0001F600"


def replaced(value):
    """What the walk must give, computed the obvious way: (value, surrogates found)."""
    if isinstance(value, str):
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value), sum(
            0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, list):
        parts = [replaced(item) for item in value]
        return [part for part, _ in parts], sum(count for _, count in parts)
    parts = [(replaced(key), replaced(item)) for key, item in value.items()]
    return ({key: item for (key, _), (item, _) in parts},
            sum(k + n for (_, k), (_, n) in parts))


@given(st.recursive(st.text(alphabet=st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=4),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(alphabet="a\ud800", max_size=2), inner, max_size=3),
                    max_leaves=12))
def test_the_walk_replaces_each_surrogate_and_nothing_else(value):
    exp, exp_count = replaced(value)
    got, count = replace_lone_surrogates(value)
    assert (got, count) == (exp, exp_count)
    json.dumps(got, ensure_ascii=False).encode("utf-8")  # raises if one was left


def test_a_deeply_nested_record_is_walked_without_recursion():
    value: list = ["\udc00"]
    for _ in range(100_000):
        value = [value]
    _, count = replace_lone_surrogates(value)
    assert count == 1
