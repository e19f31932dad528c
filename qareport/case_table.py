"""Each case's values for the Overview and the Details sheets, computed once into the report model.

`build_report` calls `overview_table` and `details_table` before any writer runs; the sheets only
lay the values out (fitting texts to a cell, widths, heights, styles). A metric column
(`Column.metric`) takes the case's value from its case row, where `RunKinds.case_metrics` put it
once; any other column's `value` is called once per case, here.

The Overview's columns come in the order of a reader's questions (see `workbook.overview`):

    who and how it went    id, name, status
    how good               the headline score columns of every kind the run has
    why                    reason
    against last week      vs baseline (with a baseline)
    the analyst's review   review, review note
    how steady             attempts passed, spread, flaky (with attempts)
    the numbers behind     the kinds' other number columns
    the test               comments, tags / template, user message, error
    the long texts         the kinds' text columns; then tokens and time
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qareport.case_record import CaseRow
from qareport.comparison import Comparison
from qareport.consistency import CaseConsistency
from qareport.kinds import CellFormat, Column, ColumnPlace, Kind, RunKinds
from qareport.records import USAGE_FIELDS, CaseResult, Review

USAGE_COLUMNS: dict[str, tuple[str, float, CellFormat]] = {  # header, width, format of each usage field
    "input_tokens": ("input tokens", 11, "integer"),
    "output_tokens": ("output tokens", 11, "integer"),
    "total_tokens": ("total tokens", 11, "integer"),
    "elapsed_sec": ("elapsed sec", 9, "seconds"),
}
REASON, VS_BASELINE, REVIEW, REVIEW_NOTE = "reason", "vs baseline", "review", "review note"
NO_REVIEW = Review()

DETAILS_HEADERS = ("case id", "tags / template", "turn", "dimension", "verdict", "term id", "term name",
                   "selected label", "score", "reason")
MATCHED_BY = "matched by"  # a column of its own when a term was matched by its name only or its id only


@dataclass(frozen=True, slots=True)
class CaseTable:
    """The Overview's columns for this run and each case's values in them, in the cases' order."""

    columns: tuple[Column, ...]
    values: tuple[tuple[Any, ...], ...]


def overview_table(results: Sequence[CaseResult], rows: Sequence[CaseRow], kinds: RunKinds, *,
                   reasons: Mapping[str, str], comparison: Comparison | None, reviews: Mapping[str, Review],
                   consistency: Mapping[str, CaseConsistency], templates_dir: str | None,
                   judge: bool = False, kept: Collection[str] = ()) -> CaseTable:
    """Every case's Overview values, each computed once (a metric from the case's row)."""
    columns = overview_columns(results, kinds, reasons=reasons, comparison=comparison, reviews=reviews,
                               consistency=consistency, templates_dir=templates_dir, judge=judge, kept=kept)
    return CaseTable(columns, tuple(
        tuple(row.metric(column.metric) if column.metric else column.value(result) for column in columns)
        for result, row in zip(results, rows)))


def overview_kinds(kinds: RunKinds, results: Sequence[CaseResult], *, kept: Collection[str],
                   templates_dir: str | None) -> RunKinds:
    """The kinds whose columns the Overview shows: those the run has (`RunKinds.present_in`), and a
    kind of the set it lacks this week whose columns the baseline's Overview had (`kept`), so that
    none of its columns disappears between two weeks."""
    present = kinds.present_in(results)
    if not kept:
        return present
    return RunKinds(tuple(kind for kind in kinds if kind in present.kinds or any(
        column.header in kept for column in kind.overview_columns(results, templates_dir=templates_dir))))


def overview_columns(results: Sequence[CaseResult], kinds: RunKinds, *, reasons: Mapping[str, str],
                     comparison: Comparison | None, reviews: Mapping[str, Review],
                     consistency: Mapping[str, CaseConsistency], templates_dir: str | None,
                     judge: bool = False, kept: Collection[str] = ()) -> tuple[Column, ...]:
    """The columns for this run, in scanning order (see the module docstring).

    The set follows from the suite (its cases' kinds and targets) and the run's options (`judge`: a
    judge was configured), never from what this week's responses hold, so a column's letter stays
    from week to week; `kept`, the baseline's Overview headers, keeps a column that last week had
    (empty now) so that none disappears between two weeks."""
    case_kinds = {r.case.kind for r in results}
    by_place: dict[str, list[Column]] = {"score": [], "number": [], "text": []}
    for kind in kinds:
        for column in kind.overview_columns(results, templates_dir=templates_dir):
            if not column.judge or judge or column.header in kept:
                by_place[_place(column, kinds)].append(column)
    name_header, group_header = _case_headers(case_kinds)
    columns = [
        Column("id", lambda r: r.case.id, 24),
        Column(name_header, lambda r: r.case.name, 30, wrap=True),
        Column("status", lambda r: r.status, 9),
        *by_place["score"],
        Column(REASON, lambda r: reasons.get(r.case.id), 50, wrap=True),
    ]
    if comparison is not None:
        verdicts = change_verdicts(comparison)
        columns.append(Column(VS_BASELINE, lambda r: verdicts.get(r.case.id), 13))
    columns += [
        Column(REVIEW, lambda r: reviews.get(r.case.id, NO_REVIEW).verdict, 13),
        Column(REVIEW_NOTE, lambda r: reviews.get(r.case.id, NO_REVIEW).note, 30, wrap=True),
        # after the review, so id to review note fits one screen
        *_attempt_columns(consistency, kept="attempts passed" in kept),
        *by_place["number"],
    ]
    if any(r.case.comments for r in results):
        columns.append(Column("comments", lambda r: r.case.comments or None, 30, wrap=True))
    # one line: filtered, not read
    columns.append(Column(group_header, lambda r: ", ".join(r.case.groups), 30, place="text"))
    if "conversation" in case_kinds:
        columns.append(Column("user message", _user_messages, 40, wrap=True))
    columns.append(Column("error", lambda r: r.error, 30, wrap=True))
    columns += by_place["text"]
    # a Q&A suite's responses report tokens and time (graphrag-eval's format); another suite's columns
    # come with the first week that reports them and then stay (`kept`)
    if ("qa" in case_kinds or USAGE_COLUMNS["total_tokens"][0] in kept
            or any(r.response and r.response.total_tokens is not None for r in results)):
        columns += [Column(USAGE_COLUMNS[field][0], _response_number(field), USAGE_COLUMNS[field][1],
                           USAGE_COLUMNS[field][2]) for field in USAGE_FIELDS]
    return tuple(columns)


def _attempt_columns(seen: Mapping[str, CaseConsistency], *, kept: bool) -> list[Column]:
    """For a run with cases answered several times: how many attempts passed ("2/3"), the spread of
    the case's main metric over its attempts (highest less lowest), and `flaky` when its attempts
    disagree (`consistency`); none for a run without attempts, unless the baseline had them (`kept`)."""
    if not seen and not kept:
        return []
    return [
        Column("attempts passed", lambda r: c.passed_text if (c := seen.get(r.case.id)) else None, 9),
        Column("spread", lambda r: c.spread if (c := seen.get(r.case.id)) else None, 8, "score"),
        Column("flaky", lambda r: "flaky" if (c := seen.get(r.case.id)) and c.flaky else None, 7),
    ]


def _case_headers(case_kinds: Collection[str]) -> tuple[str, str]:
    """The name and group columns' headers: the words of the one kind of case the run has, else both."""
    if len(case_kinds) != 1:
        return "name / question", "tags / template"
    only = next(iter(case_kinds))
    return ({"conversation": "name", "qa": "question"}.get(only, "name"),
            {"conversation": "tags", "qa": "template"}.get(only, "group"))


def _place(column: Column, kinds: RunKinds) -> ColumnPlace:
    """A kind's column's place; a score column with a headline metric's label leads."""
    if column.place is None and column.score and column.header in _headline_labels(kinds):
        return "score"
    return column.where


def _headline_labels(kinds: RunKinds) -> set[str]:
    return {metric.label for metric in kinds.all_metrics() if metric.headline}


def _response_number(field: str) -> Callable[[CaseResult], float | None]:
    def value(result: CaseResult) -> float | None:
        return getattr(result.response, field) if result.response is not None else None

    return value


def _user_messages(result: CaseResult) -> str:
    if len(result.case.turns) == 1:
        return result.case.turns[0].user_message
    return "\n".join(f"Turn {t.number}: {t.user_message}" for t in result.case.turns)


def change_verdicts(comparison: Comparison) -> dict[str, str]:
    """Per case: its kinds of change in display order ("regression, improvement")."""
    found: dict[str, list[str]] = {}
    for change in comparison.changes:
        seen = found.setdefault(change.case_id, [])
        if change.kind not in seen:
            seen.append(change.kind)
    return {case_id: ", ".join(names) for case_id, names in found.items()}


def detail_rows(kinds: Iterable[Kind], result: CaseResult, reason: str | None = None) -> Iterator[tuple[Any, ...]]:
    """The case's Details rows: each kind's rows (`Kind.details_rows`) after the case id and its
    groups. A case no kind has rows for gets one row with its status and reason, so that every case
    has a block its Overview id can lead to."""
    head = (result.case.id, ", ".join(result.case.groups))
    for row in _kind_rows(kinds, result, reason):
        yield _full_row(head, row)


def _kind_rows(kinds: Iterable[Kind], result: CaseResult, reason: str | None) -> Iterator[tuple[Any, ...]]:
    """The case's Details rows without the case id and groups, as the kinds give them (not padded)."""
    given = False
    for kind in kinds:
        for row in kind.details_rows(result):
            given = True
            yield row
    if not given:
        yield None, "(case)", result.status, None, reason or None


def _full_row(head: tuple[str, str], row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*head, *row, *[None] * (len(DETAILS_HEADERS) - 2 - len(row)))


DetailsRow = tuple[int | None, tuple[Any, ...]]
"""A Details row: the attempt it describes (None for a case answered once) and its values."""


@dataclass(frozen=True, slots=True)
class CaseDetails:
    """One case's Details rows, computed once and held compactly: the case id and its groups once,
    and each row as its kind gave it (not padded), in blocks of one attempt each (attempt None for
    a case answered once). `rows` gives them as the sheet writes them, one at a time."""

    head: tuple[str, str]  # the case id and its groups, the first two values of every row
    blocks: tuple[tuple[int | None, tuple[tuple[Any, ...], ...]], ...]

    def rows(self) -> Iterator[DetailsRow]:
        """Each row: the attempt it describes and its values (padded to the Details headers)."""
        for attempt, rows in self.blocks:
            for row in rows:
                yield attempt, _full_row(self.head, row)


def details_table(kinds: RunKinds, results: Sequence[CaseResult], reasons: Mapping[str, str], *,
                  kind_set: RunKinds | None = None) -> tuple[CaseDetails, ...]:
    """Every case's Details rows, in the cases' order, each computed once: a case answered several
    times has one block of rows per attempt. Rows are held without their trailing empty values (the
    sheet writes nothing for them), and rows equal to one held before are that one (a dataset's
    `TP` row, a grade with the same reason), so holding every case's rows costs little. An
    attempt's reason is said by `kind_set`, the run's set of kinds (None: `kinds`)."""
    shared: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    said_by = kind_set if kind_set is not None else kinds
    return tuple(_case_details(kinds, result, reasons, shared, said_by) for result in results)


def _case_details(kinds: RunKinds, result: CaseResult, reasons: Mapping[str, str],
                  shared: dict[tuple[Any, ...], tuple[Any, ...]], said_by: RunKinds) -> CaseDetails:
    head = (result.case.id, ", ".join(result.case.groups))
    if not result.attempts:
        rows = _kind_rows(kinds, result, reasons.get(result.case.id))
        return CaseDetails(head, ((None, tuple(_compact(row, shared) for row in rows)),))
    return CaseDetails(head, tuple(
        (attempt.attempt, tuple(_compact(row, shared) for row in _kind_rows(kinds, attempt,
                                                                            said_by.case_reason(attempt))))
        for attempt in result.attempts))


def _compact(row: tuple[Any, ...], shared: dict[tuple[Any, ...], tuple[Any, ...]]) -> tuple[Any, ...]:
    """The row without its trailing Nones, and the one held before when an equal row was."""
    end = len(row)
    while end and row[end - 1] is None:
        end -= 1
    if end < len(row):
        row = row[:end]
    try:
        return shared.setdefault(row, row)
    except TypeError:  # a value that cannot be hashed: kept as it is
        return row
