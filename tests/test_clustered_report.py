"""The workbook's intervals and tests respect the suite's clusters (issue 20, items 4 to 6).

A generated graphrag-eval suite of a few templates with many questions each, run twice: between the
two runs only one template moved. A naive test over cases calls that a change of the suite; the
clustered one does not, and says instead that the one template changed. Read back from the workbook.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from openpyxl import load_workbook

from qareport.cli import main
from qareport.clustered_statistics import (
    benjamini_hochberg,
    clustered_interval,
    clustered_paired_change,
    holm,
    minimum_detectable_change,
)
from qareport.clusters import cluster_by_tag, row_cluster
from qareport.comparison import compare_runs
from qareport.digest import signed_bound
from qareport.loading import load_suite
from qareport.records import RunSnapshot
from qareport.runs import case_row_from_stored

TEMPLATES, QUESTIONS, STEPS = 8, 10, 4
SHIFTED = "template_3"  # the one template whose questions all got worse


def _matched(template: int, question: int, *, shifted: bool) -> int:
    """How many of a question's four reference steps the system matches: varies with the template
    and the question, and drops to 0 for every question of the shifted template this week."""
    if shifted:
        return 0
    return 2 + (template + question) % 3  # 2, 3 or 4 of 4: steps score 0.5, 0.75 or 1.0


def _write_suite(folder: Path, *, shifted: bool) -> tuple[dict[str, float], dict[str, str]]:
    """The test cases (once) and one week's responses; returns each question's steps score and template."""
    templates, responses, scores, clusters = [], [], {}, {}
    for template in range(TEMPLATES):
        template_id = f"template_{template}"
        questions = []
        for question in range(QUESTIONS):
            question_id = f"q{template}_{question}"
            steps = [{"name": "lookup", "args": {"part": step}, "output": f"row {step}"} for step in range(STEPS)]
            questions.append({"id": question_id, "question_text": f"question {question} of {template_id}",
                              "reference_steps": [steps]})
            matched = _matched(template, question, shifted=shifted and template_id == SHIFTED)
            responses.append({"question_id": question_id, "actual_steps": [
                {**step, "status": "success", "id": f"call{index}"} for index, step in enumerate(steps[:matched])]})
            scores[question_id] = matched / STEPS
            clusters[question_id] = template_id
        templates.append({"template_id": template_id, "questions": questions})
    (folder / "testcases").mkdir(exist_ok=True)
    (folder / "testcases" / "qa.yaml").write_text(yaml.safe_dump(templates, sort_keys=False), encoding="utf-8")
    name = "this-week.json" if shifted else "last-week.json"
    (folder / name).write_text(json.dumps(responses), encoding="utf-8")
    return scores, clusters


def _rows(ws) -> list[list]:
    return [[cell for cell in row] for row in ws.iter_rows(values_only=True)]


def _table_after(rows: list[list], header_start: list) -> list[list]:
    """The rows of the table whose header row begins with `header_start`, up to the first blank row."""
    start = next(index for index, row in enumerate(rows) if row[:len(header_start)] == header_start)
    table = []
    for row in rows[start + 1:]:
        if row[0] is None:
            break
        table.append(row)
    return table


@pytest.fixture(scope="module")
def clustered_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clustered")
    old, clusters = _write_suite(folder, shifted=False)
    new, _ = _write_suite(folder, shifted=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setenv("SOURCE_DATE_EPOCH", "1714557600")
        assert main(["run", "testcases", "--responses", "last-week.json", "--output", "last.xlsx", "--no-llm",
                     "-q"]) == 0
        patch.setenv("SOURCE_DATE_EPOCH", "1715162400")
        assert main(["run", "testcases", "--responses", "this-week.json", "--output", "report.xlsx", "--no-llm",
                     "-q", "--baseline", "last.xlsx"]) == 0
    ids = list(old)
    return {"workbook": load_workbook(folder / "report.xlsx"), "old": [old[i] for i in ids],
            "new": [new[i] for i in ids], "clusters": [clusters[i] for i in ids]}


def test_a_shift_of_one_template_is_a_change_to_a_naive_test_but_not_to_the_clustered_one(clustered_run):
    old, new, clusters = clustered_run["old"], clustered_run["new"], clustered_run["clusters"]
    naive = clustered_paired_change(old, new)  # every case its own cluster
    assert naive is not None and naive.p_value <= 0.05  # ten questions that moved together look like ten witnesses
    rows = _rows(clustered_run["workbook"]["Summary"])
    expected = clustered_paired_change(old, new, clusters=clusters)
    assert expected is not None and expected.p_value > 0.05
    # the Summary's headline row: the change's interval and decision; Statistics: its p, cases and clusters
    headline = next(row for row in rows if row[0] == "steps score" and row[11] is not None)
    assert headline[11].startswith("within noise") and headline[6] == 80
    assert headline[10] == f"{signed_bound(expected.low)} – {signed_bound(expected.high)}"
    changes = _table_after(_rows(clustered_run["workbook"]["Statistics"]), ["change of", "metric", "cases", "clusters"])
    steps = next(row for row in changes if row[:2] == ["all test cases", "steps score"])
    assert steps[8] == pytest.approx(expected.p_value) and steps[2:4] == [80, 8]
    interval = clustered_interval(new, clusters=clusters)
    assert interval is not None
    assert headline[2] == f"{interval.low:.2f} – {interval.high:.2f}"  # the cluster bootstrap, not the naive one


def test_the_one_template_that_moved_is_beyond_noise_in_the_statistics_changes(clustered_run):
    rows = _rows(clustered_run["workbook"]["Statistics"])
    changes = _table_after(rows, ["change of", "metric", "cases", "clusters"])
    verdicts = {row[0]: row[10] for row in changes}
    assert verdicts["all test cases"] == "within noise"
    assert verdicts[f"template {SHIFTED}"] == "beyond noise"
    assert [group for group, verdict in verdicts.items() if verdict == "beyond noise"] == [f"template {SHIFTED}"]
    shifted = next(row for row in changes if row[0] == f"template {SHIFTED}")
    before = [value for value, cluster in zip(clustered_run["old"], clustered_run["clusters"]) if cluster == SHIFTED]
    assert shifted[2:4] == [10, 1] and shifted[6] == pytest.approx(-sum(before) / len(before))  # all went to 0
    # each family adjusted on its own: the headline metrics (Holm), the templates (Benjamini-Hochberg)
    headline = [row for row in changes if row[0] == "all test cases"]
    templates = [row for row in changes if str(row[0]).startswith("template ")]
    assert [row[9] for row in headline] == pytest.approx(list(holm([row[8] for row in headline]).q_values))
    assert [row[9] for row in templates] == pytest.approx(
        list(benjamini_hochberg([row[8] for row in templates]).q_values))
    notes = " ".join(str(row[0]) for row in rows if row[0])
    assert "Holm" in notes and "Benjamini-Hochberg" in notes and "beyond noise only when q ≤ 0.05" in notes


def test_the_summary_states_the_smallest_change_the_run_can_detect(clustered_run):
    old, new, clusters = clustered_run["old"], clustered_run["new"], clustered_run["clusters"]
    change = clustered_paired_change(old, new, clusters=clusters)
    assert change is not None and change.interval.design_effect is not None
    expected = minimum_detectable_change(change.interval.standard_deviation, cases=80, clusters=8,
                                         design_effect=change.interval.design_effect).change
    notes = [str(row[0]) for row in _rows(clustered_run["workbook"]["Summary"]) if row[0]]
    sentence = (f"steps score: with 80 cases in 8 clusters, a drop of {expected:.2f} would be flagged about 8 times "
                "in 10; 4 times the clusters would halve it")
    assert sentence in " ".join(notes), notes  # a note wraps over rows
    assert (sentence + "; design effect") in " ".join(notes)  # clustering mattered


def _row(case_id: str, tag: str, recall: float) -> dict:
    return {"case_id": case_id, "kind": "conversation", "name": case_id, "groups": [tag], "status": "success",
            "definition_hash": "", "macro_recall": recall, "macro_precision": 1.0}


def test_a_tag_that_moved_by_chance_among_many_is_not_beyond_noise_after_the_false_discovery_rate():
    tags, per_tag = 20, 6
    old = [_row(f"c{t}_{i}", f"tag{t}", 0.8 + 0.01 * i) for t in range(tags) for i in range(per_tag)]
    new = [dict(row, macro_recall=row["macro_recall"] - (0.1 if row["groups"] == ["tag7"] else 0.0)) for row in old]
    comparison = compare_runs(RunSnapshot("last", "2024-05-01", "0", tuple(map(case_row_from_stored, old))),
                              RunSnapshot("this", "2024-05-08", "0", tuple(map(case_row_from_stored, new))))
    moved = next(item for item in comparison.breakdown if item.group == "tag7" and item.metric == "macro_recall")
    assert moved.p_value <= 0.05  # alone, six cases that all dropped would be "beyond noise"
    assert moved.q_value is not None and moved.q_value > 0.05 and moved.beyond_noise is False
    flags = comparison.flags
    tagged = [item for item in flags if getattr(item, "by", None) == "tag"]  # one family: the tags
    expected = benjamini_hochberg([item.p_value for item in tagged])
    assert [item.q_value for item in tagged] == pytest.approx(list(expected.q_values))
    assert comparison.beyond_noise == 0 and comparison.tests == len(flags) > tags


def test_a_conversation_case_declares_its_cluster_by_key_or_by_tag(tmp_path):
    (tmp_path / "cases.yaml").write_text(yaml.safe_dump([
        {"id": "a", "tags": ["family:x"], "cluster": "gdp questions",
         "conversation": [{"role": "user", "content": "q", "target": {"reference_answer": "r"}}]},
        {"id": "b", "tags": ["weo", "family:x"],
         "conversation": [{"role": "user", "content": "q", "target": {"reference_answer": "r"}}]},
        {"id": "c", "tags": ["family:y", "family:z"],
         "conversation": [{"role": "user", "content": "q", "target": {"reference_answer": "r"}}]},
        {"id": "d", "tags": ["weo"], "cluster": ["not", "text"],
         "conversation": [{"role": "user", "content": "q", "target": {"reference_answer": "r"}}]},
    ]), encoding="utf-8")
    (tmp_path / "responses.json").write_text(json.dumps([]), encoding="utf-8")
    suite = load_suite([str(tmp_path / "cases.yaml")], [str(tmp_path / "responses.json")])
    assert [case.cluster for case in suite.cases if case.id in "abc"] == ["gdp questions", None, None]
    assert any("'cluster' must be a string" in problem.message for problem in suite.problems)
    cases, problems = cluster_by_tag(suite.cases, "family:")
    assert {case.id: case.cluster for case in cases if case.id in "abc"} == {
        "a": "gdp questions", "b": "family:x", "c": "family:y"}  # the key wins; the first such tag
    assert len(problems) == 1 and "'family:y'" in problems[0].message and problems[0].case_id == "c"


def test_a_stored_row_without_a_cluster_falls_back_to_its_template():
    def stored(**values: object) -> str | None:
        return row_cluster(case_row_from_stored(values))

    assert stored(kind="qa", groups=["t1"]) == "t1"  # a baseline stored before runs kept clusters
    assert stored(kind="qa", groups=["t1"], cluster="t1") == "t1"
    assert stored(kind="conversation", groups=["weo"], cluster=None) is None
    assert stored(kind="conversation", groups=["weo"], cluster=3) is None


def _conversation_suite(folder: Path, *, dropped: set[str]) -> None:
    cases, responses = [], []
    for family in "abc":
        for number in range(4):
            case_id = f"{family}{number}"
            target = [{"dataset_id": "D", "dimensions": [{"dimension_name": "COUNTRY", "values": [
                {"id": "MEX", "name": "Mexico"}, {"id": "KEN", "name": "Kenya"}]}]}]
            cases.append({"id": case_id, "tags": ["weo", f"family:{family}"],
                          "conversation": [{"role": "user", "content": "q",
                                            "target": {"indicator_selection": target}}]})
            values = target[0]["dimensions"][0]["values"][:1 if case_id in dropped else 2]
            responses.append({"id": case_id, "indicator_selection": [
                {"dataset_id": "D", "dimensions": [{"dimension_name": "COUNTRY", "values": values}]}]})
    (folder / "cases.yaml").write_text(yaml.safe_dump(cases), encoding="utf-8")
    name = "this.json" if dropped else "last.json"
    (folder / name).write_text(json.dumps(responses), encoding="utf-8")


def test_clusters_named_by_tags_are_what_the_summary_counts_and_the_stored_run_keeps(tmp_path, monkeypatch):
    _conversation_suite(tmp_path, dropped=set())
    _conversation_suite(tmp_path, dropped={"a0", "a1", "a2", "a3"})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1714557600")
    common = ["cases.yaml", "--no-llm", "-q", "--cluster-by-tag", "family:"]
    assert main(["run", *common, "--responses", "last.json", "--output", "last.xlsx"]) == 0
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1715162400")
    assert main(["run", *common, "--responses", "this.json", "--output", "report.xlsx", "--baseline", "last.xlsx"]) == 0
    workbook = load_workbook(tmp_path / "report.xlsx")
    changes = _table_after(_rows(workbook["Statistics"]), ["change of", "metric", "cases", "clusters"])
    recall = next(row for row in changes if row[:2] == ["all test cases", "macro recall"])
    assert recall[2:4] == [12, 3]  # twelve cases, three families
    assert next(row for row in _rows(workbook["Summary"]) if row[0] == "macro recall")[6] == 12
    stored = _rows(workbook["qareport_results"])
    column = stored[0].index("cluster")
    assert sorted({row[column] for row in stored[1:]}) == ["family:a", "family:b", "family:c"]
    changes = _table_after(_rows(workbook["Statistics"]), ["change of", "metric", "cases", "clusters"])
    country = next(row for row in changes if row[:2] == ["dimension COUNTRY", "recall"])
    assert country[2:4] == [12, 3] and country[6] == pytest.approx(-1 / 6)  # 4 of 12 cases lost half their recall


def test_the_verdict_and_the_email_count_the_changes_beyond_noise_from_the_same_decision(clustered_run, tmp_path):
    from qareport.emailing import email_context
    from qareport.run_reading import read_report

    rows = _rows(clustered_run["workbook"]["Statistics"])
    changes = _table_after(rows, ["change of", "metric", "cases", "clusters"])
    beyond = sum(row[10] == "beyond noise" for row in changes)
    assert beyond == 1
    summary = _rows(clustered_run["workbook"]["Summary"])
    verdict, _, why = summary[2][0].partition("; ")  # the verdict, row 3, then why cases and means differ
    assert verdict.endswith(", 1 change beyond noise") and why.startswith("10 cases regressed in a single run")
    path = tmp_path / "report.xlsx"
    clustered_run["workbook"].save(path)
    digest = read_report(path).digest
    assert digest is not None and (digest.beyond_noise, digest.tests) == (beyond, len(changes))
    context = email_context(digest, file_name="report.xlsx")
    assert context["noise_count"].startswith(f"1 of {len(changes)} changes tested")
    assert [metric["noise"] for metric in context["metrics"]] == ["within noise"]


def test_a_digest_stored_before_the_false_discovery_rate_was_controlled_decides_by_its_p_value():
    from qareport.comparison import HeadlineDelta

    stored = HeadlineDelta("macro_recall", 0.8, 0.7, 20, 20, 0.8, 0.7, 20, p_value=0.01)  # no q, no decision
    assert stored.noise == "beyond noise"
    assert HeadlineDelta("macro_recall", 0.8, 0.7, 20, 20, 0.8, 0.7, 20, p_value=0.01, q_value=0.2,
                         beyond_noise=False).noise == "within noise"
    assert HeadlineDelta("macro_recall", 0.8, None, 20, 0).noise is None


def test_clusters_whose_means_are_all_equal_leave_the_smallest_detectable_change_unestimated():
    from qareport.headline import headline_metrics

    rows = [{"case_id": f"q{t}{i}", "kind": "qa", "groups": [f"t{t}"], "cluster": f"t{t}", "status": "success",
             "steps_score": value} for t in range(3) for i, value in enumerate((0.0, 1.0))]
    (steps,) = headline_metrics([case_row_from_stored(row) for row in rows])  # each template's mean is 0.5: no spread between clusters
    assert steps.clusters == 3 and steps.design_effect == 0.0 and steps.detectable is None


@pytest.mark.parametrize(("detectable", "exp"), [
    (0.3, "a drop of 0.30 would be flagged about 8 times in 10; 4 times the clusters would halve it"),
    (0.004, "a drop of 0.004 would be flagged about 8 times in 10; 4 times the clusters would halve it"),
    (1.2, "even a drop from 1 to 0 would not be flagged 8 times in 10; 4 times the clusters would halve it"),
    (0.0, "the cases do not vary: any change can be told from noise"),
])
def test_the_smallest_detectable_change_is_never_said_as_zero(detectable, exp):
    from qareport.digest import detectable_words
    from qareport.headline import Headline

    item = Headline("answer_relevance", 0.5, 26, clusters=19, detectable=detectable)
    assert detectable_words(item, None) == f"with 26 cases in 19 clusters, {exp}"
