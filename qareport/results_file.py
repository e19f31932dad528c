"""The results file (`--results`, JSON or YAML): graphrag-eval's per-question results and
aggregates, the kinds' sections and the run's case rows (`runs.py`), written and read back.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from qareport import kinds
from qareport.case_record import CaseRow
from qareport.errors import QAReportError
from qareport.evaluation_options import DEFAULT_ACCEPTABLE_EXTRAS
from qareport.files import write_atomically
from qareport.runs import RESULTS_SUFFIXES, json_text, stored_case_values
from qareport.yaml_guards import YamlProblem
from qareport.yaml_input import yaml_documents

if TYPE_CHECKING:
    from qareport.records import OptionsUsed
    from qareport.report import Report
    from qareport.statistics import SuiteStatistics


HISTORIC_ENTRIES: dict[str, Any] = {
    "results": [],
    "aggregates": {},
    "data_query_metrics": {"all": None, "per_group": [], "per_dimension": []},
}
"""The results file's top-level entries that graphrag-eval's users read (its per-question `results`
and `aggregates`) and `data_query_metrics`, in their order, with the value each has when the run has
nothing of the kind that fills it (`SuiteFigures.results_entries`)."""


def kind_entries(statistics: SuiteStatistics) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the kinds' suite figures put in the results file, in one place: the historic top-level
    entries (`HISTORIC_ENTRIES`, each always there), and the `kinds` entry: each kind's own section
    (`Kind.results_section`) under its name."""
    entries = {key: copy.deepcopy(value) for key, value in HISTORIC_ENTRIES.items()}
    sections: dict[str, Any] = {}
    for figures in statistics.figures:
        entries.update(figures.results_entries())
        section = figures.results_section()
        if section is not None:
            sections[figures.name] = dict(section)
    return entries, sections


def stored_case_rows(rows: Iterable[CaseRow], run: kinds.RunKinds, kind_set: kinds.RunKinds) -> list[dict[str, Any]]:
    """Case rows as a stored run keeps them (`stored_case_values`): without the metrics of the kinds
    of `kind_set` the run does not have (`run`: `Report.kinds`), so that registering a kind changes no
    stored run that does not use it."""
    absent = {m.key for kind in kind_set if kind not in run.kinds for m in kind.metrics}
    return [{key: value for key, value in stored_case_values(row).items() if key not in absent} for row in rows]


def results_document(report: Report) -> dict[str, Any]:
    """The results file's content: graphrag-eval's results and aggregates, the kinds' figures and
    the case rows."""
    entries, sections = kind_entries(report.statistics)
    return {
        "qareport": {"version": report.run.qareport_version, "created": report.run.created,
                     **_semantics_entry(report.run.steps_semantics),
                     **_extras_entry(report.run.options),
                     **({"judge": report.run.judge_identity.to_dict()} if report.run.judge_identity else {})},
        **entries,
        "cases": stored_case_rows(report.rows, report.kinds, report.kind_set),
        **_carried_entry(report),
        **({"kinds": sections} if sections else {}),  # none when no kind has a section of its own
        **_judge_entry(report),
    }


def _carried_entry(report: Report) -> dict[str, Any]:
    """The cases the run could not load, each with its row when last seen (`Report.carried`), for
    the next run's comparison; no entry when every case was loaded."""
    if not report.carried:
        return {}
    # through JSON, as the workbook stores it: a row read from a YAML baseline holds YAML's own
    # mapping and list types, which the plain dumper does not write
    return {"carried": [{"last_seen": item.last_seen, "not_loaded": item.not_loaded,
                         "row": json.loads(json_text(stored_case_values(item.row)))} for item in report.carried]}


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
        if report.audit is not None:
            entry["judge"]["audit"] = report.audit.to_dict()
    if report.run.not_evaluated:
        entry["not_evaluated"] = dict(report.run.not_evaluated)
    return entry


def _semantics_entry(semantics: int | None) -> dict[str, Any]:
    """Which graphrag-eval's steps rules scored the run, when the run says."""
    return {} if semantics is None else {"steps_semantics": semantics}


def _extras_entry(options: OptionsUsed | None) -> dict[str, Any]:
    """The extra terms the run's `acceptable` grade allowed, when not the default (a run that does not
    say graded by the default, as every run before the option did)."""
    if options is None or options.acceptable_extras == DEFAULT_ACCEPTABLE_EXTRAS:
        return {}
    return {"acceptable_extras": options.acceptable_extras}


def stated_extras(value: Any) -> int | None:
    """A stored run's `acceptable_extras`, when it says one that can be (a whole number, not negative)."""
    if isinstance(value, bool):
        return None
    number = stated_semantics(value)
    return number if number is not None and number >= 0 else None


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
