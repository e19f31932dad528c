"""Reading earlier runs: a baseline (`--baseline`), a history (`--history`), or a report to email.

An earlier run is either a workbook qareport wrote or a results file (`--results`). A workbook
carries its run in hidden, machine-readable sheets, so the workbook alone is enough:

    qareport_results   one row per case: run_record.CASE_FIELDS (groups as a JSON list)
    qareport_run       key | value: created, version, headline metrics, baseline, inputs ...
    qareport_changes   one row per change against the baseline (CHANGE_FIELDS), when there was one

This module defines that format (`qareport.workbook.results_sheet` writes it) and is, besides the
workbook package, the only module that imports openpyxl: for reading.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qareport.comparison import HEADLINE_METRICS, CaseChange, Comparison, HeadlineDelta, headline_metrics
from qareport.errors import BaselineError, QAReportError
from qareport.records import RunSnapshot
from qareport.results_file import RESULTS_SUFFIXES, read_results_file
from qareport.run_record import CASE_FIELDS

RESULTS_SHEET = "qareport_results"
RUN_SHEET = "qareport_run"
CHANGES_SHEET = "qareport_changes"
DATA_SHEETS = (RESULTS_SHEET, RUN_SHEET, CHANGES_SHEET)
RUN_FORMAT = "qareport-run/1"
CHANGE_FIELDS = ("kind", "case_id", "name", "metric", "old", "new", "delta", "old_status", "new_status")
WORKBOOK_SUFFIXES = (".xlsx",)
RUN_SUFFIXES = (*WORKBOOK_SUFFIXES, *RESULTS_SUFFIXES)
LIST_FIELDS = ("groups",)


@dataclass(frozen=True, slots=True)
class ReportRecord:
    """Everything a workbook says about its run, read back from its hidden sheets."""

    snapshot: RunSnapshot
    metadata: dict[str, Any]  # the qareport_run sheet, key -> value
    comparison: Comparison | None  # against the baseline the report was made with, if any


@dataclass(frozen=True, slots=True)
class History:
    runs: tuple[RunSnapshot, ...]
    skipped: tuple[str, ...]  # "path: why", for files in a folder that are not qareport runs


# --- the format, both ways --------------------------------------------------------------------------


def encode_case_value(field: str, value: Any) -> Any:
    """A case-row value as a cell holds it (lists as JSON text)."""
    if field in LIST_FIELDS:
        return json.dumps(list(value or []), ensure_ascii=False)
    return value


def decode_case_row(values: Mapping[str, Any]) -> dict[str, Any]:
    """A case row from cells (or from a results file), with every CASE_FIELDS key present."""
    row = {field: values.get(field) for field in CASE_FIELDS}
    for field in LIST_FIELDS:
        raw = row.get(field)
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                raw = [part.strip() for part in raw.split(",") if part.strip()]
        row[field] = [str(item) for item in raw] if isinstance(raw, list) else []
    row["case_id"] = str(row["case_id"])
    for field in ("error",):
        if row[field] == "":
            row[field] = None
    row["definition_hash"] = row.get("definition_hash") or ""
    return row


# --- reading --------------------------------------------------------------------------------------


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
    about = document.get("qareport") if isinstance(document.get("qareport"), dict) else {}
    if not isinstance(cases, list) or not all(isinstance(c, dict) and "case_id" in c for c in cases):
        raise BaselineError(f"{target}: 'cases' must be a list of case rows with a 'case_id' (got {type(cases).__name__})")
    return RunSnapshot(
        source=str(target),
        created=str(about.get("created") or ""),
        qareport_version=str(about.get("version") or ""),
        cases=tuple(decode_case_row(case) for case in cases),
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
    )
    return ReportRecord(snapshot, metadata, _comparison(metadata, sheets.get(CHANGES_SHEET), cases))


def _comparison(metadata: Mapping[str, Any], changes: list[tuple[Any, ...]] | None, cases: Sequence[Mapping[str, Any]]) -> Comparison | None:
    if not metadata.get("baseline.source"):
        return None
    records = []
    if changes:
        header, *rows = changes
        for values in rows:
            row = dict(zip(header, values))
            records.append(CaseChange(**{field: row.get(field) for field in CHANGE_FIELDS}))
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
        ))
    return Comparison(
        baseline_source=str(metadata.get("baseline.source")),
        baseline_created=str(metadata.get("baseline.created") or ""),
        baseline_version=str(metadata.get("baseline.qareport_version") or ""),
        changes=tuple(records),
        headline=tuple(deltas),
    )


def _baseline_metrics(metadata: Mapping[str, Any]) -> set[str]:
    prefix, suffix = "baseline.metric.", ".mean"
    return {key[len(prefix):-len(suffix)] for key in metadata if key.startswith(prefix) and key.endswith(suffix)}


def _metric_order(metric: str) -> tuple[int, str]:
    return (HEADLINE_METRICS.index(metric) if metric in HEADLINE_METRICS else len(HEADLINE_METRICS), metric)


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
