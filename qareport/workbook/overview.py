"""The Overview sheet: one row per test case, with the columns of the kinds of target present."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from qareport.comparison import Comparison
from qareport.records import CaseResult
from qareport.rendering import render_indicator_details, render_steps_details
from qareport.workbook import styles
from qareport.workbook.cells import write

SHEET_NAME = "Overview"


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    value: Callable[[CaseResult], Any]
    width: float
    number_format: str | None = None
    wrap: bool = False
    score: bool = False  # gets the red-to-green colour scale


def _qa_dicts(result: CaseResult) -> list[dict[str, Any]]:
    return [turn.qa for turn in result.turns if turn.qa is not None]


def qa_number(key: str) -> Callable[[CaseResult], float | None]:
    """A numeric graphrag-eval key of the case; the mean over turns for multi-turn cases."""

    def value(result: CaseResult) -> float | None:
        numbers = [
            d[key] for d in _qa_dicts(result)
            if isinstance(d.get(key), (int, float)) and not isinstance(d.get(key), bool)
        ]
        return fmean(numbers) if numbers else None

    return value


def _relevance_questions(result: CaseResult) -> str | None:
    """The questions the judge generated from the answer (noncommittal ones marked)."""
    lines = []
    for qa in _qa_dicts(result):
        for item in qa.get("answer_relevance_questions") or []:
            if isinstance(item, dict):
                mark = " (noncommittal)" if item.get("noncommittal") else ""
                lines.append(f"• {item.get('question', '')}{mark}")
    return "\n".join(lines) or None


def qa_text(key: str) -> Callable[[CaseResult], str | None]:
    """A text key of the case; prefixed with the turn number when several turns have it."""

    def value(result: CaseResult) -> str | None:
        texts = [(t.number, t.qa[key]) for t in result.turns if t.qa and t.qa.get(key) not in (None, "")]
        if not texts:
            return None
        if len(texts) == 1:
            return str(texts[0][1])
        return "\n".join(f"Turn {number}: {text}" for number, text in texts)

    return value


def _judge_errors(result: CaseResult) -> str | None:
    errors = []
    for turn in result.turns:
        for key, value in (turn.qa or {}).items():
            if key.endswith("_error") and key != "steps_error" and value:
                errors.append(f"{key}: {value}")
        for step in (turn.qa or {}).get("actual_steps") or []:
            for key, value in step.items():
                if key.startswith("retrieval_") and key.endswith("_error") and value:
                    errors.append(f"{step.get('id')} {key}: {value}")
    return "\n".join(errors) or None


def _response_number(field: str) -> Callable[[CaseResult], float | None]:
    def value(result: CaseResult) -> float | None:
        return getattr(result.response, field) if result.response is not None else None

    return value


def _datasets(result: CaseResult) -> str | None:
    lines = []
    for turn in result.turns:
        if turn.indicator is None:
            continue
        target = ", ".join(turn.indicator.target_datasets) or "-"
        selected = ", ".join(turn.indicator.selected_datasets) or "-"
        flag = "  ⚠ mismatch" if turn.indicator.dataset_mismatch else ""
        prefix = f"Turn {turn.number}: " if len(result.case.turns) > 1 else ""
        lines.append(f"{prefix}target {target}; selected {selected}{flag}")
    return "\n".join(lines) or None


def _user_messages(result: CaseResult) -> str:
    if len(result.case.turns) == 1:
        return result.case.turns[0].user_message
    return "\n".join(f"Turn {t.number}: {t.user_message}" for t in result.case.turns)


def overview_columns(results: Sequence[CaseResult], *, templates_dir: str | None) -> list[Column]:
    """The columns for this run: those of every kind of target or output present."""
    kinds = {r.case.kind for r in results}
    turns = [t for r in results for t in r.case.turns]
    outputs = [o for r in results if r.response for o in r.response.turns]
    has_indicator = any(t.target.indicator_selection is not None for t in turns)
    has_steps = any(t.target.reference_steps is not None for t in turns) or any(
        o.actual_steps is not None for o in outputs
    )
    has_answers = any(t.target.reference_answer is not None for t in turns) or any(
        o.actual_answer is not None for o in outputs
    )
    has_tokens = any(r.response and r.response.total_tokens is not None for r in results)

    name_header = {"conversation": "name", "qa": "question"}.get(next(iter(kinds)), "name") if len(kinds) == 1 else "name / question"
    group_header = {"conversation": "tags", "qa": "template"}.get(next(iter(kinds)), "group") if len(kinds) == 1 else "tags / template"
    columns = [
        Column("id", lambda r: r.case.id, 24),
        Column(name_header, lambda r: r.case.name, 40, wrap=True),
        Column(group_header, lambda r: ", ".join(r.case.groups), 18, wrap=True),
    ]
    if "conversation" in kinds:
        columns.append(Column("user message", _user_messages, 40, wrap=True))
    columns += [
        Column("status", lambda r: r.status, 10),
        Column("error", lambda r: r.error, 30, wrap=True),
    ]
    if has_indicator:
        columns += [
            Column("macro recall", lambda r: r.macro_recall, 10, styles.SCORE_FORMAT, score=True),
            Column("macro precision", lambda r: r.macro_precision, 10, styles.SCORE_FORMAT, score=True),
            Column(
                "indicator selection details",
                lambda r: render_indicator_details(r, templates_dir=templates_dir),
                60,
                wrap=True,
            ),
            Column("datasets", _datasets, 30, wrap=True),
        ]
    if has_steps:
        columns += [
            Column("steps score", qa_number("steps_score"), 10, styles.SCORE_FORMAT, score=True),
            Column("steps details", lambda r: render_steps_details(r, templates_dir=templates_dir), 60, wrap=True),
        ]
    if has_answers:
        columns += [
            Column("reference answer", qa_text("reference_answer"), 40, wrap=True),
            Column("actual answer", qa_text("actual_answer"), 50, wrap=True),
            Column("answer recall", qa_number("answer_recall"), 10, styles.SCORE_FORMAT, score=True),
            Column("answer precision", qa_number("answer_precision"), 10, styles.SCORE_FORMAT, score=True),
            Column("answer F1", qa_number("answer_f1"), 10, styles.SCORE_FORMAT, score=True),
            Column("answer relevance", qa_number("answer_relevance"), 10, styles.SCORE_FORMAT, score=True),
            Column("relevance questions", _relevance_questions, 40, wrap=True),
            Column("judge reason", qa_text("answer_correctness_reason"), 40, wrap=True),
            Column("judge errors", _judge_errors, 30, wrap=True),
        ]
    if has_tokens:
        columns += [
            Column("input tokens", _response_number("input_tokens"), 12, styles.INTEGER_FORMAT),
            Column("output tokens", _response_number("output_tokens"), 12, styles.INTEGER_FORMAT),
            Column("total tokens", _response_number("total_tokens"), 12, styles.INTEGER_FORMAT),
            Column("elapsed sec", _response_number("elapsed_sec"), 10, styles.SECONDS_FORMAT),
        ]
    return columns


def write_overview(
    ws: Worksheet,
    results: Sequence[CaseResult],
    *,
    templates_dir: str | None = None,
    details_rows: Mapping[str, int] | None = None,
    change_rows: Mapping[str, int] | None = None,
    comparison: Comparison | None = None,
) -> dict[str, int]:
    """Fill the sheet; returns the row of each case id (for links from other sheets).

    With a comparison, a `vs baseline` column says how each case changed and links to its first
    line in the Changes sheet; the id links to the case's rows in Details.
    """
    columns = overview_columns(results, templates_dir=templates_dir)
    if comparison is not None:
        verdicts = _change_verdicts(comparison)
        columns.insert(_index_of(columns, "status"), Column("vs baseline", lambda r: verdicts.get(r.case.id), 16))
    for index, column in enumerate(columns, start=1):
        write(ws, 1, index, column.header)
    styles.style_header_row(ws, 1, 1, len(columns))
    status_column = _index_of(columns, "status")
    change_column = _index_of(columns, "vs baseline") if comparison is not None else None
    longest = [max(len(word) for word in c.header.split()) + 3 for c in columns]
    rows: dict[str, int] = {}
    for row, result in enumerate(results, start=2):
        rows.setdefault(result.case.id, row)
        tallest = 1
        for index, column in enumerate(columns, start=1):
            value = column.value(result)
            if value is None or value == "":
                continue  # an empty cell stays out of the file, styles and all: 10,000 rows add up
            cell = write(ws, row, index, value, where_full="Details sheet")
            if column.number_format:
                cell.number_format = column.number_format
            cell.alignment = styles.WRAP_TOP if column.wrap else styles.TOP
            if isinstance(cell.value, str):
                if column.wrap:
                    tallest = max(tallest, styles.display_lines(cell.value, column.width))
                longest[index - 1] = max(longest[index - 1], _longest_line(cell.value) + 2)
            elif isinstance(cell.value, (int, float)):
                longest[index - 1] = max(longest[index - 1], 8)
        ws.cell(row=row, column=status_column).fill = styles.STATUS_FILLS.get(
            result.status, styles.STATUS_FILLS["invalid"]
        )
        if details_rows and result.case.id in details_rows:
            styles.link(ws.cell(row=row, column=1), "Details", f"A{details_rows[result.case.id]}",
                        tooltip="this case in Details")
        if change_column and change_rows and result.case.id in change_rows:
            change = ws.cell(row=row, column=change_column)
            styles.link(change, "Changes", f"A{change_rows[result.case.id]}", tooltip="this case in Changes")
            kind = str(change.value or "").split(",")[0]
            if kind in CHANGE_STYLES:
                change.fill, change.font = CHANGE_STYLES[kind]
        ws.row_dimensions[row].height = styles.row_height_for(tallest)
    last_row = max(1, len(results) + 1)
    # widths that fit: as wide as the content, but never wider than the column's reading width
    styles.set_widths(ws, {i: min(c.width, max(longest[i - 1], 8)) if c.wrap else min(max(c.width, 40), longest[i - 1])
                           for i, c in enumerate(columns, start=1)})
    for index, column in enumerate(columns, start=1):
        if column.score and len(results):
            letter = get_column_letter(index)
            styles.score_colour_scale(ws, f"{letter}2:{letter}{last_row}")
    styles.finish_table_sheet(ws, columns=len(columns), rows=last_row, fit_width=False)  # too wide to shrink
    return rows


CHANGE_STYLES = {
    "regression": (styles.REGRESSION_FILL, styles.REGRESSION_FONT),
    "improvement": (styles.IMPROVEMENT_FILL, styles.IMPROVEMENT_FONT),
    "test changed": (styles.NEUTRAL_FILL, styles.NEUTRAL_FONT),
}


def _change_verdicts(comparison: Comparison) -> dict[str, str]:
    """Per case: its kinds of change in display order ("regression, improvement")."""
    kinds: dict[str, list[str]] = {}
    for change in comparison.changes:
        seen = kinds.setdefault(change.case_id, [])
        if change.kind not in seen:
            seen.append(change.kind)
    return {case_id: ", ".join(found) for case_id, found in kinds.items()}


def _longest_line(text: str) -> int:
    return max((len(line) for line in text.split("\n")), default=0)


def _index_of(columns: Sequence[Column], header: str) -> int:
    return next(i for i, c in enumerate(columns, start=1) if c.header == header)
