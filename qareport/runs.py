"""Stored runs: the one format a run is kept in, written and read back in this module only.

A run is kept as one flat row per case (`case_rows`: who the case is, every registered kind's metrics,
token usage), a few key-value facts about the run (`run_metadata`), and, when it was compared with a
baseline, its changes. Two containers hold that format, and either can be a later run's baseline or a
point of its trend:

    the workbook's hidden sheets
        qareport_results   one row per case: `case_fields()` (groups as a JSON list)
        qareport_run       key | value: format, created, version, headline metrics, baseline, inputs ...
        qareport_changes   one row per change against the baseline (CHANGE_FIELDS), when there was one
    the results file (`--results`, JSON or YAML)
        qareport (version, date), results (graphrag-eval's per-question list), aggregates
        (graphrag-eval's per_template / micro / macro), data_query_metrics, cases (the case rows)

The workbook writer lays out `stored_run_tables`; reading a workbook back uses openpyxl.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from qareport import kinds
from qareport.comparison import (
    CaseChange,
    Comparison,
    Headline,
    HeadlineDelta,
    group_movements,
    headline_metrics,
    status_counts,
)
from qareport.errors import BaselineError, QAReportError
from qareport.files import write_atomically
from qareport.digest import Digest, digest_from_json, digest_to_json
from qareport.records import USAGE_FIELDS, CaseResult, Review, RunSnapshot
from qareport.side_by_side import case_outputs

if TYPE_CHECKING:
    from qareport.report import Report

RESULTS_SHEET = "qareport_results"
RUN_SHEET = "qareport_run"
CHANGES_SHEET = "qareport_changes"
DATA_SHEETS = (RESULTS_SHEET, RUN_SHEET, CHANGES_SHEET)
RUN_FORMAT = "qareport-run/1"
CHANGE_FIELDS = ("kind", "case_id", "name", "metric", "old", "new", "delta", "old_status", "new_status", "reason")
CASE_HEAD_FIELDS = ("case_id", "kind", "name", "groups", "status", "error", "definition_hash", "file", "reason",
                    "targets", "facts", "outputs")
LIST_FIELDS = ("groups", "targets")
JSON_FIELDS = ("facts", "outputs")  # mappings, kept as JSON text in a cell; outputs: `side_by_side.case_outputs`
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
    status_counts: dict[str, int] = field(default_factory=dict)
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


def case_fields() -> tuple[str, ...]:
    """The columns of a case row: who the case is, every registered kind's metrics, usage."""
    return (*CASE_HEAD_FIELDS, *kinds.case_metric_keys(), *USAGE_FIELDS)


def case_row(result: CaseResult) -> dict[str, Any]:
    """The headline figures of one case, flat, JSON-ready."""
    response = result.response
    row: dict[str, Any] = {
        "case_id": result.case.id,
        "kind": result.case.kind,
        "name": result.case.name,
        "groups": list(result.case.groups),
        "status": result.status,
        "error": result.error,
        "definition_hash": result.case.definition_hash,
        "file": result.case.location.path,
        "reason": kinds.case_reason(result),
        "targets": [kind.name for kind in kinds.REGISTRY if kind.has_target(result.case)],
        "facts": kinds.case_facts(result),
        "outputs": case_outputs(result),  # what the system produced, for the next run's Compare sheet
        **kinds.case_metrics(result),
    }
    for key in USAGE_FIELDS:
        row[key] = getattr(response, key) if response is not None else None
    return row


def case_rows(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    return [case_row(result) for result in results]


def encode_case_value(field: str, value: Any) -> Any:
    """A case-row value as a cell holds it (lists as JSON text)."""
    if field in LIST_FIELDS:
        return json.dumps(list(value or []), ensure_ascii=False)
    if field in JSON_FIELDS:
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
        raw = _from_json(row.get(field), fallback=lambda text: [part.strip() for part in text.split(",") if part.strip()])
        row[field] = [str(item) for item in raw] if isinstance(raw, list) else []
    if values.get("targets") is None:
        row["targets"] = None  # stored before runs kept their targets: `comparison` falls back
    for field in JSON_FIELDS:
        raw = _from_json(row.get(field), fallback=lambda text: {})
        row[field] = raw if isinstance(raw, dict) else {}
    row["case_id"] = str(row["case_id"])
    for field in ("error", "reason"):
        if row[field] == "":
            row[field] = None
    row["definition_hash"] = row.get("definition_hash") or ""
    return row



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
    usage = run.judge_usage or {}
    pairs += [
        ("judge.model", run.judge_model or usage.get("model")),
        ("judge.embedding_model", usage.get("embedding_model")),
        ("judge.calls", usage.get("calls")),
        ("judge.cost_usd", usage.get("cost_usd")),
    ]
    for metric in report.judged:
        pairs += [(f"judged.{metric.key}.{field}", getattr(metric, field))
                  for field in ("label", "mean", "judged", "failed", "not_applicable")]
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
              for key, value in sorted(run.options.items()) if value is not None]
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


DIGEST_PART = 30_000  # characters of the digest's JSON a cell holds (at most 32,767)


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def stored_run_tables(report: Report) -> list[StoredTable]:
    """The hidden sheets of a workbook, in order: cases, the run's facts, and its changes."""
    fields = case_fields()
    tables = [
        StoredTable(RESULTS_SHEET, fields,
                    tuple(tuple(encode_case_value(field, row.get(field)) for field in fields) for row in report.rows)),
        StoredTable(RUN_SHEET, ("key", "value"), tuple(run_metadata(report))),
    ]
    if report.comparison is not None:
        tables.append(StoredTable(CHANGES_SHEET, CHANGE_FIELDS, tuple(
            tuple(getattr(change, field) for field in CHANGE_FIELDS) for change in report.comparison.changes
        )))
    return tables


# --- the results file -------------------------------------------------------------------------------


def results_document(report: Report) -> dict[str, Any]:
    """The results file's content: graphrag-eval's results and aggregates, and the case rows."""
    statistics = report.statistics
    return {
        "qareport": {"version": report.run.qareport_version, "created": report.run.created,
                     **_semantics_entry(report.run.options)},
        "results": statistics.question_results,
        "aggregates": statistics.qa_aggregates or {},
        "data_query_metrics": {
            "all": asdict(statistics.data_query) if statistics.data_query else None,
            "per_group": [asdict(g) for g in statistics.per_group],
            "per_dimension": [asdict(d) for d in statistics.per_dimension],
        },
        "cases": list(report.rows),
    }


def _semantics_entry(options: Mapping[str, Any]) -> dict[str, Any]:
    """Which graphrag-eval's steps rules scored the run, when the run says."""
    semantics = options.get("steps_semantics")
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


def write_results_file(document: dict[str, Any], path: str | Path) -> None:
    target = check_results_path(path)
    if target.suffix.lower() == ".json":
        text = json.dumps(document, indent=2, ensure_ascii=False, default=str)
    else:
        text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    write_atomically(target, text.encode("utf-8"), what="the results")


def read_results_file(path: str | Path) -> dict[str, Any]:
    """A results file written by qareport (used as a baseline)."""
    target = Path(path)
    try:
        text = target.read_text(encoding="utf-8")
        document = json.loads(text) if target.suffix.lower() == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as error:
        raise QAReportError(f"{target}: cannot read the results file: {error}") from error
    if not isinstance(document, dict) or "cases" not in document:
        raise QAReportError(f"{target}: not a qareport results file (no 'cases' list)")
    return document


# --- reading a run back -------------------------------------------------------------------------------


def read_run(path: str | Path) -> RunSnapshot:
    """The run a workbook or results file holds; BaselineError when it is not a qareport run."""
    target = Path(path)
    suffix = target.suffix.lower()
    if not target.is_file():
        raise BaselineError(f"{target}: no such file (a baseline is a qareport workbook or results file)")
    if suffix in WORKBOOK_SUFFIXES:
        return read_report(target).snapshot
    if suffix in RESULTS_SUFFIXES:
        return _read_results_file(target)
    raise BaselineError(
        f"{target}: a baseline must be a qareport workbook (.xlsx) or results file "
        f"({', '.join(RESULTS_SUFFIXES)}), not '{target.suffix or target.name}'"
    )


def _read_results_file(target: Path) -> RunSnapshot:
    try:
        document = read_results_file(target)
    except QAReportError as error:
        raise BaselineError(str(error)) from error
    cases = document.get("cases")
    stated = document.get("qareport")
    about: dict[str, Any] = stated if isinstance(stated, dict) else {}
    if not isinstance(cases, list) or not all(isinstance(c, dict) and "case_id" in c for c in cases):
        raise BaselineError(f"{target}: 'cases' must be a list of case rows with a 'case_id' (got {type(cases).__name__})")
    return RunSnapshot(
        source=str(target),
        created=str(about.get("created") or ""),
        qareport_version=str(about.get("version") or ""),
        cases=tuple(decode_case_row(case) for case in cases),
        steps_semantics=_stated_semantics(about.get("steps_semantics")),
    )


def read_report(path: str | Path) -> ReportRecord:
    """A qareport workbook's run, metadata and changes, from its hidden sheets."""
    target = Path(path)
    sheets = _read_sheets(target, DATA_SHEETS)
    if RESULTS_SHEET not in sheets or RUN_SHEET not in sheets:
        raise BaselineError(
            f"{target}: not a qareport workbook with per-case results (no hidden "
            f"'{RESULTS_SHEET}' sheet); give a workbook written by qareport or its --results file"
        )
    metadata = {str(row[0]): row[1] for row in sheets[RUN_SHEET][1:] if row and row[0] is not None}
    if metadata.get("format") != RUN_FORMAT:
        raise BaselineError(
            f"{target}: the '{RUN_SHEET}' sheet has format {metadata.get('format')!r}; "
            f"this qareport reads {RUN_FORMAT!r}"
        )
    header, *rows = sheets[RESULTS_SHEET] or [()]
    if "case_id" not in header:
        raise BaselineError(f"{target}: the '{RESULTS_SHEET}' sheet has no 'case_id' column")
    cases = tuple(
        decode_case_row(dict(zip(header, values))) for values in rows
        if any(value is not None for value in values)
    )
    snapshot = RunSnapshot(
        source=str(target),
        created=str(metadata.get("created") or ""),
        qareport_version=str(metadata.get("qareport_version") or ""),
        cases=cases,
        steps_semantics=_stated_semantics(metadata.get("option.steps_semantics")),
    )
    return ReportRecord(snapshot, metadata, _comparison(metadata, sheets.get(CHANGES_SHEET), cases),
                        headline=_stated_headline(metadata), status_counts=_stated_status_counts(metadata),
                        digest=_stored_digest(target, metadata))


REVIEW_SHEET = "Overview"  # the analyst types reviews into the visible sheet, not into hidden data
REVIEW_HEADERS = ("id", "review", "review note")


def read_reviews(path: str | Path) -> dict[str, Review]:
    """The reviews an analyst typed into a workbook's Overview (`review`, `review note`), by case
    id; {} for a results file or a workbook without those columns."""
    target = Path(path)
    if target.suffix.lower() not in WORKBOOK_SUFFIXES:
        return {}
    rows = _read_sheets(target, (REVIEW_SHEET,)).get(REVIEW_SHEET) or []
    if not rows:
        return {}
    header = [str(value).strip() if value is not None else "" for value in rows[0]]
    if not all(name in header for name in REVIEW_HEADERS):
        return {}
    where = {name: header.index(name) for name in REVIEW_HEADERS}
    reviews: dict[str, Review] = {}
    for values in rows[1:]:
        def cell(name: str) -> str | None:
            index = where[name]
            value = values[index] if index < len(values) else None
            return str(value).strip() or None if value is not None else None

        case_id, review = cell("id"), Review(cell("review"), cell("review note"))
        if case_id and review:
            reviews.setdefault(case_id, review)
    return reviews


def _stored_digest(target: Path, metadata: Mapping[str, Any]) -> Digest | None:
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
    except (ValueError, TypeError, KeyError):
        return None  # an edited hidden sheet: the run is still a baseline, and the email is made again


def _stated_headline(metadata: Mapping[str, Any]) -> tuple[Headline, ...]:
    """The headline metrics as `run_metadata` wrote them (metric.<key>.mean, .cases, ...)."""
    prefix = "metric."
    keys = [key[len(prefix):-len(".mean")] for key in metadata if key.startswith(prefix) and key.endswith(".mean")]

    def count(metric: str, what: str) -> int:
        value = metadata.get(f"{prefix}{metric}.{what}")
        return int(value) if isinstance(value, (int, float)) else 0

    return tuple(
        Headline(metric=metric, mean=mean if isinstance(mean := metadata.get(f"{prefix}{metric}.mean"), (int, float)) else None,
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


def _comparison(metadata: Mapping[str, Any], changes: list[tuple[Any, ...]] | None, cases: Sequence[Mapping[str, Any]]) -> Comparison | None:
    if not metadata.get("baseline.source"):
        return None
    records = []
    if changes:
        header, *rows = changes
        for values in rows:
            row = dict(zip(header, values))
            records.append(CaseChange(**{field: row.get(field) for field in CHANGE_FIELDS}))  # type: ignore[arg-type]
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
                return {
                    name: [tuple(row) for row in workbook[name].iter_rows(values_only=True)]
                    for name in names if name in workbook.sheetnames
                }
            finally:
                workbook.close()
    except BaselineError:
        raise
    except Exception as error:  # a damaged or foreign file can fail anywhere inside openpyxl
        raise BaselineError(f"{target}: cannot read it as an Excel workbook ({type(error).__name__}: {error})") from error


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


def read_history(paths: Sequence[str | Path], *, exclude: Iterable[str | Path] = ()) -> History:
    """The runs in the given files and folders. A named file that is not a qareport run is an
    error; in a folder such a file (a configuration, say) is skipped and said so."""
    named, found = find_run_files(paths, exclude=exclude)
    runs = [read_run(path) for path in named]
    skipped = []
    for path in found:
        try:
            runs.append(read_run(path))
        except BaselineError as error:
            skipped.append(str(error))
    return History(tuple(runs), tuple(skipped))
