"""Attempts per case (issue 20): loading several runs of one case, scoring each, and what the
report makes of them."""

import json
import math
import textwrap

import pytest
from test_loading import CASE  # one indicator-selection case, its id to fill in

from qareport.kinds.selection_parts import macro_precision, macro_recall, output_selection
from qareport.loading import load_suite

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
    assert output_selection(suite.attempts["a"][1].turns[0])[0].dimensions[0].values[0].id == "LP"


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


@pytest.mark.parametrize("bad", ["two", 0, 1.5, None])
def test_a_bad_attempt_before_the_good_records_takes_no_attempts_place(tmp_path, bad):
    write(tmp_path / "c.yaml", CASE.format(id="a"))
    first = record("a", bad) if bad is not None else {**record("a"), "attempt": {"n": 1}}
    write(tmp_path / "r.jsonl", jsonl(first, record("a", 1), record("a", 2)))
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    (problem,) = suite.problems  # the bad record's own, and no "second response" for the good one
    assert problem.location.line == 1 and "'attempt' must be a positive whole number" in problem.message
    assert [(r.attempt, r.status) for r in suite.attempts["a"]] == [(1, "success"), (2, "success")]
    assert suite.responses["a"] is suite.attempts["a"][0]


def test_an_attempt_too_large_for_a_workbook_is_a_problem_of_its_record_not_a_crash(tmp_path):
    write(tmp_path / "c.yaml", CASE.format(id="a"))
    (tmp_path / "r.jsonl").write_text(json.dumps(record("a", 1)) + "\n"
                                      + json.dumps(record("a")).replace("{", '{"attempt": ' + "9" * 400 + ", ", 1))
    suite = load_suite([tmp_path / "c.yaml"], [tmp_path / "r.jsonl"])
    (problem,) = suite.problems
    assert problem.location.line == 2
    assert "up to 9,007,199,254,740,991 (got a 400-digit number)" in problem.message
    assert suite.responses["a"].attempt == 1 and "a" not in suite.attempts


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
    assert [(a.attempt, macro_recall(a), macro_precision(a)) for a in case.attempts] == [
        (1, 1.0, 1.0), (2, 0.0, 0.0), (3, 1.0, 0.5)]
    assert case.status == "success"
    assert macro_recall(case) == pytest.approx(2 / 3) and macro_precision(case) == pytest.approx(0.5)
    metrics = kinds.catalogue().case_metrics(case)
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
    assert kinds.catalogue().case_metrics(case)["macro_precision"] == 0.5  # over the attempts that have a value
    assert case.turns == case.attempts[1].turns


def test_a_case_run_once_has_no_attempts(tmp_path):
    results = evaluated(tmp_path, record("a"))
    assert results["a"].attempts == () and macro_recall(results["a"]) == 1.0


# --- consistency per case, pass@k and pass^k ----------------------------------------------------

PASSES = {"a": "PPP", "b": "PFP", "c": "FFF", "d": "PFF", "e": "PP", "f": "PPFP"}
"""Each case's attempts: P selects the target term (recall and precision 1), F another term."""


def run_with_attempts(tmp_path, passes=PASSES, *extra):
    from qareport.cli import main

    write(tmp_path / "c.yaml", "---\n".join(CASE.format(id=case_id) for case_id in passes))
    records = [record(case_id, n, values=(LP,) if verdict == "P" else (NGDP,))
               for case_id, verdicts in passes.items() for n, verdict in enumerate(verdicts, start=1)]
    write(tmp_path / "r.jsonl", jsonl(*records))
    out = tmp_path / "report.xlsx"
    code = main(["run", str(tmp_path / "c.yaml"), "-r", str(tmp_path / "r.jsonl"), "-o", str(out), "--quiet", *extra])
    assert code == 0
    from openpyxl import load_workbook

    return load_workbook(out)


def sheet_rows(ws):
    return [row for row in ws.iter_rows(values_only=True)]


def by_id(ws):
    rows = sheet_rows(ws)
    return {row[0]: dict(zip(rows[0], row)) for row in rows[1:]}


def test_pass_at_k_and_pass_hat_k_of_a_run_match_hand_computed_values(tmp_path):
    from qareport.attempt_statistics import pass_at_k, pass_hat_k

    workbook = run_with_attempts(tmp_path)
    # k = 3 (four cases have 3 attempts); e (2 attempts) is left out; f (4 attempts, 3 passed) counts:
    # pass@3: a 1, b 1, c 0, d 1, f 1 - C(1, 3)/C(4, 3) = 1; pass^3: a 1, f C(3, 3)/C(4, 3) = 1/4, others 0
    exp_at, exp_hat = (1 + 1 + 0 + 1 + 1) / 5, (1 + 0.25) / 5
    assert exp_hat == pytest.approx((pass_hat_k(3, 3, 3) + pass_hat_k(4, 3, 3)) / 5)
    assert exp_at == pytest.approx(sum(pass_at_k(n, c, 3) for n, c in ((3, 3), (3, 2), (3, 0), (3, 1), (4, 3))) / 5)
    stats = sheet_rows(workbook["Statistics"])
    header_at = next(i for i, row in enumerate(stats) if row[0] == "k" and row[1] == "pass@k")
    row = dict(zip(stats[header_at], stats[header_at + 1]))
    assert row["k"] == 3 and row["cases"] == 5 and row["left out"] == 1 and row["flaky"] == 3
    assert row["pass@k"] == pytest.approx(exp_at) and row["pass^k"] == pytest.approx(exp_hat)
    summary = sheet_rows(workbook["Summary"])
    title = next(i for i, row in enumerate(summary) if row[0] == "How consistent is it")
    header, values = summary[title + 1], summary[title + 2]
    shown = dict(zip(header, values))
    assert shown["pass@3"] == pytest.approx(exp_at) and shown["pass^3"] == pytest.approx(exp_hat)
    assert shown["flaky"] == 3 and shown["cases"] == 5


def test_overview_shows_attempts_passed_the_spread_and_a_flaky_mark(tmp_path):
    overview = by_id(run_with_attempts(tmp_path)["Overview"])
    got = {case_id: (row["attempts passed"], row["spread"], row["flaky"], row["macro recall"])
           for case_id, row in overview.items()}
    assert got["a"] == ("3/3", 0, None, 1)
    assert got["b"][:3] == ("2/3", 1, "flaky") and got["b"][3] == pytest.approx(2 / 3)
    assert got["c"] == ("0/3", 0, None, 0)
    assert got["d"][:3] == ("1/3", 1, "flaky")
    assert got["f"][:3] == ("3/4", 1, "flaky") and got["f"][3] == pytest.approx(0.75)


def test_details_has_one_block_of_rows_per_attempt_with_its_number(tmp_path):
    rows = sheet_rows(run_with_attempts(tmp_path)["Details"])
    header = rows[0]
    assert header[-1] == "attempt"
    b_rows = [r for row in rows[1:] if (r := dict(zip(header, row)))["case id"] == "b" and r["dimension"] == "INDICATOR"]
    assert [(r["attempt"], r["verdict"], r["term id"]) for r in b_rows] == [
        (1, "TP", "LP"), (2, "FN", "LP"), (2, "FP", "NGDP"), (3, "TP", "LP")]


def test_a_run_without_attempts_has_no_attempt_columns_nor_pass_rates(tmp_path):
    workbook = run_with_attempts(tmp_path, {"a": "P", "b": "F"})
    assert "attempts passed" not in sheet_rows(workbook["Overview"])[0]
    assert "attempt" not in sheet_rows(workbook["Details"])[0]
    assert not any(row[0] == "How consistent is it" for row in sheet_rows(workbook["Summary"]))
    assert not any(row[0] == "Attempts per case" for row in sheet_rows(workbook["Statistics"]))


def test_the_reason_of_a_case_with_attempts_names_each_attempt_that_lost_points(tmp_path):
    overview = by_id(run_with_attempts(tmp_path, {"a": "PPP", "b": "PFF", "c": "FPF"})["Overview"])
    assert overview["a"]["reason"] is None
    assert overview["b"]["reason"].startswith("attempts 2, 3: ")
    assert overview["c"]["reason"].startswith("attempts 1, 3: ")
    assert "NGDP" in overview["b"]["reason"]


def test_the_grade_of_a_case_with_attempts_is_the_one_most_attempts_got_the_worse_on_a_tie(tmp_path):
    workbook = run_with_attempts(tmp_path, {"a": "PPP", "b": "PFF", "c": "FPP", "d": "PF"})
    overview = by_id(workbook["Overview"])
    assert {case_id: row["grade"] for case_id, row in overview.items()} == {
        "a": "ideal", "b": "problematic", "c": "ideal", "d": "problematic"}
    stats = sheet_rows(workbook["Statistics"])
    header = next(row for row in stats if row[0] == "tag" and "ideal" in row)
    everything = dict(zip(header, next(row for row in stats if row[0] == "all cases" and len(row) > 3)))
    assert (everything["ideal"], everything["problematic"]) == (2, 2)


# --- regressions that are changes, not coin flips ------------------------------------------------


def stored(case_id, recalls):
    """A case row with attempts as a stored run holds it, read back."""
    from qareport.runs import case_row_from_stored

    return case_row_from_stored({"case_id": case_id, "name": case_id, "status": "success", "definition_hash": "h",
                                 "groups": [], "macro_recall": sum(recalls) / len(recalls),
                                 "attempts": {"macro_recall": list(recalls)}})


@pytest.mark.parametrize(("old", "new", "exp"), [
    ([1, 1, 1, 1, 1], [0, 0, 0, 0, 0], "regression"),  # every attempt below every one before
    ([1, 0, 1, 0, 1], [0, 1, 0, 0, 1], "moved within noise"),  # flaky, unchanged in truth: they overlap
    ([0, 0, 0, 0, 0], [1, 1, 1, 1, 1], "improvement"),
    ([1, 1, 1], [0, 0, 0], "regression"),  # 3 of 3 to 0 of 3 always counts, whatever the number of attempts
    ([1, 1], [0, 0], "regression"),
])
def test_a_case_with_attempts_is_listed_by_what_its_attempts_can_tell(old, new, exp):
    from qareport.comparison import compare_runs
    from qareport.records import RunSnapshot

    before = RunSnapshot("last", "2026-01-01", "0", (stored("c", old),))
    after = RunSnapshot("this", "2026-01-08", "0", (stored("c", new),))
    comparison = compare_runs(before, after)
    assert {change.kind for change in comparison.changes} == {exp}
    assert [m.case_id for m in comparison.moved(exp)] == ["c"]
    assert comparison.cases_with("regression") == (exp == "regression")
    # the list's error rate is said: a case of 3 against 3 attempts separates by luck 1 time in C(6, 3) = 20
    chance = math.comb(len(old) + len(new), len(new))
    exp_expected = 1 / chance if len(set(old + new)) > 1 else 0.0
    assert comparison.chance is not None and comparison.chance.expected == pytest.approx(exp_expected)
    assert f"about {exp_expected:.2g} would be listed by luck alone" in comparison.attempts_note


def test_one_run_per_case_keeps_todays_lists_and_says_a_single_run_cannot_tell():
    from qareport.case_changes import ONE_RUN_NOTE
    from qareport.comparison import compare_runs
    from qareport.records import RunSnapshot
    from qareport.runs import case_row_from_stored

    row = {"case_id": "c", "name": "c", "status": "success", "definition_hash": "h", "groups": []}
    before = RunSnapshot("last", "2026-01-01", "0", (case_row_from_stored({**row, "macro_recall": 1.0}),))
    after = RunSnapshot("this", "2026-01-08", "0", (case_row_from_stored({**row, "macro_recall": 0.5}),))
    comparison = compare_runs(before, after)
    assert [change.kind for change in comparison.changes] == ["regression"]
    assert comparison.attempts_note == ONE_RUN_NOTE


QA_SUITE = """\
- template_id: t
  questions:
  - id: q1
    question_text: Which?
    reference_steps: [[{name: sparql_query, args: {query: q}, output: o}]]
  - id: q2
    question_text: Which else?
    reference_steps: [[{name: sparql_query, args: {query: q}, output: o}]]
"""


def qa_record(question_id, attempt, passed):
    step = {"name": "sparql_query", "args": {"query": "q"}, "output": "o" if passed else "x", "status": "success",
            "id": f"{question_id}-{attempt}"}
    return {"question_id": question_id, "attempt": attempt, "actual_answer": "A", "actual_steps": [step]}


def mixed_run(tmp_path, selection, questions):
    """A run of indicator-selection cases and Q&A questions, each attempt passing (P) or not (N)."""
    from openpyxl import load_workbook

    from qareport.cli import main

    write(tmp_path / "c.yaml", "---\n".join(CASE.format(id=case_id) for case_id in selection))
    write(tmp_path / "qa.yaml", QA_SUITE)
    records = [record(case_id, n, values=(LP,) if verdict == "P" else (NGDP,))
               for case_id, verdicts in selection.items() for n, verdict in enumerate(verdicts, start=1)]
    records += [qa_record(question_id, n, verdict == "P")
                for question_id, verdicts in questions.items() for n, verdict in enumerate(verdicts, start=1)]
    write(tmp_path / "r.jsonl", jsonl(*records))
    out = tmp_path / "report.xlsx"
    assert main(["run", str(tmp_path / "c.yaml"), str(tmp_path / "qa.yaml"), "-r", str(tmp_path / "r.jsonl"),
                 "-o", str(out), "--quiet", "--no-llm"]) == 0
    return load_workbook(out)


def test_each_kind_of_case_gets_its_own_pass_at_k_when_the_kinds_were_run_a_different_number_of_times(tmp_path):
    from qareport.attempt_statistics import pass_at_k, pass_hat_k

    # indicator selection: 4 attempts each (a 4/4, b 2/4); Q&A: 3 attempts each (q1 3/3, q2 1/3)
    workbook = mixed_run(tmp_path, {"a": "PPPP", "b": "PNPN"}, {"q1": "PPP", "q2": "NPN"})

    exp = {"conversation cases": (4, (pass_at_k(4, 4, 4) + pass_at_k(4, 2, 4)) / 2,
                                  (pass_hat_k(4, 4, 4) + pass_hat_k(4, 2, 4)) / 2),
           "Q&A questions": (3, (pass_at_k(3, 3, 3) + pass_at_k(3, 1, 3)) / 2,
                             (pass_hat_k(3, 3, 3) + pass_hat_k(3, 1, 3)) / 2)}
    stats = sheet_rows(workbook["Statistics"])
    header_at = next(i for i, row in enumerate(stats) if row[0] == "k" and row[1] == "pass@k")
    rows = [dict(zip(stats[header_at], row)) for row in stats[header_at + 1:header_at + 3]]
    got = {row["cases of"]: (row["k"], row["pass@k"], row["pass^k"]) for row in rows}
    assert got.keys() == exp.keys()
    for kind, (k, at, hat) in exp.items():
        assert got[kind] == (k, pytest.approx(at), pytest.approx(hat))
    assert all(row["cases"] == 2 and row["left out"] == 0 for row in rows)  # no kind silently dropped

    summary = sheet_rows(workbook["Summary"])
    title = next(i for i, row in enumerate(summary) if row[0] == "How consistent is it")
    shown = [dict(zip(summary[title + 1], row)) for row in summary[title + 2:title + 4]]
    assert {row["cases of"]: (row["k"], row["pass@k"], row["pass^k"]) for row in shown} == got




def test_kinds_of_case_run_the_same_number_of_times_share_one_pass_at_k_line(tmp_path):
    workbook = mixed_run(tmp_path, {"a": "PPP", "b": "PNP"}, {"q1": "PPP", "q2": "NPN"})
    summary = sheet_rows(workbook["Summary"])
    title = next(i for i, row in enumerate(summary) if row[0] == "How consistent is it")
    shown = dict(zip(summary[title + 1], summary[title + 2]))
    assert shown["pass@3"] is not None and shown["cases"] == 4 and "cases of" not in shown
