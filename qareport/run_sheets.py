"""The stored-run format (`runs.py`) written as the workbook's hidden sheets: `stored_run_tables`,
which the workbook writer lays out, and the run's key-value facts (`run_metadata`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from enum import Enum
from typing import TYPE_CHECKING, Any

from qareport.case_record import CaseRow
from qareport.case_rows import ATTEMPTS_FIELD, case_fields
from qareport.headline import status_counts
from qareport.records import OptionsUsed
from qareport.run_reviews import REVIEWS_FIELDS, REVIEWS_SHEET, stored_review_rows
from qareport.runs import (
    CARRIED_FIELDS,
    CARRIED_SHEET,
    CHANGE_FIELDS,
    CHANGES_SHEET,
    RESULTS_SHEET,
    RUN_FORMAT,
    RUN_SHEET,
    encode_case_value,
    json_text,
    spread_row,
    stored_case_values,
)
from qareport.stored_digest import digest_to_json

if TYPE_CHECKING:
    from qareport.report import Report


@dataclass(frozen=True, slots=True)
class StoredTable:
    """One hidden sheet of the workbook: its name, header and rows of plain values (the cases'
    rows encoded one at a time each time they are read: `EncodedCaseRows`)."""

    sheet: str
    header: tuple[str, ...]
    rows: Iterable[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class EncodedCaseRows:
    """The cases' stored rows, each encoded as it is read and dropped once written: every row is
    a copy of its case's values (encoded all at once, 20 MB at 10,000 cases). A value too long
    for a cell (1,500 attempts' values) continues after the row's last column (`spread_row`)."""

    rows: Sequence[CaseRow]
    fields: tuple[str, ...]

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        for row in self.rows:
            values = stored_case_values(row)
            yield spread_row([encode_case_value(field, values.get(field)) for field in self.fields], self.fields)


MAX_SHEET_ROWS = 1_048_576  # rows of an Excel worksheet, the header's included


def details_row_count(report: Report) -> int:
    """The Details sheet's rows, its header's included."""
    return 1 + sum(len(rows) for case in report.details for _, rows in case.blocks)


def listed_problems(report: Report) -> int:
    """How many of the run's problems the Problems sheet lists: below its header and the sentences
    saying what was cut (the Details sheet, and the Problems sheet itself when it is full)."""
    limit, problems = MAX_SHEET_ROWS, len(report.problems)
    said = 1 if details_row_count(report) > limit else 0
    if 1 + said + problems <= limit:
        return problems
    return max(0, limit - 2 - said)


def cut_sheets(report: Report) -> dict[str, str]:
    """The sheets whose rows do not all fit a worksheet (`MAX_SHEET_ROWS`), each with a sentence
    saying how many rows were left out and where what they hold is still found."""
    limit = MAX_SHEET_ROWS
    cut: dict[str, str] = {}
    details = details_row_count(report)
    if details > limit:
        cut["Details"] = (f"the Details sheet holds {limit - 1:,} of its {details - 1:,} rows (a worksheet holds "
                          f"{limit:,}): the last {details - limit:,} are left out; every case's facts are in the "
                          f"stored results (the hidden '{RESULTS_SHEET}' sheet and the --results file)")
    problems = len(report.problems)
    shown = listed_problems(report)
    if shown < problems:
        cut["Problems"] = (f"the Problems sheet lists {shown:,} of the {problems:,} problems (a worksheet "
                           f"holds {limit:,} rows): the other {problems - shown:,} are left out of the workbook "
                           f"and are listed where the run reports its problems (the console)")
    return cut


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
    pairs += [(f"alert.cut.{sheet}", text) for sheet, text in cut_sheets(report).items()]
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
    pairs += run.judge_identity.pairs() if run.judge_identity is not None else []
    for metric in report.judged:
        pairs += [(f"judged.{metric.key}.{field}", getattr(metric, field))
                  for field in ("label", "mean", "judged", "failed", "not_judged", "not_applicable")]
        if (partial := metric.partial_words()) is not None:  # only when partial: a full run's facts are as before
            pairs.append((f"judged.{metric.key}.partial", partial))
    pairs += [(f"not_evaluated.{family}", why) for family, why in sorted(run.not_evaluated.items())]
    for index, given in enumerate(run.inputs, start=1):
        pairs += [
            (f"input.{index}.role", given.role),
            (f"input.{index}.path", given.path),
            (f"input.{index}.files", given.files),
            (f"input.{index}.records", given.records),
            (f"input.{index}.sha256", given.sha256),
        ]
    pairs += [(f"option.{key}", value if isinstance(value, (int, float, str)) else json_text(value))
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


def stored_run_tables(report: Report) -> list[StoredTable]:
    """The hidden sheets of a workbook, in order: cases, the run's facts, its changes, the cases it
    could not load (with their rows when last seen), its reviews.
    No value is cut at a cell's limit: a longer text continues after its row's last column
    (`spread_row`; the reviews sheet has a row per part instead)."""
    fields = case_fields(report.kinds)
    if any(row.attempts is not None for row in report.rows):  # `stored_case_values` writes them
        fields = (*fields, ATTEMPTS_FIELD)
    tables = [
        StoredTable(RESULTS_SHEET, fields, EncodedCaseRows(report.rows, fields)),
        StoredTable(RUN_SHEET, ("key", "value"), tuple(spread_row(pair, ("key", "value"))
                                                       for pair in run_metadata(report))),
    ]
    if report.comparison is not None:
        tables.append(StoredTable(CHANGES_SHEET, CHANGE_FIELDS, tuple(
            spread_row([getattr(change, field) for field in CHANGE_FIELDS], CHANGE_FIELDS)
            for change in report.comparison.changes
        )))
    if report.carried:  # only then, so a run that loaded every case keeps the sheets it always had
        tables.append(StoredTable(CARRIED_SHEET, CARRIED_FIELDS, tuple(
            spread_row([item.row.case_id, item.last_seen, item.not_loaded, json_text(stored_case_values(item.row))],
                       CARRIED_FIELDS)
            for item in report.carried
        )))
    if report.reviews or report.kept_reviews:
        tables.append(StoredTable(REVIEWS_SHEET, REVIEWS_FIELDS, tuple(stored_review_rows(report))))
    return tables
