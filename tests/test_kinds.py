"""A kind of target is one module: a kind defined here, in the tests, reaches every output.

The toy kind `expected_keywords` expects words in the answer; it is registered by a fixture and
nothing else in qareport is changed, yet its metric appears in Overview, Details, Statistics, the
results file and the comparison with a baseline.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from openpyxl import load_workbook

from qareport import kinds
from qareport.cli import main
from qareport.errors import ShapeError
from qareport.kinds import Column, DetailRow, Kind, Metric, Table, TurnInput
from qareport.records import CaseResult


class ExpectedKeywords(Kind):
    """Words the answer must contain."""

    name = "expected_keywords"
    label = "expected keywords"
    metrics = (Metric("keyword_recall", "keyword recall", headline=True),)

    def parse_target(self, value: Any, *, line: int | None) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
            raise ShapeError("'expected_keywords' must be a list of words", line)
        return tuple(value)

    def parse_output(self, turn: Any, *, line: int | None) -> str | None:
        return turn.get("actual_answer")

    def evaluate_turn(self, turn: TurnInput) -> dict[str, Any]:
        words = set((turn.output or "").lower().split())
        found = [word for word in turn.target if word.lower() in words]
        return {"found": found, "missed": [w for w in turn.target if w not in found],
                "recall": len(found) / len(turn.target) if turn.target else 1.0}

    def _scores(self, result: CaseResult) -> list[dict[str, Any]]:
        return [score for turn in result.turns if (score := turn.scores.get(self.name))]

    def attempt_metrics(self, result: CaseResult) -> dict[str, float | None]:
        return {"keyword_recall": kinds.mean_over_turns(s["recall"] for s in self._scores(result))}

    def explain(self, result: CaseResult) -> str | None:
        missed = [word for score in self._scores(result) for word in score["missed"]]
        return f"missed keywords {', '.join(missed)}" if missed else None

    def overview_columns(self, results: Sequence[CaseResult], *, templates_dir: str | None) -> list[Column]:
        return [*super().overview_columns(results, templates_dir=templates_dir),
                Column("missed keywords", self.explain, 30, wrap=True)]

    def details_rows(self, result: CaseResult) -> Iterator[DetailRow]:
        for number, score in enumerate(self._scores(result), start=1):
            for word in score["found"]:
                yield (number, "keywords", "found", word, None, None)
            for word in score["missed"]:
                yield (number, "keywords", "missed", word, None, None)

    def statistics_tables(self, results: Sequence[CaseResult]) -> list[Table]:
        values = [v for r in results if (v := self.case_metrics(r)["keyword_recall"]) is not None]
        return [Table("Keyword recall", ("cases", "mean keyword recall"),
                      ((len(values), sum(values) / len(values) if values else None),), (None, "score"))]

    def results_section(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        values = [v for r in results if (v := self.case_metrics(r)["keyword_recall"]) is not None]
        return {"cases": len(values), "mean_keyword_recall": sum(values) / len(values) if values else None}


@pytest.fixture
def keywords_kind():
    kind = kinds.register(ExpectedKeywords())
    yield kind
    kinds.unregister(kind.name)


CASES = """
- id: capital
  name: capital of norway
  tags: [geo]
  conversation:
  - role: user
    content: What is the capital of Norway?
    target:
      expected_keywords: [Oslo, capital]
- id: river
  name: longest river
  tags: [geo]
  conversation:
  - role: user
    content: Which river is the longest?
    target:
      expected_keywords: [Nile]
"""


def _write(folder, answers: dict[str, str]) -> None:
    (folder / "cases.yaml").write_text(CASES, encoding="utf-8")
    (folder / "responses.json").write_text(json.dumps(
        [{"id": case_id, "actual_answer": answer} for case_id, answer in answers.items()]), encoding="utf-8")


def _run(folder, name: str, *extra: str) -> int:
    return main(["run", str(folder / "cases.yaml"), "--responses", str(folder / "responses.json"),
                 "--output", str(folder / f"{name}.xlsx"), "--results", str(folder / f"{name}.json"),
                 "--no-llm", "--quiet", *extra])


def _sheet(path, name: str) -> list[tuple[Any, ...]]:
    """A sheet's values as a reader sees them (a link that finds its case by id shows its text)."""
    return [row for row in load_workbook(path, data_only=True)[name].iter_rows(values_only=True)]


def test_a_kind_registered_outside_the_package_reaches_every_output(keywords_kind, tmp_path):
    last_week, this_week = tmp_path / "last", tmp_path / "this"
    last_week.mkdir(), this_week.mkdir()
    _write(last_week, {"capital": "Oslo is the capital", "river": "The Nile"})
    _write(this_week, {"capital": "It is Oslo", "river": "The Nile"})
    assert _run(last_week, "report") == 0
    assert _run(this_week, "report", "--baseline", str(last_week / "report.xlsx")) == 0
    workbook = this_week / "report.xlsx"

    header, *rows = _sheet(workbook, "Overview")
    overview = {row[0]: dict(zip(header, row)) for row in rows}
    assert overview["capital"]["keyword recall"] == 0.5
    assert overview["capital"]["missed keywords"] == "missed keywords capital"
    assert overview["river"]["keyword recall"] == 1.0

    details = _sheet(workbook, "Details")
    assert ("capital", "geo", 1, "keywords", "missed", "capital", None, None, None, None) in details  # no score, no reason
    assert ("river", "geo", 1, "keywords", "found", "Nile", None, None, None, None) in details

    statistics = _sheet(workbook, "Statistics")
    title = next(i for i, row in enumerate(statistics) if row[0] == "Keyword recall")
    assert statistics[title + 1][:2] == ("cases", "mean keyword recall")
    assert statistics[title + 2][:2] == (2, 0.75)

    document = json.loads((this_week / "report.json").read_text())
    assert {c["case_id"]: c["keyword_recall"] for c in document["cases"]} == {"capital": 0.5, "river": 1.0}
    assert document["kinds"] == {"expected_keywords": {"cases": 2, "mean_keyword_recall": 0.75}}  # its own section

    changes = _sheet(workbook, "Changes")
    assert any(row[:4] == ("capital", "capital of norway", "regression", "keyword recall") for row in changes), changes
    summary = [cell for row in _sheet(workbook, "Summary") for cell in row if cell is not None]
    assert "keyword recall" in summary


def test_a_kind_reports_a_malformed_target_with_its_file_and_line(keywords_kind, tmp_path):
    _write(tmp_path, {"capital": "Oslo", "river": "Nile"})
    text = (tmp_path / "cases.yaml").read_text().replace("expected_keywords: [Nile]", "expected_keywords: Nile")
    (tmp_path / "cases.yaml").write_text(text)
    assert _run(tmp_path, "report") == 0
    problems = _sheet(tmp_path / "report.xlsx", "Problems")
    assert any("'expected_keywords' must be a list of words" in str(row) and row[1] == 17 for row in problems), problems


def test_two_kinds_cannot_share_a_name_or_a_metric(keywords_kind):
    with pytest.raises(ValueError, match="registered already"):
        kinds.register(ExpectedKeywords())

    class Clash(Kind):
        name = "clash"
        metrics = (Metric("steps_score", "steps score"),)

    with pytest.raises(ValueError, match="belong to another kind"):
        kinds.register(Clash())


def test_a_runs_kinds_are_the_catalogues_and_its_own_and_leave_the_catalogue_as_it_was():
    before = kinds.catalogue()
    run = kinds.for_run(ExpectedKeywords())
    assert run.kinds == (*before.kinds, run.kinds[-1]) and run.kinds[-1].name == "expected_keywords"
    assert "keyword_recall" in run.headline_metric_keys() and run.metric_label("keyword_recall") == "keyword recall"
    assert kinds.catalogue() == before and kinds.catalogue().named("expected_keywords") is None
    assert "keyword_recall" not in kinds.catalogue().case_metric_keys()

    class Clash(Kind):
        name = "clash"
        metrics = (Metric("answer_f1", "answer F1"),)

    with pytest.raises(ValueError, match="belong to another kind"):  # a run's own kinds keep registration's checks
        kinds.for_run(Clash())
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.kinds = ()  # type: ignore[misc]


def test_the_built_in_kinds_give_the_stored_metrics_in_their_historic_order():
    assert kinds.catalogue().case_metric_keys() == ("macro_precision", "macro_recall", "dataset_precision", "dataset_recall",
                                        "steps_score", "answer_recall", "answer_precision", "answer_f1",
                                        "answer_relevance")
    assert kinds.catalogue().headline_metric_keys() == ("macro_precision", "macro_recall", "steps_score", "answer_f1",
                                            "answer_relevance")


def _mixed_suite(folder, answers: dict[str, str]):
    """The bundled suite (indicator selection, steps) with the toy kind's two cases beside it."""
    import shutil

    from conftest import TESTCASES

    shutil.copytree(TESTCASES / "imf", folder / "cases" / "imf")
    shutil.copytree(TESTCASES / "power-system", folder / "cases" / "power-system")
    shutil.copytree(TESTCASES / "responses", folder / "responses")
    (folder / "cases" / "keywords.yaml").write_text(CASES, encoding="utf-8")
    (folder / "responses" / "keywords.json").write_text(json.dumps(
        [{"id": case_id, "actual_answer": answer} for case_id, answer in answers.items()]), encoding="utf-8")
    return ["run", str(folder / "cases"), "--responses", str(folder / "responses"), "--no-llm"]


def test_a_registered_kinds_regression_leads_the_console_line_the_email_subject_and_its_verdict(
        keywords_kind, tmp_path, capsys):
    import email
    import email.policy

    last_week, this_week = tmp_path / "last", tmp_path / "this"
    last_run = _mixed_suite(last_week, {"capital": "Oslo is the capital", "river": "The Nile"})
    this_run = _mixed_suite(this_week, {"capital": "It is Oslo", "river": "The Nile"})
    assert main([*last_run, "--output", str(last_week / "report.xlsx"), "--quiet"]) == 0
    capsys.readouterr()
    report = this_week / "report.xlsx"
    assert main([*this_run, "--output", str(report), "--baseline", str(last_week / "report.xlsx")]) == 0
    printed = capsys.readouterr().out.splitlines()

    # keyword recall fell from 1.00 to 0.75; the built-in metrics held: the moved one comes first everywhere
    summary = next(line for line in printed if line.startswith(f"{report}: "))
    assert summary.split("; ")[1] == "mean keyword recall 0.75", summary
    assert "; mean macro precision 0.84; mean macro recall 0.84; mean steps score 0.73" in summary
    since = next(line for line in printed if line.startswith("since the baseline"))
    assert since.startswith("since the baseline: 1 regressed, 0 improved; keyword recall 0.75 (-0.25), "), since

    eml = tmp_path / "report.eml"
    assert main(["email", str(report), "--to", "team@example.com", "--from", "qa@example.com",
                 "--eml", str(eml)]) == 0
    message = email.message_from_bytes(eml.read_bytes(), policy=email.policy.default)
    assert message["Subject"].startswith("1 regression, keyword recall 0.75 (\u22120.25), "), message["Subject"]
    body = message.get_body(("plain",)).get_content()
    assert "1 regression, keyword recall 0.75 (\u22120.25), macro precision 0.84" in body, body


def test_the_writers_only_lay_out_the_case_values_the_report_model_computed_once(keywords_kind, tmp_path):
    from qareport.evaluation import evaluate_suite
    from qareport.loading import load_suite
    from qareport.records import RunInfo
    from qareport.report import build_report
    from qareport.workbook import write_workbook

    _write(tmp_path, {"capital": "It is Oslo", "river": "The Nile"})
    calls: list[str] = []
    explain, details_rows = keywords_kind.explain, keywords_kind.details_rows
    keywords_kind.explain = lambda result: calls.append("explain") or explain(result)
    keywords_kind.details_rows = lambda result: calls.append("details") or details_rows(result)
    try:
        suite = load_suite([str(tmp_path / "cases.yaml")], [str(tmp_path / "responses.json")])
        report = build_report(evaluate_suite(suite).results, (), RunInfo(created="2024-05-08T10:00:00+00:00",
                                                                         qareport_version="0.1.0"))
        assert calls.count("details") == 2  # once per case
        calls.clear()
        write_workbook(report, tmp_path / "report.xlsx")
    finally:
        del keywords_kind.explain, keywords_kind.details_rows
    assert calls == []  # neither the missed-keywords column nor the Details rows were asked for again
    header, *rows = _sheet(tmp_path / "report.xlsx", "Overview")
    assert [dict(zip(header, row))["missed keywords"] for row in rows] == ["missed keywords capital", None]
    assert ("capital", "geo", 1, "keywords", "missed", "capital", None, None, None, None) in _sheet(
        tmp_path / "report.xlsx", "Details")


def test_a_metric_has_one_label_wherever_it_is_shown():
    from qareport.workbook import statistics_sheet

    assert kinds.catalogue().metric_label("retrieval_context_recall") == "context recall (text similarity)"
    assert kinds.catalogue().metric_label("retrieval_answer_f1") == "retrieval answer F1"
    assert kinds.catalogue().metric_label("elapsed_sec") == "elapsed seconds"
    assert kinds.catalogue().metric_label("answer_f1") == "answer F1"
    assert not hasattr(statistics_sheet, "LABELS")  # the Statistics sheet asks `kinds` like every other sheet
    assert [kinds.metric_format(key) for key in ("answer_relevance_cost", "input_tokens", "elapsed_sec",
                                                 "steps_score")] == ["cost", "integer", "seconds", "score"]
def test_a_kind_of_ones_own_gets_its_metric_averaged_over_attempts_without_knowing_of_them(keywords_kind, tmp_path):
    (tmp_path / "cases.yaml").write_text(CASES, encoding="utf-8")
    records = [{"id": "capital", "attempt": 1, "actual_answer": "Oslo is the capital"},  # recall 1
               {"id": "capital", "attempt": 2, "actual_answer": "Oslo"},  # recall 0.5
               {"id": "river", "actual_answer": "The Nile"}]
    (tmp_path / "responses.json").write_text(json.dumps(records), encoding="utf-8")
    assert _run(tmp_path, "report") == 0
    rows = _sheet(tmp_path / "report.xlsx", "Overview")
    overview = {row[0]: dict(zip(rows[0], row)) for row in rows[1:]}
    assert overview["capital"]["keyword recall"] == 0.75
    assert overview["river"]["keyword recall"] == 1
    assert overview["capital"]["attempts passed"] is None  # the kind has no pass rule
