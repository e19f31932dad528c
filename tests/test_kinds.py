"""A kind of target is one module: a kind defined here, in the tests, reaches every output.

The toy kind `expected_keywords` expects words in the answer; it is registered by a fixture and
nothing else in qareport is changed, yet its metric appears in Overview, Details, Statistics, the
results file and the comparison with a baseline.
"""

from __future__ import annotations

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
        return [score for index in range(len(result.turns)) if (score := self.score_of(result, index))]

    def case_metrics(self, result: CaseResult) -> dict[str, float | None]:
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


def test_the_built_in_kinds_give_the_stored_metrics_in_their_historic_order():
    assert kinds.case_metric_keys() == ("macro_precision", "macro_recall", "dataset_precision", "dataset_recall",
                                        "steps_score", "answer_recall", "answer_precision", "answer_f1",
                                        "answer_relevance")
    assert kinds.headline_metric_keys() == ("macro_precision", "macro_recall", "steps_score", "answer_f1",
                                            "answer_relevance")
