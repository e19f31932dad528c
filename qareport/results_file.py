"""The results file (`--results`, JSON or YAML): graphrag-eval's per-question results and
aggregates, the kinds' sections and the run's case rows (`runs.py`), written and read back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from qareport import kinds
from qareport.errors import QAReportError
from qareport.files import write_atomically
from qareport.records import CaseResult
from qareport.runs import RESULTS_SUFFIXES
from qareport.yaml_input import YamlProblem, yaml_documents

if TYPE_CHECKING:
    from qareport.report import Report


def kind_sections(results: Sequence[CaseResult], run: kinds.RunKinds) -> dict[str, Any]:
    """The results file's `kinds` entry: each of the run's kinds' suite-level section
    (`Kind.results_section`); no entry when none has one."""
    sections = {kind.name: dict(section) for kind in run
                if (section := kind.results_section(results)) is not None}
    return {"kinds": sections} if sections else {}


def stored_case_rows(rows: Iterable[Mapping[str, Any]], run: kinds.RunKinds,
                     kind_set: kinds.RunKinds) -> list[dict[str, Any]]:
    """Case rows as a stored run keeps them: without the metrics of the kinds of `kind_set` the run
    does not have (`run`: `Report.kinds`), so that registering a kind changes no stored run that
    does not use it."""
    absent = {m.key for kind in kind_set if kind not in run.kinds for m in kind.metrics}
    return [{key: value for key, value in row.items() if key not in absent} for row in rows]


def results_document(report: Report) -> dict[str, Any]:
    """The results file's content: graphrag-eval's results and aggregates, and the case rows."""
    statistics = report.statistics
    return {
        "qareport": {"version": report.run.qareport_version, "created": report.run.created,
                     **_semantics_entry(report.run.steps_semantics)},
        "results": question_records(statistics.question_results, report.run.steps_semantics),
        "aggregates": statistics.qa_aggregates or {},
        "data_query_metrics": {
            "all": asdict(statistics.data_query) if statistics.data_query else None,
            "per_group": [asdict(g) for g in statistics.per_group],
            "per_dimension": [asdict(d) for d in statistics.per_dimension],
        },
        "cases": stored_case_rows(report.rows, report.kinds, report.kind_set),
        **kind_sections(report.results, report.kinds),
        **_judge_entry(report),
    }


def question_records(results: Sequence[Mapping[str, Any]], semantics: Any) -> list[dict[str, Any]]:
    """The per-question records of the results file: graphrag-eval's result dicts as the library
    returns them (`qareport.run_evaluation`, or under 6.x rules `qareport.graphrag_eval_6`'s, with
    6.6's key order and `actual_steps` always there). Structured values stay data."""
    if str(semantics) == "6":
        from qareport.graphrag_eval_6 import ordered_as_6

        return [ordered_as_6(result) for result in results]
    return [dict(result) for result in results]


def _judge_entry(report: Report) -> dict[str, Any]:
    """How far the judge got: the same per-metric counts the Summary and Statistics show, its
    usage, and what was not evaluated and why (the judge's failure among them)."""
    entry: dict[str, Any] = {}
    if report.run.judge_usage is not None:
        usage = {key: value for key, value in report.run.judge_usage.to_dict().items()
                 if key != "elapsed_sec"}  # reproducible
        entry["judge"] = {"metrics": [metric.to_dict() for metric in report.judged], "usage": usage}
        if report.agreement is not None:
            entry["judge"]["agreement"] = report.agreement.to_dict()
        if report.judge_noise:
            entry["judge"]["noise"] = [noise.to_dict() for noise in report.judge_noise]
    if report.run.not_evaluated:
        entry["not_evaluated"] = dict(report.run.not_evaluated)
    return entry


def _semantics_entry(semantics: int | None) -> dict[str, Any]:
    """Which graphrag-eval's steps rules scored the run, when the run says."""
    return {} if semantics is None else {"steps_semantics": semantics}


def stated_semantics(value: Any) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def check_results_path(path: str | Path) -> Path:
    target = Path(path)
    if target.suffix.lower() not in RESULTS_SUFFIXES:
        raise QAReportError(f"{target}: the results file must end in .yaml, .yml or .json")
    return target


class _PlainDumper(yaml.SafeDumper):
    """YAML without anchors and aliases: a value met twice is written twice, so the file reads back
    under the alias guards of `yaml_input` whatever its size."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def write_results_file(document: dict[str, Any], path: str | Path) -> None:
    target = check_results_path(path)
    if target.suffix.lower() == ".json":
        text = json.dumps(document, indent=2, ensure_ascii=False, default=str)
    else:
        text = yaml.dump(document, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=100)
    write_atomically(target, text.encode("utf-8"), what="the results")


def read_results_file(path: str | Path) -> dict[str, Any]:
    """A results file written by qareport (used as a baseline): a mapping with qareport's own header
    (`qareport:` with its version) and a `cases` list. YAML is read with the guards of test-case
    files (aliases that would expand without bound, nesting, NUL bytes are refused, never built)."""
    target = Path(path)
    try:
        text = target.read_text(encoding="utf-8")
        if target.suffix.lower() == ".json":
            document = json.loads(text)
        else:
            documents = []
            for part in yaml_documents(text):
                if isinstance(part, YamlProblem):
                    where = f"{target}:{part.line}" if part.line else str(target)
                    raise QAReportError(f"{where}: cannot read the results file: {part.message}")
                documents.append(part)
            document = documents[0] if len(documents) == 1 else documents
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise QAReportError(f"{target}: cannot read the results file: {error}") from error
    if not isinstance(document, dict) or "cases" not in document:
        raise QAReportError(f"{target}: not a qareport results file (no 'cases' list)")
    header = document.get("qareport")
    if not isinstance(header, dict) or not header.get("version"):
        raise QAReportError(f"{target}: not a qareport results file (no 'qareport:' header with its version, "
                            "which 'qareport run --results' writes first); "
                            "give a results file or workbook qareport wrote")
    return document
