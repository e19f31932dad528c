"""The hidden, machine-readable sheets: the run as data, so the workbook alone can be a baseline,
a point of a trend, or the source of an email. The format is defined (and read) in
`qareport.baseline`; the sheets are hidden, not very hidden, so anyone curious can unhide them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from openpyxl import Workbook
from openpyxl.worksheet.worksheet import Worksheet

from qareport.baseline import (
    CHANGE_FIELDS,
    CHANGES_SHEET,
    RESULTS_SHEET,
    RUN_FORMAT,
    RUN_SHEET,
    encode_case_value,
)
from qareport.comparison import Comparison, Headline, status_counts
from qareport.records import RunInfo
from qareport.run_record import CASE_FIELDS
from qareport.workbook import styles
from qareport.workbook.cells import write


def _hidden(workbook: Workbook, name: str) -> Worksheet:
    ws = workbook.create_sheet(name)
    ws.sheet_state = "hidden"
    return ws


def _write_rows(ws: Worksheet, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    for column, name in enumerate(header, start=1):
        write(ws, 1, column, name).font = styles.BOLD
    for row_number, values in enumerate(rows, start=2):
        for column, value in enumerate(values, start=1):
            write(ws, row_number, column, value)
    ws.freeze_panes = "A2"


def run_metadata(
    run: RunInfo,
    rows: Sequence[dict[str, Any]],
    headline: Sequence[Headline],
    comparison: Comparison | None,
) -> list[tuple[str, Any]]:
    """The qareport_run sheet as key, value pairs (flat, so any tool can read it)."""
    pairs: list[tuple[str, Any]] = [
        ("format", RUN_FORMAT),
        ("created", run.created),
        ("qareport_version", run.qareport_version),
        ("cases", len(rows)),
    ]
    pairs += [(f"status.{status}", count) for status, count in status_counts(rows).items()]
    for item in headline:
        pairs += [
            (f"metric.{item.metric}.mean", item.mean),
            (f"metric.{item.metric}.cases", item.cases),
            (f"metric.{item.metric}.errors", item.errors),
            (f"metric.{item.metric}.missing", item.missing),
            (f"metric.{item.metric}.invalid", item.invalid),
        ]
    usage = run.judge_usage or {}
    pairs += [
        ("judge.model", run.judge_model or usage.get("model")),
        ("judge.embedding_model", usage.get("embedding_model")),
        ("judge.calls", usage.get("calls")),
        ("judge.cost_usd", usage.get("cost_usd")),
    ]
    pairs += [(f"not_evaluated.{family}", why) for family, why in sorted(run.not_evaluated.items())]
    for index, item in enumerate(run.inputs, start=1):
        pairs += [
            (f"input.{index}.role", item.role),
            (f"input.{index}.path", item.path),
            (f"input.{index}.files", item.files),
            (f"input.{index}.records", item.records),
            (f"input.{index}.sha256", item.sha256),
        ]
    pairs += [(f"option.{key}", value if isinstance(value, (int, float, str)) else _text(value))
              for key, value in sorted(run.options.items()) if value is not None]
    if comparison is not None:
        pairs += [
            ("baseline.source", comparison.baseline_source),
            ("baseline.created", comparison.baseline_created),
            ("baseline.qareport_version", comparison.baseline_version),
        ]
        for delta in comparison.headline:
            if delta.old is not None:
                pairs += [(f"baseline.metric.{delta.metric}.mean", delta.old),
                          (f"baseline.metric.{delta.metric}.cases", delta.old_cases)]
        pairs += [(f"changes.{kind.replace(' ', '_')}", count) for kind, count in comparison.counts().items()]
    return pairs


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def write_results_sheets(
    workbook: Workbook,
    rows: Sequence[dict[str, Any]],
    run: RunInfo,
    headline: Sequence[Headline],
    comparison: Comparison | None,
) -> None:
    _write_rows(
        _hidden(workbook, RESULTS_SHEET),
        CASE_FIELDS,
        [[encode_case_value(field, row.get(field)) for field in CASE_FIELDS] for row in rows],
    )
    _write_rows(_hidden(workbook, RUN_SHEET), ("key", "value"), run_metadata(run, rows, headline, comparison))
    if comparison is not None:
        _write_rows(
            _hidden(workbook, CHANGES_SHEET),
            CHANGE_FIELDS,
            [[getattr(change, field) for field in CHANGE_FIELDS] for change in comparison.changes],
        )
