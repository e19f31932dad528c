"""Stored runs: the one format a run is kept in, written and read back in this module only.

A run is kept as one flat row per case (`case_rows`: who the case is, every registered kind's metrics,
token usage), a few key-value facts about the run (`run_metadata`), and, when it was compared with a
baseline, its changes. Two containers hold that format, and either can be a later run's baseline or a
point of its trend:

    the workbook's hidden sheets
        qareport_results   one row per case: `case_fields()` (groups as a JSON list; `judged`, the case's
                           judged metrics and values, as JSON)
        qareport_run       key | value: format, created, version, headline metrics, baseline, inputs ...
        qareport_changes   one row per change against the baseline (CHANGE_FIELDS), when there was one
        qareport_reviews   case_id | field | part | text: each review the run carries, whole (a note
                           in parts that each fit a cell), and those of baseline cases absent from
                           the run with the case's row when last seen ("last seen", JSON)
    the results file (`--results`, JSON or YAML)
        qareport (version, date), results (graphrag-eval's per-question list), aggregates
        (graphrag-eval's per_template / micro / macro), data_query_metrics, cases (the case rows)

The workbook writer lays out `stored_run_tables`; reading a workbook back uses openpyxl. Reading
never trusts the file: a value of another type than the format holds (an analyst's edit) is
converted when that is unambiguous and otherwise left out, with a problem naming sheet and cell.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from dataclasses import field as dataclass_field  # "field" names a case row's field here
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from qareport import kinds
from qareport.comparison import (
    CHANGE_KINDS,
    STATUSES,
    CaseChange,
    Comparison,
    Headline,
    HeadlineDelta,
    group_movements,
    headline_metrics,
    status_counts,
)
from qareport.digest import Digest, digest_from_json, digest_to_json
from qareport.errors import BaselineError, QAReportError
from qareport.files import write_atomically
from qareport.id_text import normalise_id
from qareport.judge.usage import JudgeUsage
from qareport.judge_agreement import case_judgments, stored_judgments
from qareport.records import USAGE_FIELDS, CaseResult, Location, OptionsUsed, Problem, Review, RunSnapshot
from qareport.side_by_side import case_outputs
from qareport.yaml_input import YamlProblem, yaml_documents

if TYPE_CHECKING:
    from qareport.report import Report

RESULTS_SHEET = "qareport_results"
RUN_SHEET = "qareport_run"
CHANGES_SHEET = "qareport_changes"
DATA_SHEETS = (RESULTS_SHEET, RUN_SHEET, CHANGES_SHEET)
RUN_FORMAT = "qareport-run/1"
CHANGE_FIELDS = ("kind", "case_id", "name", "metric", "old", "new", "delta", "old_status", "new_status", "reason")
CASE_HEAD_FIELDS = ("case_id", "kind", "name", "groups", "cluster", "status", "error", "definition_hash", "file",
                    "reason", "targets", "facts", "outputs", "dimensions")
LIST_FIELDS = ("groups", "targets")
JSON_FIELDS = ("facts", "outputs", "dimensions", "judged")
"""Mappings, kept as JSON text in a cell; outputs: `side_by_side.case_outputs`; dimensions: each target
dimension's precision and recall (`dimension_scores`); judged: the case's judged metrics and their
values (`judge_agreement.case_judgments`), so the judge can be checked against the reviews of earlier
runs."""
ATTEMPTS_FIELD = "attempts"
"""A case answered several times: each metric's values over its attempts, in attempt order (JSON;
`attempt_values`), so a later run can compare attempts with attempts. The column (and the key of a
results file's case row) is there only when a case of the run has attempts."""
WORKBOOK_SUFFIXES = (".xlsx",)
RESULTS_SUFFIXES = (".yaml", ".yml", ".json")
RUN_SUFFIXES = (*WORKBOOK_SUFFIXES, *RESULTS_SUFFIXES)


@dataclass(frozen=True, slots=True)
class ReportRecord:
    """Everything a workbook says about its run, read back from its hidden sheets."""

    snapshot: RunSnapshot
    metadata: dict[str, Any]  # the qareport_run sheet, key -> value
    comparison: Comparison | None  # against the baseline the report was made with, if any
    headline: tuple[Headline, ...] = ()  # as the report stated them
    status_counts: dict[str, int] = dataclass_field(default_factory=dict)
    digest: Digest | None = None  # None in workbooks written before qareport kept one


@dataclass(frozen=True, slots=True)
class History:
    runs: tuple[RunSnapshot, ...]
    skipped: tuple[str, ...]  # "path: why", for files in a folder that are not qareport runs


@dataclass(frozen=True, slots=True)
class StoredTable:
    """One hidden sheet of the workbook: its name, header and rows of plain values."""

    sheet: str
    header: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


# --- case rows ----------------------------------------------------------------------------------------


def case_fields(run: Sequence[kinds.Kind] | None = None) -> tuple[str, ...]:
    """The columns of a case row: who the case is, the metrics of the run's kinds (`run`; None: of
    every registered kind, as a stored run is read back), usage, and the case's judgments (last: a
    workbook written before qareport kept them just lacks the column)."""
    metric_keys = kinds.case_metric_keys() if run is None else tuple(m.key for kind in run for m in kind.metrics)
    return (*CASE_HEAD_FIELDS, *metric_keys, *USAGE_FIELDS, "judged")


def kind_sections(results: Sequence[CaseResult]) -> dict[str, Any]:
    """The results file's `kinds` entry: each of the run's kinds' suite-level section
    (`Kind.results_section`); no entry when none has one."""
    sections = {kind.name: dict(section) for kind in kinds.run_kinds(results)
                if (section := kind.results_section(results)) is not None}
    return {"kinds": sections} if sections else {}


def stored_case_rows(rows: Iterable[Mapping[str, Any]], run: Sequence[kinds.Kind]) -> list[dict[str, Any]]:
    """Case rows as a stored run keeps them: without the metrics of registered kinds the run does
    not have (`kinds.run_kinds`), so that registering a kind changes no stored run that does not use it."""
    absent = {m.key for kind in kinds.REGISTRY if kind not in run for m in kind.metrics}
    return [{key: value for key, value in row.items() if key not in absent} for row in rows]


def case_row(result: CaseResult) -> dict[str, Any]:
    """The headline figures of one case, flat, JSON-ready."""
    response = result.response
    row: dict[str, Any] = {
        "case_id": result.case.id,
        "kind": result.case.kind,
        "name": result.case.name,
        "groups": list(result.case.groups),
        "cluster": result.case.cluster,  # None: a cluster of its own (`clusters`)
        "status": result.status,
        "error": result.error,
        "definition_hash": result.case.definition_hash,
        "file": result.case.location.path,
        "reason": kinds.case_reason(result),
        "targets": [kind.name for kind in kinds.REGISTRY if kind.has_target(result.case)],
        "facts": kinds.case_facts(result),
        "outputs": case_outputs(result),  # what the system produced, for the next run's Compare sheet
        "judged": case_judgments(result),
        "dimensions": dimension_scores(result),  # for the next run's changes per dimension
        **kinds.case_metrics(result),
    }
    for key in USAGE_FIELDS:
        row[key] = getattr(response, key) if response is not None else None
    if result.attempts:
        row[ATTEMPTS_FIELD] = attempt_values(result)
    return row


def attempt_values(result: CaseResult) -> dict[str, list[float | None]]:
    """Each metric's value in each attempt of a case (None where an attempt has none), for the
    metrics any attempt has."""
    each = [kinds.case_metrics(attempt) for attempt in result.attempts]
    return {key: [values.get(key) for values in each] for key in kinds.case_metric_keys()
            if any(values.get(key) is not None for values in each)}


def _stored_attempts(raw: Any) -> dict[str, list[float]]:
    """A stored case's attempt values, whatever an edit left: per metric, the numbers in [0, 1]."""
    if not isinstance(raw, dict):
        return {}
    kept = {str(metric): [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
                          and 0 <= v <= 1]
            for metric, values in raw.items() if isinstance(values, list)}
    return {metric: values for metric, values in kept.items() if values}


def dimension_scores(result: CaseResult) -> dict[str, dict[str, float]]:
    """Each target dimension's precision and recall in one case: the means over the case's turns
    whose target has it (as the Statistics sheet's per-dimension means take them)."""
    per_turn: dict[str, list[tuple[float, float]]] = {}
    for turn in result.turns:
        for dimension in turn.indicator.dimensions if turn.indicator is not None else ():
            per_turn.setdefault(dimension.dimension_name, []).append((dimension.precision, dimension.recall))
    return {name: {"precision": sum(p for p, _ in pairs) / len(pairs), "recall": sum(r for _, r in pairs) / len(pairs)}
            for name, pairs in per_turn.items()}


def case_rows(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    return [case_row(result) for result in results]


def encode_case_value(field: str, value: Any) -> Any:
    """A case-row value as a cell holds it (lists as JSON text)."""
    if field in LIST_FIELDS:
        return json.dumps(list(value or []), ensure_ascii=False)
    if field in (*JSON_FIELDS, ATTEMPTS_FIELD):
        return json.dumps(value or {}, ensure_ascii=False, sort_keys=True)
    return value


def _from_json(value: Any, *, fallback: Callable[[str], Any]) -> Any:
    """A value stored as JSON text in a cell; `fallback(text)` when the text is not JSON."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return fallback(value)


def decode_case_row(values: Mapping[str, Any]) -> dict[str, Any]:
    """A case row from cells (or from a results file), with every `case_fields()` key present."""
    row = {field: values.get(field) for field in case_fields()}
    for field in LIST_FIELDS:
        raw = _from_json(row.get(field),
                         fallback=lambda text: [part.strip() for part in text.split(",") if part.strip()])
        row[field] = [str(item) for item in raw if not isinstance(item, (list, dict))] if isinstance(raw, list) else []
    if values.get("targets") is None:
        row["targets"] = None  # stored before runs kept their targets: `comparison` falls back
    row["facts"] = _facts(_from_json(row.get("facts"), fallback=lambda text: {}))
    outputs = _from_json(row.get("outputs"), fallback=lambda text: {})
    row["outputs"] = outputs if isinstance(outputs, dict) else {}  # `side_by_side` reads it item by item
    row["judged"] = stored_judgments(_from_json(row.get("judged"), fallback=lambda text: {}))
    row["dimensions"] = _dimensions(_from_json(row.get("dimensions"), fallback=lambda text: {}))
    attempts = _stored_attempts(_from_json(values.get(ATTEMPTS_FIELD), fallback=lambda text: {}))
    if attempts:
        row[ATTEMPTS_FIELD] = attempts
    row["case_id"] = stored_case_id(row["case_id"]) or ""
    for field in ("error", "reason"):
        if row[field] == "":
            row[field] = None
    row["definition_hash"] = row.get("definition_hash") or ""
    return row


def _dimensions(raw: Any) -> dict[str, dict[str, float]]:
    """Each dimension's precision and recall, whatever an edit left: a value that is not a number
    in [0, 1] is left out."""
    if not isinstance(raw, dict):
        return {}
    kept: dict[str, dict[str, float]] = {}
    for name, scores in raw.items():
        if isinstance(scores, dict):
            kept[str(name)] = {which: float(value) for which, value in scores.items()
                               if which in ("precision", "recall") and isinstance(value, (int, float))
                               and not isinstance(value, bool) and 0 <= value <= 1}
    return kept


def _facts(raw: Any) -> dict[str, dict[str, list[str]]]:
    """Each kind's facts (named lists of short items, `kinds.case_facts`), whatever an edit left."""
    if not isinstance(raw, dict):
        return {}
    return {str(kind): {str(name): [str(item) for item in items if not isinstance(item, (list, dict))]
                        for name, items in facts.items() if isinstance(items, list)}
            for kind, facts in raw.items() if isinstance(facts, dict)}


# --- reading what someone may have edited ---------------------------------------------------------
#
# A stored run is data an analyst can reach: a count typed as text, a number replaced by a word, a
# column retyped. Every value read back is checked against what the format holds there; one that is
# not of that type is converted when that is unambiguous ("14" for a count, " 0.5" for a score) and
# otherwise left out, with a problem naming the sheet and cell. Reading never fails on a value.

OnProblem = Callable[[Problem], None]
Expected = str  # "number", "count" or "text"


def _no_problem(problem: Problem) -> None:
    """The default `on_problem`: a caller that does not ask is not told."""


class _Bad:
    """A value that could not be converted (distinct from None, an empty cell)."""


BAD = _Bad()


def convert_value(value: Any, expected: Expected) -> Any:
    """`value` as the type a stored run holds (None stays None); BAD when no conversion is
    unambiguous. Text that reads as one finite number is that number; a count is a whole number
    of at least 0; anything written as a number or a date is text where text is expected."""
    if value is None:
        return None
    if expected == "text":
        if isinstance(value, str):
            return value
        if hasattr(value, "isoformat"):
            return value.isoformat()
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)
    if isinstance(value, bool):
        return BAD
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            value = float(text) if expected == "number" or not text.lstrip("+").isdigit() else int(text)
        except ValueError:
            return BAD
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return BAD
    if expected == "count":
        if value < 0 or not float(value).is_integer():
            return BAD
        return int(value)
    return value


def _shown(value: Any) -> str:
    kind = {str: "text", bool: "a true/false value"}.get(type(value), type(value).__name__)
    text = repr(value) if isinstance(value, str) else str(value)
    return f"{kind} {text[:60] + '…' if len(text) > 60 else text}"


_EXPECTED_WORDS = {"number": "a number", "count": "a whole number", "text": "text"}


def _dropped(target: Path, where: str, what: str, expected: Expected, value: Any) -> Problem:
    return Problem(Location(str(target)),
                   f"{where}: {what} must be {_EXPECTED_WORDS[expected]} (got {_shown(value)}); left out, the "
                   "rest of the stored run is still read (restore the value qareport wrote, or clear the cell)")


def _letter(column: int) -> str:
    """A column's letters (1 -> A, 27 -> AA)."""
    letters = ""
    while column:
        column, rest = divmod(column - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def case_value_types() -> dict[str, Expected]:
    """What each case-row field holds; lists and mappings are read by `decode_case_row`."""
    types = {field: "text" for field in CASE_HEAD_FIELDS if field not in (*LIST_FIELDS, *JSON_FIELDS)}
    types.update({key: "number" for key in (*kinds.case_metric_keys(), *USAGE_FIELDS)})
    return types


def clean_case_values(values: Mapping[str, Any], *, where: Callable[[str], str], target: Path,
                      on_problem: OnProblem) -> dict[str, Any] | None:
    """A stored case row with each value of the type its field holds (see `convert_value`); a value
    that cannot be converted is left out with a problem. None (and a problem) for a row without a
    case id, which nothing could be compared with."""
    cleaned = dict(values)
    for field, expected in case_value_types().items():
        if field not in cleaned:
            continue
        value = convert_value(cleaned[field], expected)
        if value is BAD:
            on_problem(_dropped(target, where(field), f"'{field}'", expected, cleaned[field]))
            value = None
        cleaned[field] = value
    status = cleaned.get("status")
    if isinstance(status, str) and status.strip().casefold() in STATUSES:
        cleaned["status"] = status.strip().casefold()
    if cleaned.get("case_id") in (None, ""):
        on_problem(Problem(Location(str(target)), f"{where('case_id')}: a stored case without a case id; left out "
                                                  "(restore its id, or delete the row)"))
        return None
    return cleaned


_METADATA_COUNTS = re.compile(r"(cases|status\..+|metric\..+\.(cases|errors|missing|invalid)"
                              r"|baseline\.metric\..+\.(cases|shared_cases)|judged\..+\.(judged|failed|not_applicable)"
                              r"|judge\.calls|changes\..+|input\.\d+\.(files|records))")
_METADATA_NUMBERS = re.compile(r"(metric\..+\.(mean|low|high)"
                               r"|baseline\.metric\..+\.(mean|shared_old|shared_new|p_value)"
                               r"|judged\..+\.mean|judge\.cost_usd)")
_METADATA_TEXTS = re.compile(r"(format|created|qareport_version|baseline\.(source|created|qareport_version|warning\..+)"
                             r"|alert\..+|digest\.\d+|not_evaluated\..+|judge\.(model|embedding_model)|judged\..+\.label)")


def metadata_value_type(key: str) -> Expected | None:
    """What the qareport_run sheet holds under a key (None: any plain value, such as an option)."""
    if _METADATA_COUNTS.fullmatch(key):
        return "count"
    if _METADATA_NUMBERS.fullmatch(key):
        return "number"
    if _METADATA_TEXTS.fullmatch(key):
        return "text"
    return None


def _read_metadata(rows: Sequence[tuple[Any, ...]], target: Path, on_problem: OnProblem) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for number, row in enumerate(rows[1:], start=2):
        key = convert_value(row[0] if row else None, "text")
        if not key:
            continue
        value = row[1] if len(row) > 1 else None
        expected = metadata_value_type(key)
        if expected is not None:
            converted = convert_value(value, expected)
            if converted is BAD:
                on_problem(_dropped(target, f"sheet '{RUN_SHEET}', cell B{number}", f"'{key}'", expected, value))
                continue
            value = converted
        metadata[key] = value
    return metadata


# --- the workbook's hidden sheets ------------------------------------------------------------------


def run_metadata(report: Report) -> list[tuple[str, Any]]:
    """The qareport_run sheet as key, value pairs (flat, so any tool can read it): the run's facts,
    the alerts a reader must see before any number, how far the judge got, the baseline, and the
    digest (as JSON, in parts that each fit a cell) from which `qareport email` writes its message."""
    run, rows, comparison = report.run, report.rows, report.comparison
    pairs: list[tuple[str, Any]] = [
        ("format", RUN_FORMAT),
        ("created", run.created),
        ("qareport_version", run.qareport_version),
        ("cases", len(rows)),
    ]
    alerts = {"not_loaded": report.not_loaded, "incomplete": report.incomplete}
    pairs += [(f"alert.{name}", text) for name, text in alerts.items() if text]
    pairs += [(f"status.{status}", count) for status, count in status_counts(rows).items()]
    for item in report.headline:
        pairs += [(f"metric.{item.metric}.{what}", getattr(item, what))
                  for what in ("mean", "cases", "errors", "missing", "invalid", "low", "high")]
    usage = run.judge_usage
    pairs += [
        ("judge.model", run.judge_model or (usage.model if usage else None)),
        ("judge.embedding_model", usage.embedding_model if usage else None),
        ("judge.calls", usage.calls if usage else None),
        ("judge.cost_usd", usage.cost_usd if usage else None),
    ]
    for metric in report.judged:
        pairs += [(f"judged.{metric.key}.{field}", getattr(metric, field))
                  for field in ("label", "mean", "judged", "failed", "not_judged", "not_applicable")]
    pairs += [(f"not_evaluated.{family}", why) for family, why in sorted(run.not_evaluated.items())]
    for index, given in enumerate(run.inputs, start=1):
        pairs += [
            (f"input.{index}.role", given.role),
            (f"input.{index}.path", given.path),
            (f"input.{index}.files", given.files),
            (f"input.{index}.records", given.records),
            (f"input.{index}.sha256", given.sha256),
        ]
    pairs += [(f"option.{key}", value if isinstance(value, (int, float, str)) else _text(value))
              for key, value in sorted(stored_options(run.options).items()) if value is not None]
    if comparison is not None:
        pairs += [
            ("baseline.source", comparison.baseline_source),
            ("baseline.created", comparison.baseline_created),
            ("baseline.qareport_version", comparison.baseline_version),
        ]
        pairs += [(f"baseline.warning.{index}", text) for index, text in enumerate(comparison.warnings, start=1)]
        for delta in comparison.headline:
            if delta.old is not None:
                pairs += [(f"baseline.metric.{delta.metric}.mean", delta.old),
                          (f"baseline.metric.{delta.metric}.cases", delta.old_cases)]
            if delta.shared_cases:
                pairs += [(f"baseline.metric.{delta.metric}.{what}", getattr(delta, what))
                          for what in ("shared_old", "shared_new", "shared_cases", "p_value")]
        pairs += [(f"changes.{kind.replace(' ', '_')}", count) for kind, count in comparison.counts().items()]
    text = digest_to_json(report.digest)
    parts = [text[start:start + DIGEST_PART] for start in range(0, len(text), DIGEST_PART)]
    pairs += [(f"digest.{index}", part) for index, part in enumerate(parts, start=1)]
    return pairs


def stored_options(options: OptionsUsed | None) -> dict[str, Any]:
    """The options a run was made with as the stored run names them (`option.<name>`) and the
    Summary shows them: plain values, the judge as its provenance (`JudgeSettings.describe()`, no
    key, no credentials). Empty when they are not known."""
    if options is None:
        return {}
    values: dict[str, Any] = {}
    for item in fields(options):
        value = getattr(options, item.name)
        values[item.name] = value.value if isinstance(value, Enum) else value
    values["judge"] = options.judge.describe() if options.judge is not None else None
    if options.answer_pass_f1 is None:  # said only when given, as runs before attempts had no such option
        del values["answer_pass_f1"]
    return values


DIGEST_PART = 30_000  # characters of the digest's JSON a cell holds (at most 32,767)


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def stored_run_tables(report: Report) -> list[StoredTable]:
    """The hidden sheets of a workbook, in order: cases, the run's facts, its changes, its reviews."""
    fields = case_fields(kinds.run_kinds(report.results))
    if any(ATTEMPTS_FIELD in row for row in report.rows):
        fields = (*fields, ATTEMPTS_FIELD)
    tables = [
        StoredTable(RESULTS_SHEET, fields,
                    tuple(tuple(encode_case_value(field, row.get(field)) for field in fields) for row in report.rows)),
        StoredTable(RUN_SHEET, ("key", "value"), tuple(run_metadata(report))),
    ]
    if report.comparison is not None:
        tables.append(StoredTable(CHANGES_SHEET, CHANGE_FIELDS, tuple(
            tuple(getattr(change, field) for field in CHANGE_FIELDS) for change in report.comparison.changes
        )))
    if report.reviews or report.kept_reviews:
        tables.append(StoredTable(REVIEWS_SHEET, REVIEWS_FIELDS, tuple(stored_review_rows(report))))
    return tables


def stored_review_rows(report: Report) -> list[tuple[str, str, int, str]]:
    """The hidden reviews sheet: every review this run carries, whole (a note longer than a cell is
    cut in the Overview, never here), and those kept for cases absent from this run, with the
    case's row when it was last seen."""
    rows = []
    for reviews in (report.reviews, report.kept_reviews):
        for case_id, review in reviews.items():
            texts = [("review", review.verdict), ("review note", review.note)]
            if reviews is report.kept_reviews:
                texts.append((LAST_SEEN, _text(dict(review.last_seen)) if review.last_seen is not None else None))
            for field, text in texts:
                if text:
                    rows += [(case_id, field, number, part) for number, part in enumerate(review_parts(text), start=1)]
    return rows


# --- the results file -------------------------------------------------------------------------------


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
        "cases": stored_case_rows(report.rows, kinds.run_kinds(report.results)),
        **kind_sections(report.results),
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


def _stated_semantics(value: Any) -> int | None:
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


# --- reading a run back -------------------------------------------------------------------------------


def read_run(path: str | Path, *, on_problem: OnProblem | None = None) -> RunSnapshot:
    """The run a workbook or results file holds; BaselineError when it is not a qareport run.
    `on_problem` hears of each stored value left out because it was edited into something else."""
    target = Path(path)
    suffix = target.suffix.lower()
    if not target.is_file():
        raise BaselineError(f"{target}: no such file (a baseline is a qareport workbook or results file)")
    if suffix in WORKBOOK_SUFFIXES:
        return read_report(target, on_problem=on_problem).snapshot
    if suffix in RESULTS_SUFFIXES:
        return _read_results_file(target, on_problem or _no_problem)
    raise BaselineError(
        f"{target}: a baseline must be a qareport workbook (.xlsx) or results file "
        f"({', '.join(RESULTS_SUFFIXES)}), not '{target.suffix or target.name}'"
    )


def _read_results_file(target: Path, on_problem: OnProblem) -> RunSnapshot:
    try:
        document = read_results_file(target)
    except QAReportError as error:
        raise BaselineError(str(error)) from error
    cases = document.get("cases")
    stated = document.get("qareport")
    about: dict[str, Any] = stated if isinstance(stated, dict) else {}
    if not isinstance(cases, list) or not all(isinstance(c, dict) and "case_id" in c for c in cases):
        raise BaselineError(f"{target}: 'cases' must be a list of case rows with a 'case_id' "
                            f"(got {type(cases).__name__})")
    rows = []
    for index, case in enumerate(cases, start=1):
        def where(field: str, index: int = index) -> str:
            return f"'cases' item {index}, '{field}'"

        cleaned = clean_case_values(case, where=where, target=target, on_problem=on_problem)
        if cleaned is not None:
            rows.append(decode_case_row(cleaned))
    return RunSnapshot(
        source=str(target),
        created=convert_value(about.get("created"), "text") or "",
        qareport_version=convert_value(about.get("version"), "text") or "",
        cases=tuple(rows),
        steps_semantics=_stated_semantics(about.get("steps_semantics")),
    )


def stored_usage(metadata: Mapping[str, Any]) -> JudgeUsage | None:
    """The judge's usage as far as a workbook's `qareport_run` sheet keeps it (model, embedding
    model, calls, cost), None when the judge did not run."""
    model = metadata.get("judge.model")
    if not model:
        return None
    calls, cost = metadata.get("judge.calls"), metadata.get("judge.cost_usd")
    return JudgeUsage(model=str(model), embedding_model=str(metadata.get("judge.embedding_model") or ""),
                      calls=calls if isinstance(calls, int) and not isinstance(calls, bool) else 0,
                      cost_usd=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None)


def read_report(path: str | Path, *, on_problem: OnProblem | None = None) -> ReportRecord:
    """A qareport workbook's run, metadata and changes, from its hidden sheets. A value an edit made
    into something else is converted or left out (`on_problem` hears which), never a crash."""
    target = Path(path)
    report = on_problem or _no_problem
    sheets = _read_sheets(target, DATA_SHEETS)
    if RESULTS_SHEET not in sheets or RUN_SHEET not in sheets:
        raise BaselineError(
            f"{target}: not a qareport workbook with per-case results (no hidden "
            f"'{RESULTS_SHEET}' sheet); give a workbook written by qareport or its --results file"
        )
    metadata = _read_metadata(sheets[RUN_SHEET], target, report)
    if metadata.get("format") != RUN_FORMAT:
        raise BaselineError(
            f"{target}: the '{RUN_SHEET}' sheet has format {metadata.get('format')!r}; "
            f"this qareport reads {RUN_FORMAT!r}"
        )
    header, *rows = sheets[RESULTS_SHEET] or [()]
    names = [convert_value(name, "text") for name in header]
    if "case_id" not in names:
        raise BaselineError(f"{target}: the '{RESULTS_SHEET}' sheet has no 'case_id' column")
    columns = {name: index for index, name in enumerate(names, start=1) if name}  # the last wins, as in a row
    cases = []
    for number, values in enumerate(rows, start=2):
        if all(value is None for value in values):
            continue
        def where(field: str, number: int = number) -> str:
            return f"sheet '{RESULTS_SHEET}', cell {_letter(columns.get(field, 1))}{number}"

        cleaned = clean_case_values(dict(zip(names, values)), where=where, target=target, on_problem=report)
        if cleaned is not None:
            cases.append(decode_case_row(cleaned))
    snapshot = RunSnapshot(
        source=str(target),
        created=str(metadata.get("created") or ""),
        qareport_version=str(metadata.get("qareport_version") or ""),
        cases=tuple(cases),
        steps_semantics=_stated_semantics(metadata.get("option.steps_semantics")),
    )
    changes = _read_changes(sheets.get(CHANGES_SHEET), target, report)
    return ReportRecord(snapshot, metadata, _comparison(metadata, changes, cases),
                        headline=_stated_headline(metadata), status_counts=_stated_status_counts(metadata),
                        digest=_stored_digest(target, metadata, report))


_CHANGE_TYPES: dict[str, Expected] = {"kind": "text", "case_id": "text", "name": "text", "metric": "text",
                                      "delta": "number", "old_status": "text", "new_status": "text", "reason": "text"}


def _read_changes(rows: list[tuple[Any, ...]] | None, target: Path, on_problem: OnProblem) -> list[CaseChange]:
    """The stored changes; a line an edit made unreadable is left out with a problem."""
    if not rows:
        return []
    header, *lines = rows
    names = [convert_value(name, "text") for name in header]
    changes = []
    for number, values in enumerate(lines, start=2):
        if all(value is None for value in values):
            continue
        row = dict(zip(names, values))
        fields: dict[str, Any] = {}
        for index, field in enumerate(CHANGE_FIELDS, start=1):
            value = row.get(field)
            expected = _CHANGE_TYPES.get(field)
            if expected is None:  # old, new: a number, or a status as text
                value = value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else None
            else:
                value = convert_value(value, expected)
            column = names.index(field) + 1 if field in names else index
            where = f"sheet '{CHANGES_SHEET}', cell {_letter(column)}{number}"
            if value is BAD:
                on_problem(_dropped(target, where, f"'{field}'", expected or "number", row.get(field)))
                value = None
            fields[field] = value
        if fields["kind"] not in CHANGE_KINDS or not fields["case_id"]:
            on_problem(Problem(Location(str(target)), f"sheet '{CHANGES_SHEET}', row {number}: not a change qareport "
                                                      f"wrote (kind {fields['kind']!r}); left out"))
            continue
        changes.append(CaseChange(**fields))
    return changes


REVIEW_SHEET = "Overview"  # the analyst types reviews into the visible sheet, not into hidden data
REVIEW_HEADERS = ("id", "review", "review note")
REVIEWS_SHEET = "qareport_reviews"  # the reviews as they were carried, whole, and those of absent cases
REVIEWS_FIELDS = ("case_id", "field", "part", "text")
LAST_SEEN = "last seen"  # a reviewed case absent from the run: its row when it was last there
HEADER_SEARCH_ROWS = 10  # the Overview's header is looked for in its first rows (an analyst may add a title)
REVIEW_PART = 30_000  # characters a stored part holds (a cell holds 32,767)
REVIEW_PART_LINES = 250  # line breaks a stored part holds (a cell holds 253)
_OWN_MARKS = re.compile(r"^\u25bc [\d,]+ more (lines|characters|)$"
                        r"|\n?\[\u2026 [\d,]+ more (lines|characters) cut[^\]]*\]$",
                        re.MULTILINE)
"""What qareport itself adds to a cell's text (a cut marker): not part of what the analyst typed."""


def header_key(value: Any) -> str:
    """A column header the way an analyst means it: case, surrounding and doubled spaces aside."""
    return " ".join(str(value).split()).casefold() if value is not None else ""


def stored_case_id(value: Any) -> str | None:
    """A case id read back (a stored case row, an Overview id cell, the reviews sheet), made exactly
    as `loading` makes this run's case ids (text as written, then NFC and trimmed, `id_text`), so that
    both compare alike and a review stays with the case it was typed for."""
    text = convert_value(value, "text")
    text = normalise_id(text) if text else text
    return text if text else None


def read_reviews(path: str | Path, *, on_problem: OnProblem | None = None) -> dict[str, Review]:
    """The reviews an analyst typed into a workbook's Overview (`review`, `review note`, headers in
    any case), by case id; where the Overview holds a note qareport had to cut, the whole note kept in
    the hidden reviews sheet; and the reviews kept for cases absent from that run (with the case's
    row when it was last seen). {} for a results file. An Overview with rows but without the review
    columns is said through `on_problem`, and the reviews stored with the run stand in for it."""
    target = Path(path)
    report = on_problem or _no_problem
    if target.suffix.lower() not in WORKBOOK_SUFFIXES:
        return {}
    sheets = _read_sheets(target, (REVIEW_SHEET, REVIEWS_SHEET))
    stored = _stored_reviews(sheets.get(REVIEWS_SHEET) or [])
    rows = sheets.get(REVIEW_SHEET) or []
    reviews: dict[str, Review] = {}
    listed: set[str] = set()
    at = next((index for index, values in enumerate(rows[:HEADER_SEARCH_ROWS])
               if {"id", "review"} <= {header_key(value) for value in values}), 0)  # rows inserted above it
    header = [header_key(value) for value in rows[at]] if rows else []
    columns = {name: header.index(name) for name in REVIEW_HEADERS if name in header}
    body = [values for values in rows[at + 1:] if any(value is not None for value in values)]
    missing = [name for name in REVIEW_HEADERS if name not in columns]
    if missing and body:
        report(Problem(Location(str(target)), (
            f"sheet '{REVIEW_SHEET}' has no column headed {' or '.join(repr(name) for name in missing)} (looked for "
            "in any case, surrounding spaces aside): what was typed there is not read, and the reviews qareport "
            "carried into this workbook are kept instead; name the column as qareport wrote it")))
    if "id" in columns:
        for values in body:
            case_id = stored_case_id(values[columns["id"]])
            if case_id is None:
                continue
            listed.add(case_id)
            kept = stored.get(case_id, {})
            verdict, note = (_typed(values[columns[name]], kept.get(name)) if name in columns
                             else kept.get(name) or None
                             for name in ("review", "review note"))
            review = Review(verdict, note)
            if review:
                reviews.setdefault(case_id, review)
    for case_id, kept in stored.items():
        if case_id in listed:
            continue  # the Overview says what the analyst left there, cleared reviews included
        seen: Any = None
        if LAST_SEEN in kept:
            try:
                seen = json.loads(kept[LAST_SEEN])
            except ValueError:
                seen = None
        review = Review(kept.get("review") or None, kept.get("review note") or None,
                        last_seen=decode_case_row(seen) if isinstance(seen, dict) and "case_id" in seen else None)
        if review:
            reviews[case_id] = review
    return reviews


def read_history_reviews(runs: Sequence[RunSnapshot]) -> tuple[dict[str, Review], ...]:
    """The reviews typed into each run's workbook (`read_reviews`), in the order of `runs`; {} for a
    results file, or for a workbook that cannot be read again (it was read a moment ago as a run)."""
    found: list[dict[str, Review]] = []
    for run in runs:
        try:
            found.append(read_reviews(run.source))
        except QAReportError:
            found.append({})
    return tuple(found)


def _typed(value: Any, whole: str | None) -> str | None:
    """What the analyst left in a review cell; the whole text kept in the hidden sheet when the cell
    holds qareport's own cut of it (its marker, and the same words before it), untouched since. A
    note the analyst shortened (marker gone) is taken as typed."""
    text = convert_value(value, "text")
    if text is None:
        return None
    if whole and text != whole and _OWN_MARKS.search(text):
        shown = "".join(_OWN_MARKS.sub("", text).split())
        if shown and "".join(whole.split()).startswith(shown):
            return whole
    return text.strip() or None


def _stored_reviews(rows: Sequence[tuple[Any, ...]]) -> dict[str, dict[str, str]]:
    """The hidden reviews sheet: case id -> field -> its text, the parts joined in their order."""
    parts: dict[str, dict[str, list[tuple[int, str]]]] = {}
    for values in rows[1:]:
        case_id, field, part, text = (*values, None, None, None, None)[:4]
        case_id, field, text = stored_case_id(case_id), convert_value(field, "text"), convert_value(text, "text")
        number = convert_value(part, "count")
        if case_id is None or not field or text is None or number is BAD:
            continue
        parts.setdefault(case_id, {}).setdefault(field, []).append((number or 0, text))
    return {case_id: {field: "".join(text for _, text in sorted(pieces, key=lambda piece: piece[0]))
                      for field, pieces in fields.items()}
            for case_id, fields in parts.items()}


def review_parts(text: str) -> list[str]:
    """A text in pieces that each fit a cell and that join back to it exactly ("".join)."""
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + REVIEW_PART)
        breaks = [index for index in range(start, end) if text[index] == "\n"]
        if len(breaks) > REVIEW_PART_LINES:
            end = breaks[REVIEW_PART_LINES - 1] + 1
        pieces.append(text[start:end])
        start = end
    return pieces


def _stored_digest(target: Path, metadata: Mapping[str, Any], on_problem: OnProblem) -> Digest | None:
    parts = []
    for index in range(1, 10_000):
        part = metadata.get(f"digest.{index}")
        if part is None:
            break
        parts.append(str(part))
    if not parts:
        return None
    try:
        return digest_from_json("".join(parts))
    except (ValueError, TypeError, KeyError, AttributeError):
        # an edited hidden sheet: the run is still a baseline, and the email is made again
        on_problem(Problem(Location(str(target)), f"sheet '{RUN_SHEET}', the digest (keys digest.1 to "
                           f"digest.{len(parts)}): not the digest qareport wrote; made again from the stored run"))
        return None


def _stated_headline(metadata: Mapping[str, Any]) -> tuple[Headline, ...]:
    """The headline metrics as `run_metadata` wrote them (metric.<key>.mean, .cases, ...)."""
    prefix = "metric."
    keys = [key[len(prefix):-len(".mean")] for key in metadata if key.startswith(prefix) and key.endswith(".mean")]

    def count(metric: str, what: str) -> int:
        value = metadata.get(f"{prefix}{metric}.{what}")
        return int(value) if isinstance(value, (int, float)) else 0

    def mean(metric: str) -> float | None:
        value = metadata.get(f"{prefix}{metric}.mean")
        return value if isinstance(value, (int, float)) else None

    return tuple(
        Headline(metric=metric, mean=mean(metric),
                 cases=count(metric, "cases"), errors=count(metric, "errors"), missing=count(metric, "missing"),
                 invalid=count(metric, "invalid"))
        for metric in keys
    )


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _stated_status_counts(metadata: Mapping[str, Any]) -> dict[str, int]:
    prefix = "status."
    return {key[len(prefix):]: int(value) for key, value in metadata.items()
            if key.startswith(prefix) and isinstance(value, (int, float))}


def _comparison(metadata: Mapping[str, Any], records: list[CaseChange],
                cases: Sequence[Mapping[str, Any]]) -> Comparison | None:
    if not metadata.get("baseline.source"):
        return None
    current = {h.metric: h for h in headline_metrics(cases)}
    deltas = []
    for metric in sorted({*current, *_baseline_metrics(metadata)}, key=_metric_order):
        old = metadata.get(f"baseline.metric.{metric}.mean")
        deltas.append(HeadlineDelta(
            metric=metric,
            old=old if isinstance(old, (int, float)) else None,
            new=current[metric].mean if metric in current else None,
            old_cases=int(metadata.get(f"baseline.metric.{metric}.cases") or 0),
            new_cases=current[metric].cases if metric in current else 0,
            shared_old=_float(metadata.get(f"baseline.metric.{metric}.shared_old")),
            shared_new=_float(metadata.get(f"baseline.metric.{metric}.shared_new")),
            shared_cases=int(metadata.get(f"baseline.metric.{metric}.shared_cases") or 0),
            p_value=_float(metadata.get(f"baseline.metric.{metric}.p_value")),
        ))
    return Comparison(
        baseline_source=str(metadata.get("baseline.source")),
        baseline_created=str(metadata.get("baseline.created") or ""),
        baseline_version=str(metadata.get("baseline.qareport_version") or ""),
        changes=tuple(records),
        headline=tuple(deltas),
        movements=tuple(group_movements(records)),
        warnings=tuple(str(value) for key, value in metadata.items() if key.startswith("baseline.warning.") and value),
    )


def _baseline_metrics(metadata: Mapping[str, Any]) -> set[str]:
    prefix, suffix = "baseline.metric.", ".mean"
    return {key[len(prefix):-len(suffix)] for key in metadata if key.startswith(prefix) and key.endswith(suffix)}


def _metric_order(metric: str) -> tuple[int, str]:
    order = kinds.headline_metric_keys()
    return (order.index(metric) if metric in order else len(order), metric)


def _read_sheets(target: Path, names: Iterable[str]) -> dict[str, list[tuple[Any, ...]]]:
    """The values of the named sheets that exist, row by row."""
    from openpyxl import load_workbook

    if not target.is_file():
        raise BaselineError(f"{target}: no such file")
    try:
        # openpyxl warns about parts it does not understand (extensions, data validation); the
        # hidden sheets are plain values, so those warnings say nothing about what is read here.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            workbook = load_workbook(target, read_only=True, data_only=True)
            try:
                return {name: _even_rows(workbook[name].iter_rows(values_only=True))
                        for name in names if name in workbook.sheetnames}
            finally:
                workbook.close()
    except BaselineError:
        raise
    except Exception as error:  # a damaged or foreign file can fail anywhere inside openpyxl
        raise BaselineError(f"{target}: cannot read it as an Excel workbook "
                            f"({type(error).__name__}: {error})") from error


def _even_rows(rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows all as long as the longest. A sheet without the optional `<dimension>` element (as
    openpyxl's write-only mode and some other tools write them) is read row by row as stored: each
    row then ends at its last value."""
    read = [tuple(row) for row in rows]
    width = max((len(row) for row in read), default=0)
    return [row + (None,) * (width - len(row)) if len(row) < width else row for row in read]


def find_run_files(paths: Sequence[str | Path], *, exclude: Iterable[str | Path] = ()) -> tuple[list[Path], list[Path]]:
    """Files given by name, and files found in the given folders (sorted, recursively)."""
    excluded = {Path(p).resolve() for p in exclude}
    named: list[Path] = []
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            for candidate in sorted(path.rglob("*")):
                if (candidate.is_file() and candidate.suffix.lower() in RUN_SUFFIXES
                        and not candidate.name.startswith((".", "~$"))
                        and candidate.resolve() not in excluded):
                    found.append(candidate)
        elif path.resolve() not in excluded:
            named.append(path)
    return named, found


def read_history(paths: Sequence[str | Path], *, exclude: Iterable[str | Path] = (),
                 on_problem: OnProblem | None = None) -> History:
    """The runs in the given files and folders. A named file that is not a qareport run is an
    error; in a folder such a file (a configuration, say) is skipped and said so."""
    named, found = find_run_files(paths, exclude=exclude)
    runs = [read_run(path, on_problem=on_problem) for path in named]
    skipped = []
    for path in found:
        try:
            runs.append(read_run(path, on_problem=on_problem))
        except BaselineError as error:
            skipped.append(str(error))
    return History(tuple(runs), tuple(skipped))
