"""Comparing runs: headline metrics, per-case changes against a baseline, trend points."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import typed_row

from qareport.case_record import CaseRow
from qareport.comparison import compare_runs
from qareport.headline import SCORE_BINS, headline_metrics, score_bin, score_distribution, weakest_cases
from qareport.records import RunSnapshot
from qareport.trend import trend_points


def case(case_id: str, status: str = "success", *, kind: str = "conversation", definition_hash: str = "h",
         **metrics: object) -> CaseRow:
    return typed_row(case_id, **{"kind": kind, "name": f"name of {case_id}", "groups": [], "status": status,
                                 "error": None, "definition_hash": definition_hash, **metrics})


def snapshot(*rows: CaseRow, created: str = "2024-05-01T10:00:00+00:00", source: str = "run.xlsx") -> RunSnapshot:
    return RunSnapshot(source=source, created=created, qareport_version="0.1.0", cases=tuple(rows))


# --- headline ------------------------------------------------------------------------------------


def test_a_headline_metric_is_the_mean_over_evaluated_cases_with_the_unscored_cases_beside_it():
    rows = [
        case("a", macro_precision=1.0, macro_recall=0.5),
        case("b", macro_precision=0.5, macro_recall=0.5),
        case("c", "error"),
        case("d", "missing"),
        case("q", kind="qa", steps_score=1.0),
        case("r", "error", kind="qa"),
    ]
    got = {h.metric: h for h in headline_metrics(rows)}
    assert got["macro_precision"].mean == pytest.approx(0.75)
    assert (got["macro_precision"].cases, got["macro_precision"].errors, got["macro_precision"].missing) == (2, 1, 1)
    # a Q&A error does not count against indicator selection, and the other way round
    assert (got["steps_score"].mean, got["steps_score"].cases, got["steps_score"].errors, got["steps_score"].missing) == (1.0, 1, 1, 0)


def test_the_gates_and_the_headline_take_one_mean_over_the_evaluated_cases():
    from qareport.gates import metric_mean

    rows = [
        case("a", macro_recall=1.0),
        case("b", macro_recall=0.5),
        case("c", macro_recall=float("nan")),  # a value that is no score (as a hand-edited stored run may hold)
        case("d", macro_recall=True),
        case("e", "error", macro_recall=0.0),
    ]
    rows[0] = replace(rows[0], groups=("weo",))
    (headline,) = [h for h in headline_metrics(rows) if h.metric == "macro_recall"]
    assert metric_mean(rows, "macro_recall") == (headline.mean, headline.cases) == (0.75, 2)
    assert metric_mean(rows, "macro_recall", tag="weo") == (1.0, 1)


def test_the_headline_lists_only_the_metrics_a_run_has_in_a_fixed_order():
    rows = [case("a", answer_f1=0.4, macro_recall=1.0)]
    assert [h.metric for h in headline_metrics(rows)] == ["macro_recall", "answer_f1"]
    assert headline_metrics([case("a", "error")]) == ()


def test_weakest_cases_are_ranked_by_one_family_of_metrics_never_by_an_average_of_unlike_ones():
    rows = [case("good", macro_recall=1.0, macro_precision=1.0), case("bad", macro_recall=0.0, macro_precision=0.5),
            case("worse", macro_recall=0.0, macro_precision=0.2), case("err", "error"), case("mid", steps_score=0.5),
            case("half", macro_recall=0.5, macro_precision=1.0, steps_score=0.0)]
    assert [r.case_id for r in weakest_cases(rows, ("macro_recall", "macro_precision"))] == ["worse", "bad", "half"]
    assert [r.case_id for r in weakest_cases(rows, ("steps_score",))] == ["half", "mid"]
    assert [r.case_id for r in weakest_cases(rows, ("steps_score",), limit=1)] == ["half"]


def test_a_case_with_full_marks_is_never_among_the_weakest():
    rows = [case("a", macro_recall=1.0, macro_precision=1.0), case("b", macro_recall=1.0, macro_precision=0.9)]
    assert [r.case_id for r in weakest_cases(rows, ("macro_recall", "macro_precision"))] == ["b"]


def test_not_scored_counts_only_cases_with_a_target_of_the_metrics_kind():
    rows = [case("a", answer_f1=0.5, targets=["reference_answer"]), case("b", "error", targets=["reference_answer"]),
            case("c", "error", targets=["indicator_selection"]), case("d", "missing", targets=[])]
    got = {h.metric: h for h in headline_metrics(rows)}
    assert (got["answer_f1"].cases, got["answer_f1"].errors, got["answer_f1"].missing) == (1, 1, 0)


def test_a_headline_metric_carries_its_95_percent_bootstrap_interval():
    rows = [case(str(i), macro_recall=value) for i, value in enumerate([0.2, 0.4, 0.6, 0.8, 1.0])]
    got = headline_metrics(rows)[0]
    assert got.mean == pytest.approx(0.6) and got.low < got.mean < got.high
    assert got.low >= 0.2 and got.high <= 1.0


@pytest.mark.parametrize(("score", "exp"), [(0.0, 0), (0.05, 0), (0.1, 1), (0.3, 3), (0.7, 7), (0.99, 9), (1.0, 9)])
def test_a_score_falls_in_the_bin_of_its_lower_bound_and_one_in_the_last(score, exp):
    assert score_bin(score) == exp
    assert SCORE_BINS[exp][0] <= score <= SCORE_BINS[exp][1]


def test_the_score_distribution_counts_evaluated_cases_per_bin():
    rows = [case("a", macro_recall=1.0), case("b", macro_recall=0.0), case("c", macro_recall=0.95), case("d", "error")]
    got = score_distribution(rows, "macro_recall")
    assert got[0] == 1 and got[9] == 2 and sum(got) == 3


# --- changes -------------------------------------------------------------------------------------


def test_a_lower_metric_is_a_regression_and_a_higher_one_an_improvement():
    old = snapshot(case("a", macro_recall=1.0), case("b", macro_recall=0.5))
    new = snapshot(case("a", macro_recall=0.5), case("b", macro_recall=0.75))
    got = compare_runs(old, new)
    assert [(c.kind, c.case_id, c.metric, c.old, c.new, c.delta) for c in got.changes] == [
        ("regression", "a", "macro_recall", 1.0, 0.5, -0.5),
        ("improvement", "b", "macro_recall", 0.5, 0.75, 0.25),
    ]
    assert got.counts()["regression"] == 1 and got.counts()["improvement"] == 1


def test_regressions_come_first_worst_first_then_improvements_then_changed_new_and_removed():
    old = snapshot(
        case("gone", macro_recall=1.0), case("small drop", macro_recall=0.9), case("big drop", macro_recall=0.9),
        case("rise", macro_recall=0.1), case("edited", macro_recall=1.0, definition_hash="old"),
        case("failed", macro_recall=1.0),
    )
    new = snapshot(
        case("small drop", macro_recall=0.8), case("big drop", macro_recall=0.1), case("rise", macro_recall=0.9),
        case("edited", macro_recall=0.0, definition_hash="new"), case("failed", "error"), case("fresh", macro_recall=1.0),
    )
    got = [(c.kind, c.case_id) for c in compare_runs(old, new).changes]
    assert got == [
        ("regression", "failed"),  # a status loss is the worst news
        ("regression", "big drop"),
        ("regression", "small drop"),
        ("improvement", "rise"),
        ("test changed", "edited"),
        ("new case", "fresh"),
        ("removed case", "gone"),
    ]


@pytest.mark.parametrize("new_status", ["error", "missing", "invalid"])
def test_success_to_error_or_missing_is_a_regression_of_status(new_status):
    got = compare_runs(snapshot(case("a", macro_recall=1.0)), snapshot(case("a", new_status)))
    (change,) = got.changes
    assert (change.kind, change.metric, change.old, change.new) == ("regression", "status", "success", new_status)


def test_error_to_success_is_an_improvement_and_error_to_missing_is_no_change():
    got = compare_runs(snapshot(case("a", "error"), case("b", "error")), snapshot(case("a", macro_recall=0.2), case("b", "missing")))
    assert [(c.kind, c.case_id, c.metric) for c in got.changes] == [("improvement", "a", "status")]


def test_a_case_whose_test_definition_changed_is_flagged_not_counted_as_a_regression():
    old = snapshot(case("a", macro_recall=1.0, definition_hash="before"))
    new = snapshot(case("a", macro_recall=0.0, definition_hash="after"))
    got = compare_runs(old, new)
    assert [(c.kind, c.metric, c.delta) for c in got.changes] == [("test changed", "macro_recall", -1.0)]
    assert got.counts()["regression"] == 0 and got.counts()["test changed"] == 1


def test_a_changed_definition_without_a_different_score_is_still_listed():
    got = compare_runs(snapshot(case("a", macro_recall=1.0, definition_hash="x")),
                       snapshot(case("a", macro_recall=1.0, definition_hash="y")))
    assert [(c.kind, c.metric) for c in got.changes] == [("test changed", None)]


def test_a_metric_only_one_run_has_is_not_compared():
    # e.g. the LLM judge ran last week and not this week: "not evaluated", not a regression
    got = compare_runs(snapshot(case("a", macro_recall=1.0, answer_f1=0.9)), snapshot(case("a", macro_recall=1.0)))
    assert got.changes == ()


def test_float_noise_is_not_a_change():
    got = compare_runs(snapshot(case("a", macro_recall=2 / 3)), snapshot(case("a", macro_recall=0.6666666666666667 + 1e-15)))
    assert got.changes == ()


def test_change_counts_are_of_distinct_cases():
    old = snapshot(case("a", macro_recall=1.0, macro_precision=1.0))
    new = snapshot(case("a", macro_recall=0.5, macro_precision=0.5))
    got = compare_runs(old, new)
    assert len(got.regressions) == 2 and got.counts()["regression"] == 1


def test_headline_deltas_compare_the_means_of_both_runs():
    old = snapshot(case("a", macro_recall=1.0), case("b", macro_recall=0.5))
    new = snapshot(case("a", macro_recall=0.5), case("b", macro_recall=0.5), case("c", steps_score=1.0))
    got = {d.metric: d for d in compare_runs(old, new).headline}
    assert got["macro_recall"].old == 0.75 and got["macro_recall"].new == 0.5 and got["macro_recall"].delta == -0.25
    assert (got["macro_recall"].old_cases, got["macro_recall"].new_cases) == (2, 2)
    assert got["steps_score"].old is None and got["steps_score"].delta is None


def test_a_headline_delta_is_like_for_like_over_the_shared_unchanged_cases():
    old = snapshot(case("same", macro_recall=0.5), case("edited", macro_recall=1.0, definition_hash="h1"),
                   case("removed", macro_recall=0.0), case("broke", macro_recall=0.9))
    new = snapshot(case("same", macro_recall=1.0), case("edited", macro_recall=0.0, definition_hash="h2"),
                   case("new", macro_recall=0.0), case("broke", "error"))
    got = {d.metric: d for d in compare_runs(old, new).headline}["macro_recall"]
    # 'broke' ended in an error: it stays in the pairing, failing (0), so the error cannot flatter the run
    assert got.shared_cases == 2 and got.shared_old == pytest.approx(0.7) and got.shared_new == 0.5
    assert got.delta == pytest.approx(-0.2)
    assert got.old == pytest.approx(0.6) and got.new == pytest.approx(1 / 3)  # what each run said, unpaired


def test_the_hardest_cases_turning_into_errors_never_raise_the_like_for_like_mean():
    import random

    draw = random.Random(28)
    for _ in range(50):
        scores = {str(i): draw.random() for i in range(40)}
        hardest = sorted(scores, key=scores.__getitem__)[:6]  # 15 %
        old = snapshot(*[case(i, macro_recall=v) for i, v in scores.items()])
        new = snapshot(*[case(i, "error") if i in hardest else case(i, macro_recall=v) for i, v in scores.items()])
        got = {d.metric: d for d in compare_runs(old, new).headline}["macro_recall"]
        assert got.shared_cases == 40 and got.delta is not None and got.delta < 0
        assert got.new is not None and got.old is not None and got.new > got.old  # the unpaired means would flatter


def test_a_case_recovering_from_an_error_counts_as_rising_from_failing():
    old = snapshot(case("a", "error"), case("b", macro_recall=0.5), case("c", "missing"))
    new = snapshot(case("a", macro_recall=1.0), case("b", macro_recall=0.5), case("c", macro_recall=1.0))
    got = {d.metric: d for d in compare_runs(old, new).headline}["macro_recall"]
    assert got.shared_cases == 2 and got.delta == pytest.approx(0.5)  # a missing response is not a failure


def test_a_change_on_many_cases_is_larger_than_noise_and_a_single_flip_is_not():
    many_old = snapshot(*[case(str(i), macro_recall=1.0) for i in range(20)])
    many_new = snapshot(*[case(str(i), macro_recall=0.5) for i in range(20)])
    got = compare_runs(many_old, many_new).headline[0]
    assert got.beyond_noise and got.p_value < 0.001 and got.shared_cases == 20
    one_old = snapshot(*[case(str(i), macro_recall=1.0) for i in range(15)])
    one_new = snapshot(*[case(str(i), macro_recall=1.0 if i else 0.25) for i in range(15)])
    got = compare_runs(one_old, one_new).headline[0]
    assert got.delta == pytest.approx(-0.05) and not got.beyond_noise and got.p_value == 1.0


def test_each_changed_case_gets_one_line_with_its_reason():
    old = snapshot(case("a", macro_recall=1.0, macro_precision=1.0, facts={"indicator_selection": {
        "target": ["COUNTRY MEX"], "found": ["COUNTRY MEX"]}}), case("b", macro_recall=1.0))
    new = snapshot(case("a", macro_recall=0.0, macro_precision=0.5, facts={"indicator_selection": {
        "target": ["COUNTRY MEX"], "extra": ["COUNTRY KEN"]}}), case("b", "error", error="timeout"))
    got = {m.case_id: m for m in compare_runs(old, new).movements}
    assert got["a"].kind == "regression" and len(got["a"].moves) == 2
    assert got["a"].reason == "lost COUNTRY MEX; extra COUNTRY KEN"
    assert got["a"].describe_moves() == "macro recall 1.00 \u2192 0.00, macro precision 1.00 \u2192 0.50"  # biggest drop first
    assert got["b"].reason == "the system answered with an error: timeout"
    assert all(change.reason == got[change.case_id].reason for change in compare_runs(old, new).changes)


def test_an_edited_target_is_said_as_such():
    old = snapshot(case("a", definition_hash="h1", macro_recall=1.0,
                        facts={"indicator_selection": {"target": ["COUNTRY MEX"], "found": ["COUNTRY MEX"]}}))
    new = snapshot(case("a", definition_hash="h2", macro_recall=0.5, facts={"indicator_selection": {
        "target": ["COUNTRY MEX", "COUNTRY KEN"], "found": ["COUNTRY MEX"]}}))
    movement = compare_runs(old, new).movements[0]
    assert movement.kind == "test changed" and movement.reason == "target edited: COUNTRY +KEN"



@pytest.mark.parametrize("old_hash", ["h", ""])  # the same test, or a baseline too old to store its hash
def test_a_lost_term_against_a_baseline_that_stored_no_facts_is_not_called_an_edited_target(old_hash):
    old = snapshot(case("a", definition_hash=old_hash, macro_recall=1.0))  # written before runs kept facts
    new = snapshot(case("a", macro_recall=0.5, reason="missed COUNTRY KEN", facts={"indicator_selection": {
        "target": ["COUNTRY MEX", "COUNTRY KEN"], "found": ["COUNTRY MEX"]}}))
    movement = compare_runs(old, new).movements[0]
    assert movement.kind == "regression" and movement.reason == "missed COUNTRY KEN"


def test_an_unchanged_test_whose_stored_target_reads_differently_is_not_called_edited():
    old = snapshot(case("a", macro_recall=1.0, facts={"indicator_selection": {  # an older label of a term
        "target": ["COUNTRY ", "COUNTRY MEX"], "found": ["COUNTRY ", "COUNTRY MEX"]}}))
    new = snapshot(case("a", macro_recall=0.5, facts={"indicator_selection": {
        "target": ["COUNTRY 'Kenya'", "COUNTRY MEX"], "found": ["COUNTRY 'Kenya'"]}}))
    movement = compare_runs(old, new).movements[0]
    assert movement.kind == "regression" and movement.reason.startswith("lost COUNTRY MEX")
    assert "target edited" not in movement.reason

# --- trend ---------------------------------------------------------------------------------------


def test_trend_points_are_sorted_by_date_with_the_current_run_last():
    march = snapshot(case("a", macro_recall=0.5), created="2024-03-01T10:00:00+00:00", source="march.xlsx")
    april = snapshot(case("a", macro_recall=0.7), created="2024-04-01T10:00:00Z", source="april.yaml")
    current = snapshot(case("a", macro_recall=0.9), created="2024-02-01T10:00:00+00:00", source="now.xlsx")
    got = trend_points([april, march], current)
    assert [p.source for p in got] == ["march.xlsx", "april.yaml", "now.xlsx"]
    assert [p.mean("macro_recall") for p in got] == [0.5, 0.7, 0.9]
    assert got[-1].current and not got[0].current


def test_each_trend_point_counts_the_cases_that_moved_since_the_run_before():
    first = snapshot(case("a", macro_recall=1.0), case("b", macro_recall=0.5), created="2024-03-01T10:00:00+00:00")
    second = snapshot(case("a", macro_recall=0.5), case("b", macro_recall=1.0), created="2024-04-01T10:00:00+00:00")
    current = snapshot(case("a", macro_recall=0.0), case("b", macro_recall=1.0), created="2024-05-01T10:00:00+00:00")
    got = trend_points([second, first], current)
    assert [(p.regressions, p.improvements) for p in got] == [(None, None), (1, 1), (1, 0)]


def test_the_same_run_read_twice_is_one_trend_point():
    workbook = snapshot(case("a", macro_recall=0.5), source="week1.xlsx")
    results_file = snapshot(case("a", macro_recall=0.5), source="week1.yaml")
    got = trend_points([workbook, results_file], snapshot(case("a", macro_recall=1.0), created="2024-06-01T00:00:00+00:00"))
    assert len(got) == 2


# --- the headline row and the side-by-side view --------------------------------------------------


@pytest.mark.parametrize(("old", "new", "exp"), [
    (0.8363, 0.8244, -0.02),  # 0.84 -> 0.82 as shown, although the exact change is -0.012
    (0.834, 0.836, 0.01),  # 0.83 -> 0.84
    (0.8361, 0.8449, 0.0),  # both show 0.84: no change as shown, although the exact change is +0.009
])
def test_the_change_shown_is_the_difference_of_the_two_figures_shown(old, new, exp):
    from qareport.comparison import HeadlineDelta

    delta = HeadlineDelta("macro_recall", old, new, 10, 10, shared_old=old, shared_new=new, shared_cases=10)
    assert delta.shown_delta == pytest.approx(exp)
    assert delta.shown_delta == pytest.approx(round(new, 2) - round(old, 2))
    assert str(delta.shown_delta) != "-0.0"


def test_each_step_called_is_a_line_with_its_status_then_its_arguments_as_their_values():
    from qareport.kinds.steps.called import steps_text

    got = steps_text([{"name": "autocomplete_search", "args": {"query": "AURLAND", "limit": 5}, "status": "success",
                       "output": "a long output that is not shown"},
                      {"name": "sparql_query", "args": '{"query": "\\nSELECT ?x\\nWHERE { ?x a \\"y\\" }\\n"}',
                       "status": "error"}])
    assert got == ('1. autocomplete_search [success]\n'
                   '   query: AURLAND\n'
                   '   limit: 5\n'
                   '2. sparql_query [error]\n'
                   '   query:\n'
                   '     SELECT ?x\n'
                   '     WHERE { ?x a "y" }')
    assert steps_text([]) == "(no steps)" and steps_text(None) is None


def test_steps_kept_by_an_earlier_version_as_escaped_json_read_as_todays():
    from qareport.kinds.steps.called import readable_steps, steps_text

    steps = [{"name": "sparql_query", "status": "success", "args": {"query": "SELECT ?x\nWHERE { ?x a \"y\" }"}}]
    older = '1. sparql_query [success] {"query": "SELECT ?x\\nWHERE { ?x a \\"y\\" }"}'
    assert readable_steps(older) == steps_text(steps)
    assert readable_steps(steps_text(steps)) == steps_text(steps)  # today's text is left as it is
    cut = '1. sparql_query [success] {"query": "SELECT ?x\\nWH [… 4,000 more characters]'
    assert readable_steps(cut) == cut


def test_outputs_kept_with_a_run_fit_one_cell_and_say_what_was_cut():
    import json

    from qareport.side_by_side import MAX_PART, MAX_STORED, _fitted

    long = "x" * (MAX_PART + 500)
    one = _fitted({"turns": [{"turn": 1, "user_message": "q", "selection": None, "steps": None, "answer": long}]})
    assert one["turns"][0]["answer"] == "x" * MAX_PART + " [… 500 more characters]"
    many = _fitted({"turns": [{"turn": n, "user_message": "q", "selection": long, "steps": long, "answer": long}
                              for n in range(1, 21)]})
    assert len(json.dumps(many, ensure_ascii=False)) <= MAX_STORED
    assert all(turn["answer"].startswith("xxx") and "more characters]" in turn["answer"] for turn in many["turns"])


def test_side_by_side_pairs_each_regressed_and_improved_case_with_both_runs_outputs():
    from qareport.kinds import catalogue
    from qareport.side_by_side import side_by_side

    def outputs(answer):
        return {"turns": [{"turn": 1, "user_message": "q", "selection": None, "steps": None, "answer": answer}]}

    old = snapshot(case("a", macro_recall=1.0, outputs=outputs("old a")), case("b", macro_recall=0.5),
                   case("c", macro_recall=1.0, outputs=outputs("same")))
    new = snapshot(case("a", macro_recall=0.5, outputs=outputs("new a")),
                   case("b", macro_recall=1.0, outputs=outputs("new b")), case("c", macro_recall=1.0, outputs=outputs("same")),
                   created="2024-05-08T10:00:00+00:00")
    pairs = side_by_side(compare_runs(old, new), old.cases, new.cases, catalogue())
    assert [(p.case_id, p.kind) for p in pairs] == [("a", "regression"), ("b", "improvement")]  # c did not move
    (turn,) = pairs[0].turns()
    assert turn[0] == 1 and turn[2]["answer"] == "old a" and turn[3]["answer"] == "new a"
    assert pairs[1].old == {}  # a baseline that kept no outputs


def test_the_statistics_sheet_and_the_summary_give_the_same_digits_of_a_mean():
    from conftest import RESPONSES, TESTCASES

    from qareport.case_rows import case_rows
    from qareport.evaluation import evaluate_suite
    from qareport.kinds import catalogue
    from qareport.kinds.selection_statistics import DataQueryFigures
    from qareport.loading import load_suite
    from qareport.statistics import summarize

    results = evaluate_suite(load_suite([str(TESTCASES)], [str(RESPONSES)])).results
    headline = {item.metric: item.mean for item in headline_metrics(case_rows(results, catalogue()))}
    figures = summarize(results).figures_of(DataQueryFigures)
    data_query = figures.overall if figures is not None else None
    assert data_query is not None
    assert (data_query.macro_precision, data_query.macro_recall) == (headline["macro_precision"],
                                                                     headline["macro_recall"])  # exactly


def test_cases_edited_or_removed_while_failing_are_named_as_what_moved_the_mean():
    from qareport.digest import left_failing_alert

    old = snapshot(case("same", macro_recall=0.8), case("edited", macro_recall=0.0, definition_hash="h1"),
                   case("removed", macro_recall=0.1), case("gone_good", macro_recall=1.0), case("crashed", "error"),
                   case("a", macro_recall=0.9), case("still_broken", "error"))
    new = snapshot(case("same", macro_recall=0.8), case("edited", macro_recall=1.0, definition_hash="h2"),
                   case("a", macro_recall=0.9), case("still_broken", "error"))
    got = {d.metric: d for d in compare_runs(old, new).headline}["macro_recall"]
    assert got.new is not None and got.old is not None and got.new > got.old and got.delta == 0
    assert got.left_failing == ("edited", "removed", "crashed")  # a good case leaving did not raise it
    alert = left_failing_alert((got,))
    assert alert is not None and alert.startswith("3 cases left the like-for-like comparison while failing")
    assert "edited, removed, crashed" in alert


def test_no_case_left_while_failing_means_no_alert():
    from qareport.digest import left_failing_alert

    rows = [case(str(i), macro_recall=0.5) for i in range(3)]
    (got,) = compare_runs(snapshot(*rows), snapshot(*rows)).headline
    assert got.left_failing == () and left_failing_alert((got,)) is None


def test_a_slow_drift_within_noise_each_week_is_flagged_against_the_reference_run():
    import itertools
    import random

    from qareport.trend import drift_since, drifted, reference_run

    draw = random.Random(7)
    base = [draw.uniform(0.35, 0.85) for _ in range(80)]
    weeks = []
    for week in range(9):  # week 0 is the reference; then a drop of 0.02 a week for 8 weeks
        rows = [case(str(i), macro_recall=min(1.0, max(0.0, v - 0.02 * week + draw.gauss(0, 0.15))))
                for i, v in enumerate(base)]
        weeks.append(snapshot(*rows, created=f"2024-05-{week + 1:02d}T10:00:00+00:00"))
    weekly = [compare_runs(before, after).headline[0] for before, after in itertools.pairwise(weeks)]
    assert sum(bool(delta.beyond_noise) for delta in weekly) <= 2  # week to week, mostly noise
    reference = reference_run(list(reversed(weeks[:-1])))
    assert reference is weeks[0]
    (got,) = drift_since(reference, weeks[-1])
    assert got.delta == pytest.approx(-0.16, abs=0.03) and drifted((got,)) == (got,)
    assert reference_run([], weeks[3]) is weeks[3] and reference_run([]) is None
    from qareport.digest import drift_alert

    alert = drift_alert((got,), "week0.xlsx")
    assert alert is not None and alert.startswith("drift since the reference run (week0.xlsx), beyond noise: macro")
    assert drift_alert(weekly[:1], "week0.xlsx") is None or weekly[0].beyond_noise
