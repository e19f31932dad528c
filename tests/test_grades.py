"""statgpt's grades (ideal / acceptable / problematic / failure) and the dataset choice scored in its
own right (dataset precision and recall), beside and never inside the macro averages (SPEC section 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from openpyxl import load_workbook

from qareport.case_record import CaseRow
from qareport.cli import main
from qareport.comparison import compare_runs
from qareport.errors import SettingsError
from qareport.evaluation import evaluate_case
from qareport.evaluation_options import EvaluationOptions
from qareport.kinds import catalogue
from qareport.kinds.indicator_selection import INDICATOR_SELECTION
from qareport.kinds.selection_grades import case_grade, dataset_scores, grade_turn, worst_grade
from qareport.kinds.selection_parts import indicator_score, macro_precision, macro_recall
from qareport.kinds.selection_scoring import score_indicator_selection
from qareport.records import (
    DatasetSelection,
    DimensionTerms,
    Location,
    Response,
    RunSnapshot,
    Target,
    TestCase,
    Turn,
    TurnOutput,
)
from qareport.run_reading import read_run
from qareport.runs import case_row_from_stored
from qareport.settings import read_config_file, resolve_run_settings
from qareport.workbook.summary_grid import KEY_COLUMN, VALUE_COLUMN

GDP = {"id": "GDP", "name": "gross domestic product"}
GDPPC = {"id": "GDPPC", "name": "GDP per capita"}
GDP_CONST = {"id": "GDP_CONST", "name": "gross domestic product, constant prices"}
MEX = {"id": "MEX", "name": "Mexico"}
DEU = {"id": "DEU", "name": "Germany"}
ANNUAL = {"id": "A", "name": "Annual"}
GDP_NAME_ONLY = {"name": "gross domestic product"}


def datasets(*entries: tuple[str, dict[str, list[dict[str, str]]]]) -> tuple[DatasetSelection, ...]:
    """`("WEO", {"INDICATOR": [GDP]})` entries as records."""
    from qareport.records import Term

    return tuple(DatasetSelection(dataset_id, tuple(
        DimensionTerms(name, tuple(Term(v.get("id", ""), v.get("name", "")) for v in values))
        for name, values in dimensions.items())) for dataset_id, dimensions in entries)


def one(dataset_id: str = "WEO", **dimensions: list[dict[str, str]]) -> tuple[DatasetSelection, ...]:
    return datasets((dataset_id, dimensions))


# --- the grade of a turn ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target, selected, exp",
    [
        # everything matched
        (one(INDICATOR=[GDP], COUNTRY=[MEX]), one(INDICATOR=[GDP], COUNTRY=[MEX]), "ideal"),
        # a name-only target term matched by its name is matched
        (one(INDICATOR=[GDP_NAME_ONLY]), one(INDICATOR=[GDP]), "ideal"),
        # a target without dimensions, nothing selected, its dataset
        (one(), one(), "ideal"),
        # a target that names no dataset cannot be failed, nor held back, on the dataset
        (one("", INDICATOR=[GDP]), one("IFS", INDICATOR=[GDP]), "ideal"),
        # all target terms found, a few extras (false positives and dimensions not in the target)
        (one(INDICATOR=[GDP]), one(INDICATOR=[GDP, GDP_CONST]), "acceptable"),
        (one(INDICATOR=[GDP]), one(INDICATOR=[GDP, GDP_CONST], FREQ=[ANNUAL]), "acceptable"),
        # all terms found, but not exactly the target's datasets (some of them right)
        (datasets(("WEO", {"INDICATOR": [GDP]}), ("IFS", {})), one(INDICATOR=[GDP]), "acceptable"),
        (one(INDICATOR=[GDP]), datasets(("WEO", {"INDICATOR": [GDP]}), ("IFS", {})), "acceptable"),
        # more extras than allowed
        (one(INDICATOR=[GDP]), one(INDICATOR=[GDP, GDP_CONST, GDPPC], FREQ=[ANNUAL]), "problematic"),
        # a target term missed
        (one(INDICATOR=[GDP], COUNTRY=[MEX]), one(INDICATOR=[GDP], COUNTRY=[DEU]), "problematic"),
        (one(INDICATOR=[GDP], COUNTRY=[MEX]), one(INDICATOR=[GDP]), "problematic"),
        # a wrong dataset: none of the target's selected, whatever the terms
        (one(INDICATOR=[GDP]), one("IFS", INDICATOR=[GDP]), "failure"),
        (one(INDICATOR=[GDP], COUNTRY=[MEX]), one("IFS", INDICATOR=[GDP]), "failure"),
        (one(INDICATOR=[GDP]), (), "failure"),
    ],
)
def test_a_turn_gets_statgpts_grade(target, selected, exp):
    got = score_indicator_selection(target, selected)
    assert got.grade == exp == grade_turn(got)


@pytest.mark.parametrize("extras", [1, 2, 3])
@pytest.mark.parametrize("acceptable_extras", [0, 1, 2, 5])
def test_extra_terms_are_acceptable_up_to_the_threshold(extras, acceptable_extras):
    selected = one(INDICATOR=[GDP, GDPPC, GDP_CONST][:1 + min(extras, 2)], FREQ=[ANNUAL] if extras == 3 else [])
    got = score_indicator_selection(one(INDICATOR=[GDP]), selected, acceptable_extras=acceptable_extras)
    assert got.grade == ("acceptable" if extras <= acceptable_extras else "problematic")
    assert got.macro_recall == 1.0  # the threshold never touches the seed's numbers


def test_the_worst_grade_wins_and_unknown_grades_are_ignored():
    assert worst_grade(["ideal", "failure", "acceptable"]) == "failure"
    assert worst_grade(["acceptable", "ideal"]) == "acceptable"
    assert worst_grade([None, "problematic", "great"]) == "problematic"
    assert worst_grade([None]) is None


# --- a case: the worst turn, and the dataset choice ------------------------------------------------


def conversation(*turns: tuple[tuple[DatasetSelection, ...], tuple[DatasetSelection, ...] | None],
                 acceptable_extras: int = 2, status: str = "success"):
    case = TestCase(id="c", kind="conversation", name="c", groups=("t",), location=Location("c.yaml", 1),
                    turns=tuple(Turn(n, f"message {n}", Target(parts={"indicator_selection": target}))
                                for n, (target, _) in enumerate(turns, start=1)))
    response = Response("c", Location("r.json"), status=status,  # type: ignore[arg-type]
                        turns=tuple(TurnOutput(parts={} if selected is None else {"indicator_selection": selected}) for _, selected in turns))
    result, _ = evaluate_case(case, response, options=EvaluationOptions(acceptable_extras=acceptable_extras))
    return result


def test_a_multi_turn_case_gets_its_worst_turns_grade():
    ideal = (one(INDICATOR=[GDP]), one(INDICATOR=[GDP]))
    extra = (one(INDICATOR=[GDP]), one(INDICATOR=[GDP, GDP_CONST]))
    missed = (one(INDICATOR=[GDP, GDPPC]), one(INDICATOR=[GDP]))
    wrong = (one(INDICATOR=[GDP]), one("IFS", INDICATOR=[GDP]))
    assert case_grade(conversation(ideal, ideal)) == "ideal"
    assert case_grade(conversation(ideal, extra, ideal)) == "acceptable"
    assert case_grade(conversation(extra, missed)) == "problematic"
    assert case_grade(conversation(missed, ideal, wrong)) == "failure"
    assert [indicator_score(t).grade for t in conversation(ideal, extra, missed).turns] == ["ideal", "acceptable", "problematic"]
    assert case_grade(conversation(extra, extra, acceptable_extras=0)) == "problematic"


def test_a_case_not_evaluated_is_not_graded_and_has_no_dataset_scores():
    result = conversation((one(INDICATOR=[GDP]), one(INDICATOR=[GDP])), status="error")
    assert case_grade(result) is None and dataset_scores(result) == (None, None)
    assert "grade" not in catalogue().case_facts(result).get("indicator_selection", {})


@pytest.mark.parametrize(
    "turns, exp_precision, exp_recall",
    [
        ([(one(INDICATOR=[GDP]), one(INDICATOR=[GDP]))], 1.0, 1.0),
        # name-only values: the terms play no part, the dataset ids do
        ([(one(INDICATOR=[GDP_NAME_ONLY]), one(INDICATOR=[{"name": "something else"}]))], 1.0, 1.0),
        ([(one(INDICATOR=[GDP_NAME_ONLY]), one("IFS", INDICATOR=[GDP_NAME_ONLY]))], 0.0, 0.0),
        # several datasets in one turn
        ([(datasets(("WEO", {"INDICATOR": [GDP]}), ("IFS", {"INDICATOR": [GDPPC]})), one(INDICATOR=[GDP, GDPPC]))],
         1.0, 0.5),
        ([(one(INDICATOR=[GDP]), datasets(("WEO", {"INDICATOR": [GDP]}), ("IFS", {"INDICATOR": [GDPPC]})))],
         0.5, 1.0),
        # pooled over the turns, each turn against its own target: 1 TP, 1 FP, 1 FN (a union of the
        # turns' ids would say precision 1.0)
        ([(one(INDICATOR=[GDP]), one(INDICATOR=[GDP])), (one("IFS", INDICATOR=[GDP]), one(INDICATOR=[GDP]))],
         0.5, 0.5),
        # nothing selected: precision 0.0 (as for a dimension), recall 0.0
        ([(one(INDICATOR=[GDP]), ())], 0.0, 0.0),
        # turns whose target names no dataset are left out; none left: no value
        ([(one("", INDICATOR=[GDP]), one("IFS", INDICATOR=[GDP])), (one(INDICATOR=[GDP]), one(INDICATOR=[GDP]))],
         1.0, 1.0),
        ([(one("", INDICATOR=[GDP]), one("IFS", INDICATOR=[GDP]))], None, None),
    ],
)
def test_dataset_precision_and_recall_of_a_case(turns, exp_precision, exp_recall):
    result = conversation(*turns)
    assert dataset_scores(result) == (exp_precision, exp_recall)
    metrics = INDICATOR_SELECTION.case_metrics(result)
    assert (metrics["dataset_precision"], metrics["dataset_recall"]) == (exp_precision, exp_recall)


def test_the_dataset_choice_never_enters_the_macro_averages():
    right = conversation((one(INDICATOR=[GDP], COUNTRY=[MEX]), one(INDICATOR=[GDP], COUNTRY=[DEU])))
    wrong = conversation((one(INDICATOR=[GDP], COUNTRY=[MEX]), one("IFS", INDICATOR=[GDP], COUNTRY=[DEU])))
    assert (macro_precision(wrong), macro_recall(wrong)) == (macro_precision(right), macro_recall(right)) == (0.5, 0.5)
    assert dataset_scores(right) == (1.0, 1.0) and dataset_scores(wrong) == (0.0, 0.0)
    assert (case_grade(right), case_grade(wrong)) == ("problematic", "failure")


# --- the threshold: option > configuration > default ----------------------------------------------


def test_the_acceptable_extras_come_from_the_option_else_the_configuration_else_two(tmp_path):
    config_path = tmp_path / "qareport.yaml"
    config_path.write_text("indicator_selection:\n  acceptable_extras: 0\n", encoding="utf-8")
    config = read_config_file(config_path)
    assert resolve_run_settings({}, read_config_file(None)).acceptable_extras == 2
    assert resolve_run_settings({}, config).acceptable_extras == 0
    assert resolve_run_settings({"acceptable_extras": 4}, config).acceptable_extras == 4


def test_a_wrong_acceptable_extras_is_one_clear_message(tmp_path):
    config_path = tmp_path / "qareport.yaml"
    config_path.write_text("strict: false\nindicator_selection:\n  acceptable_extra: 1\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"qareport.yaml:2: unknown key 'indicator_selection.acceptable_extra'"):
        resolve_run_settings({}, read_config_file(config_path))
    config_path.write_text("indicator_selection:\n  acceptable_extras: -1\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"'indicator_selection.acceptable_extras' in .*qareport.yaml must be an "
                                            r"integer >= 0 \(got -1\)"):
        resolve_run_settings({}, read_config_file(config_path))


# --- end to end: Overview, Summary, Statistics, Details, Changes --------------------------------------


def _case(case_id: str, tags: list[str], *targets: tuple[DatasetSelection, ...] | list) -> dict:
    return {"id": case_id, "name": case_id, "tags": tags, "conversation": [
        {"role": "user", "content": f"question {n}", "target": {"indicator_selection": target}}
        for n, target in enumerate(targets, start=1)]}


def _selection(dataset_id: str = "WEO", **dimensions: list[dict[str, str]]) -> list:
    return [{"dataset_id": dataset_id, "dimensions": [{"dimension_name": name, "values": values}
                                                       for name, values in dimensions.items()]}]


TARGET = _selection(INDICATOR=[GDP], COUNTRY=[MEX])
CASES = [
    _case("ideal", ["a"], TARGET),
    _case("one-extra", ["a", "b"], TARGET),
    _case("missed", ["b"], TARGET),
    _case("wrong-dataset", ["b"], TARGET),
    _case("multi", ["a"], TARGET, _selection(INDICATOR=[GDPPC])),
    _case("no-response", ["a"], TARGET),
]
RESPONSES = [
    {"id": "ideal", "indicator_selection": TARGET},
    {"id": "one-extra", "indicator_selection": _selection(INDICATOR=[GDP, GDP_CONST], COUNTRY=[MEX])},
    {"id": "missed", "indicator_selection": _selection(INDICATOR=[GDP])},
    {"id": "wrong-dataset", "indicator_selection": _selection("IFS", INDICATOR=[GDP], COUNTRY=[MEX])},
    {"id": "multi", "turns": [{"indicator_selection": TARGET},
                              {"indicator_selection": _selection(INDICATOR=[GDPPC], FREQ=[ANNUAL])}]},
]


def _run(folder: Path, responses: list, *options: str, name: str = "report.xlsx") -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "cases.yaml").write_text(yaml.safe_dump(CASES, sort_keys=False), encoding="utf-8")
    (folder / f"{name}.json").write_text(json.dumps(responses), encoding="utf-8")
    report = folder / name
    status = main(["run", str(folder / "cases.yaml"), "--responses", str(folder / f"{name}.json"),
                   "--output", str(report), "--no-llm", "-q", *options])
    assert status == 0
    return report


def _overview(book) -> dict[str, dict]:
    sheet = book["Overview"]
    header = [c.value for c in sheet[1]]
    return {row[0]: dict(zip(header, row)) for row in sheet.iter_rows(min_row=2, values_only=True)}


def _summary_grades(book) -> dict[str, int]:
    rows = [(row[KEY_COLUMN - 1], row[VALUE_COLUMN - 1]) for row in book["Summary"].iter_rows(values_only=True)]
    start = rows.index(("Grades: indicator selection", None))
    return {key: value for key, value in rows[start + 1:start + 6]}


def _statistics_table(book) -> dict[str, dict]:
    rows = list(book["Statistics"].iter_rows(values_only=True))
    start = next(i for i, row in enumerate(rows) if row[0] == "Indicator selection grades and dataset choice per tag")
    header = [value for value in rows[start + 1] if value is not None]
    table = {}
    for row in rows[start + 2:]:
        if row[0] is None:
            break
        table[row[0]] = dict(zip(header, row))
    return table


def test_grades_and_dataset_scores_are_read_back_from_the_workbook(tmp_path):
    report = _run(tmp_path / "run", RESPONSES)
    book = load_workbook(report)
    overview = _overview(book)
    assert {case_id: row["grade"] for case_id, row in overview.items()} == {
        "ideal": "ideal", "one-extra": "acceptable", "missed": "problematic", "wrong-dataset": "failure",
        "multi": "acceptable", "no-response": None}
    headers = list(overview["ideal"])
    assert headers.index("review note") + 1 == headers.index("grade")  # first after the scanning part
    assert (overview["wrong-dataset"]["dataset precision"], overview["wrong-dataset"]["dataset recall"]) == (0.0, 0.0)
    assert (overview["wrong-dataset"]["macro precision"], overview["wrong-dataset"]["macro recall"]) == (1.0, 1.0)
    assert overview["multi"]["dataset precision"] == 1.0 and overview["no-response"]["dataset precision"] is None

    assert _summary_grades(book) == {"ideal": 1, "acceptable": 2, "problematic": 1, "failure": 1, "not graded": 1}

    table = _statistics_table(book)
    assert list(table) == ["all cases", "a", "b"]
    assert [table["all cases"][g] for g in ("cases", "ideal", "acceptable", "problematic", "failure", "not graded")] \
        == [6, 1, 2, 1, 1, 1]
    assert [table["a"][g] for g in ("cases", "ideal", "acceptable", "problematic", "failure", "not graded")] \
        == [4, 1, 2, 0, 0, 1]
    assert [table["b"][g] for g in ("cases", "ideal", "acceptable", "problematic", "failure", "not graded")] \
        == [3, 0, 1, 1, 1, 0]
    assert table["b"]["dataset precision"] == pytest.approx(2 / 3) and table["b"]["cases with a dataset target"] == 3

    details = list(book["Details"].iter_rows(values_only=True))
    multi = [(row[2], row[3], row[4], row[5], row[9]) for row in details if row[0] == "multi" and row[3] in ("(dataset)", "(grade)")]
    assert multi == [(1, "(dataset)", "TP", "WEO", None), (1, "(grade)", "ideal", None, None),
                     (2, "(dataset)", "TP", "WEO", None), (2, "(grade)", "acceptable", None, "1 extra term")]
    wrong = [(row[3], row[4], row[5], row[9]) for row in details if row[0] == "wrong-dataset" and row[3] in ("(dataset)", "(grade)")]
    assert wrong == [("(dataset)", "FP", "IFS", None), ("(dataset)", "FN", "WEO", None),
                     ("(grade)", "failure", None, "wrong dataset: IFS, expected WEO")]


def test_the_grade_extras_option_changes_the_grades_and_is_stated(tmp_path):
    book = load_workbook(_run(tmp_path / "run", RESPONSES, "--grade-extras", "0"))
    assert _summary_grades(book) == {"ideal": 1, "acceptable": 0, "problematic": 3, "failure": 1, "not graded": 1}
    right = " ".join(str(row[VALUE_COLUMN - 1]) for row in book["Summary"].iter_rows(values_only=True)
                     if row[VALUE_COLUMN - 1] is not None)
    assert "acceptable extras: 0" in right  # among the options of what was run


def test_a_grade_that_moves_between_two_runs_is_a_line_of_changes(tmp_path):
    last_week = _run(tmp_path / "last", RESPONSES, name="last.xlsx")
    stored = {row.case_id: row for row in read_run(last_week).cases}
    assert stored["wrong-dataset"].facts["indicator_selection"]["grade"] == ["failure"]
    assert "grade" not in stored["no-response"].facts.get("indicator_selection", {})

    # this week: the wrong dataset is right (same terms: the macro averages do not move), and the
    # extra term of "one-extra" becomes three (acceptable → problematic, a regression)
    now = [dict(r) for r in RESPONSES]
    now[3] = {"id": "wrong-dataset", "indicator_selection": TARGET}
    now[1] = {"id": "one-extra", "indicator_selection": _selection(
        INDICATOR=[GDP, GDP_CONST, GDPPC], COUNTRY=[MEX, DEU])}
    report = _run(tmp_path / "now", now, "--baseline", str(last_week), name="now.xlsx")
    changes = list(load_workbook(report, data_only=True)["Changes"].iter_rows(min_row=2, values_only=True))
    lines = [(row[0], row[2], row[3], row[4], row[5]) for row in changes if row[3] == "grade"]
    assert lines == [("one-extra", "regression", "grade", "acceptable", "problematic"),
                     ("wrong-dataset", "improvement", "grade", "failure", "ideal")]
    moved = {(row[0], row[3]) for row in changes}
    assert ("wrong-dataset", "dataset precision") in moved and ("wrong-dataset", "macro precision") not in moved


def _row(case_id: str, grade: object = None, **extra: object) -> CaseRow:
    """A case row as a stored run holds it, read back."""
    facts = {"indicator_selection": {"grade": grade}} if grade is not None else {}
    return case_row_from_stored({"case_id": case_id, "kind": "conversation", "name": case_id, "groups": [],
                                 "status": "success", "definition_hash": "h", "facts": facts, "macro_precision": 1.0,
                                 "macro_recall": 1.0, **extra})


def _changes(old: CaseRow, new: CaseRow) -> list[tuple]:
    snapshot = lambda row: RunSnapshot(source="x", created="2024-05-01T10:00:00+00:00",  # noqa: E731
                                       qareport_version="0", cases=(row,))
    return [(c.kind, c.metric, c.old, c.new) for c in compare_runs(snapshot(old), snapshot(new)).changes]


def test_a_stored_grade_is_read_defensively():
    assert _changes(_row("a", ["ideal"]), _row("a", ["failure"])) == [("regression", "grade", "ideal", "failure")]
    assert _changes(_row("a", ["problematic"]), _row("a", ["acceptable"])) == [
        ("improvement", "grade", "problematic", "acceptable")]
    assert _changes(_row("a"), _row("a", ["failure"])) == []  # a run stored before grades
    assert _changes(_row("a", ["great"]), _row("a", ["failure"])) == []  # an edit that is no grade
    assert _changes(_row("a", "ideal"), _row("a", ["failure"])) == []  # not a list
    # an edited test regrades: the case is "test changed", without a grade line
    assert _changes(_row("a", ["ideal"]), _row("a", ["failure"], definition_hash="edited")) == [
        ("test changed", None, None, None)]


def test_grades_moved_by_other_grade_extras_are_said_and_kept_out_of_the_regression_gate(tmp_path, capsys):
    last_week = _run(tmp_path / "last", RESPONSES, name="last.xlsx")  # two extra terms acceptable
    folder = tmp_path / "now"
    folder.mkdir()
    (folder / "cases.yaml").write_text(yaml.safe_dump(CASES, sort_keys=False), encoding="utf-8")
    (folder / "now.json").write_text(json.dumps(RESPONSES), encoding="utf-8")
    status = main(["run", str(folder / "cases.yaml"), "--responses", str(folder / "now.json"), "--output",
                   str(folder / "now.xlsx"), "--no-llm", "-q", "--grade-extras", "0", "--baseline", str(last_week),
                   "--fail-on-regression"])
    assert status == 0  # the same answers: only the rules moved the grades
    assert "--grade-extras" in capsys.readouterr().err
    book = load_workbook(folder / "now.xlsx", data_only=True)
    changes = list(book["Changes"].iter_rows(min_row=2, values_only=True))
    lines = {(row[0], row[2], row[4], row[5]) for row in changes if row[3] == "grade"}
    assert ("one-extra", "rules changed", "acceptable", "problematic") in lines
    assert not any(row[2] == "regression" for row in changes)
    problems = " ".join(str(cell) for row in book["Problems"].iter_rows(values_only=True) for cell in row if cell)
    assert "at most 2 extra terms" in problems and "at most 0" in problems
    assert read_run(folder / "now.xlsx").acceptable_extras == 0
    assert read_run(last_week).acceptable_extras == 2


def test_a_results_file_keeps_the_grade_extras_only_when_not_the_default(tmp_path):
    folder = tmp_path / "run"
    _run(folder, RESPONSES, "--grade-extras", "0", "--results", str(tmp_path / "zero.json"))
    _run(folder, RESPONSES, "--results", str(tmp_path / "default.json"), name="default.xlsx")
    assert json.loads((tmp_path / "zero.json").read_text(encoding="utf-8"))["qareport"]["acceptable_extras"] == 0
    assert "acceptable_extras" not in json.loads((tmp_path / "default.json").read_text(encoding="utf-8"))["qareport"]
    assert read_run(tmp_path / "zero.json").acceptable_extras == 0
    assert read_run(tmp_path / "default.json").acceptable_extras is None  # graded by the default


def test_the_trend_counts_no_regression_for_a_grade_moved_by_other_grade_extras():
    from qareport.trend import trend_points

    def run(grade: str, extras: int | None, created: str) -> RunSnapshot:
        return RunSnapshot(source=created, created=created, qareport_version="0", acceptable_extras=extras,
                           cases=(_row("a", [grade]),))

    points = trend_points([run("acceptable", None, "2024-05-01T10:00:00+00:00")],
                          run("problematic", 0, "2024-05-08T10:00:00+00:00"))
    assert points[-1].regressions == 0
    points = trend_points([run("acceptable", 0, "2024-05-01T10:00:00+00:00")],
                          run("problematic", 0, "2024-05-08T10:00:00+00:00"))
    assert points[-1].regressions == 1  # the same rules: a grade that got worse is a regression
