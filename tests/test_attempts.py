"""Attempts per case (issue 20): loading several runs of one case, scoring each, and what the
report makes of them."""

import json
import textwrap

import pytest

from qareport.loading import load_suite

CASE = """\
id: {id}
name: population_of_mexico
tags: [imf, weo]
conversation:
- role: user
  content: Could you give me the population numbers for Mexico?
  target:
    indicator_selection:
    - dataset_id: IMF.RES:WEO
      dimensions:
      - dimension_name: INDICATOR
        values:
        - id: LP
          name: Population
"""
LP = {"id": "LP", "name": "Population"}
NGDP = {"id": "NGDP", "name": "GDP"}


def write(path, text):
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def record(case_id, attempt=None, values=(LP,), **extra):
    found = {"test_case_id": case_id, "indicator_selection": [
        {"dataset_id": "IMF.RES:WEO", "dimensions": [{"dimension_name": "INDICATOR", "values": list(values)}]}]}
    if attempt is not None:
        found["attempt"] = attempt
    return {**found, **extra}


def jsonl(*records):
    return "".join(json.dumps(r) + "\n" for r in records)


# --- loading -------------------------------------------------------------------------------------


def test_records_with_distinct_attempts_in_one_file_are_attempts_of_one_case(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a"))
    write(tmp_path / "r.jsonl", jsonl(record("a", 2), record("a", 1), record("a", 3)))
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    assert suite.problems == ()
    assert [r.attempt for r in suite.attempts["a"]] == [1, 2, 3]
    assert [r.location.line for r in suite.attempts["a"]] == [2, 1, 3]
    assert suite.responses["a"] is suite.attempts["a"][0]


def test_attempts_of_one_case_may_come_from_several_files(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a") + "---\n" + CASE.format(id="b"))
    write(tmp_path / "week1.jsonl", jsonl(record("a", 1), record("b", 1)))
    write(tmp_path / "week2.json", json.dumps([record("a", 2), record("b", 2)]))
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "week1.jsonl", tmp_path / "week2.json"])
    assert suite.problems == ()
    for case_id in ("a", "b"):
        assert [r.location.path.rsplit("/", 1)[1] for r in suite.attempts[case_id]] == ["week1.jsonl", "week2.json"]


def test_the_same_case_and_attempt_twice_is_a_duplicate_problem(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a"))
    write(tmp_path / "r.jsonl", jsonl(record("a", 1), record("a", 2), record("a", 2, values=(NGDP,))))
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    (problem,) = suite.problems
    assert problem.location.line == 3 and problem.case_id == "a"
    assert "a second response for 'a', attempt 2 (first at" in problem.message
    assert "r.jsonl:2" in problem.message and "this one is ignored" in problem.message
    assert [r.attempt for r in suite.attempts["a"]] == [1, 2]
    assert suite.attempts["a"][1].turns[0].indicator_selection[0].dimensions[0].values[0].id == "LP"


def test_a_record_without_attempt_beside_numbered_ones_is_attempt_1(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a") + "---\n" + CASE.format(id="b"))
    write(tmp_path / "r.jsonl", jsonl(record("a"), record("a", 2), record("b"), record("b", 1)))
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    assert [(r.attempt, r.location.line) for r in suite.attempts["a"]] == [(None, 1), (2, 2)]
    (problem,) = suite.problems
    assert problem.location.line == 4
    assert "attempt 1 (a record without 'attempt' is attempt 1)" in problem.message
    assert "b" not in suite.attempts  # one attempt left: a case run once


def test_two_records_without_attempt_stay_a_duplicate_as_before(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a"))
    write(tmp_path / "r.jsonl", jsonl(record("a"), record("a")))
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    (problem,) = suite.problems
    assert problem.message.startswith("a second response for 'a' (first at ")
    assert suite.attempts == {}


@pytest.mark.parametrize("bad", [0, -1, "two", "2", 1.5, True, [1]])
def test_a_bad_attempt_is_a_problem_with_file_and_line_and_the_record_is_not_used(tmp_path, bad):
    write(tmp_path / "c.yaml", CASE.format(id="a"))
    write(tmp_path / "r.jsonl", jsonl(record("a", 1), record("a", 2), record("a", bad)))
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    (problem,) = suite.problems
    assert problem.location.path.endswith("r.jsonl") and problem.location.line == 3
    assert "'attempt' must be a positive whole number" in problem.message
    assert "write the attempt's number" in problem.message
    assert [r.attempt for r in suite.attempts["a"]] == [1, 2]
    assert "unknown key" not in problem.message


def test_a_case_whose_only_record_has_a_bad_attempt_is_invalid_with_the_reason(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a"))
    write(tmp_path / "r.json", json.dumps([record("a", "first")], indent=1))
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.json"])
    assert suite.responses["a"].status == "invalid"
    assert "'attempt' must be a positive whole number" in suite.responses["a"].error
    (problem,) = suite.problems
    assert problem.location.line == 3


def test_attempt_is_no_longer_an_unknown_key_nor_kept_as_an_extra(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a"))
    write(tmp_path / "r.jsonl", jsonl(record("a", 1)))
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    assert suite.problems == ()
    assert suite.responses["a"].attempt == 1 and "attempt" not in suite.responses["a"].extra
    assert suite.attempts == {}  # a single attempt is a case run once


# --- evaluation ----------------------------------------------------------------------------------


def evaluated(tmp_path, *records, cases=("a",)):
    from qareport.evaluation import evaluate_suite

    write(tmp_path / "c.yaml", "---\n".join(CASE.format(id=case_id) for case_id in cases))
    write(tmp_path / "r.jsonl", jsonl(*records))
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    return {r.case.id: r for r in evaluate_suite(suite).results}


def test_every_attempt_is_scored_and_the_case_value_is_the_mean_over_its_attempts(tmp_path):
    from qareport import kinds

    results = evaluated(tmp_path, record("a", 1), record("a", 2, values=(NGDP,)), record("a", 3, values=(LP, NGDP)))
    case = results["a"]
    assert [(a.attempt, a.macro_recall, a.macro_precision) for a in case.attempts] == [
        (1, 1.0, 1.0), (2, 0.0, 0.0), (3, 1.0, 0.5)]
    assert case.status == "success"
    assert case.macro_recall == pytest.approx(2 / 3) and case.macro_precision == pytest.approx(0.5)
    metrics = kinds.case_metrics(case)
    assert metrics["macro_recall"] == pytest.approx(2 / 3) and metrics["macro_precision"] == pytest.approx(0.5)
    assert case.turns == case.attempts[0].turns  # the details cell shows the first attempt


def test_a_case_whose_attempts_all_failed_keeps_the_first_attempts_status_and_names_each(tmp_path):
    results = evaluated(tmp_path, {"test_case_id": "a", "attempt": 1, "status": "error", "error": "timeout"},
                        {"test_case_id": "a", "attempt": 2, "status": "error", "error": "rate limit"})
    case = results["a"]
    assert case.status == "error" and case.error == "attempt 1: timeout; attempt 2: rate limit"


def test_an_attempt_that_failed_beside_evaluated_ones_leaves_the_case_evaluated_and_is_named(tmp_path):
    from qareport import kinds

    results = evaluated(tmp_path, {"test_case_id": "a", "attempt": 1, "status": "error", "error": "timeout"},
                        record("a", 2, values=(LP, NGDP)))
    case = results["a"]
    assert case.status == "success" and case.error == "attempt 1: timeout"
    assert kinds.case_metrics(case)["macro_precision"] == 0.5  # over the attempts that have a value
    assert case.turns == case.attempts[1].turns


def test_a_case_run_once_has_no_attempts(tmp_path):
    results = evaluated(tmp_path, record("a"))
    assert results["a"].attempts == () and results["a"].macro_recall == 1.0
