"""The analysts' reviews of a stored run: read from the Overview's review columns and the hidden
`qareport_reviews` sheet, and written whole into that sheet (`stored_review_rows`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qareport.errors import QAReportError
from qareport.kinds import RunKinds
from qareport.records import Location, Problem, Review, RunSnapshot
from qareport.runs import (
    BAD,
    WORKBOOK_SUFFIXES,
    OnProblem,
    case_row_from_stored,
    convert_value,
    ignore_problem,
    json_text,
    load_stored_json,
    read_sheets,
    stored_case_id,
    stored_case_values,
    text_parts,
)

if TYPE_CHECKING:
    from qareport.report import Report


def stored_review_rows(report: Report) -> list[tuple[str, str, int, str]]:
    """The hidden reviews sheet: every review this run carries, whole (a note longer than a cell is
    cut in the Overview, never here), and those kept for cases absent from this run, with the
    case's row when it was last seen."""
    rows = []
    for reviews in (report.reviews, report.kept_reviews):
        for case_id, review in reviews.items():
            texts = [("review", review.verdict), ("review note", review.note)]
            if reviews is report.kept_reviews:
                seen = review.last_seen
                texts.append((LAST_SEEN, json_text(stored_case_values(seen)) if seen is not None else None))
            for field, text in texts:
                if text:
                    rows += [(case_id, field, number, part) for number, part in enumerate(text_parts(text), start=1)]
    return rows


REVIEW_SHEET = "Overview"  # the analyst types reviews into the visible sheet, not into hidden data
REVIEW_HEADERS = ("id", "review", "review note")
REVIEWS_SHEET = "qareport_reviews"  # the reviews as they were carried, whole, and those of absent cases
REVIEWS_FIELDS = ("case_id", "field", "part", "text")
LAST_SEEN = "last seen"  # a reviewed case absent from the run: its row when it was last there
HEADER_SEARCH_ROWS = 10  # the Overview's header is looked for in its first rows (an analyst may add a title)
_OWN_MARKS = re.compile(r"^\u25bc [\d,]+ more (lines|characters|)$"
                        r"|\n?\[\u2026 [\d,]+ more (lines|characters) cut[^\]]*\]$",
                        re.MULTILINE)
"""What qareport itself adds to a cell's text (a cut marker): not part of what the analyst typed."""


def header_key(value: Any) -> str:
    """A column header the way an analyst means it: case, surrounding and doubled spaces aside."""
    return " ".join(str(value).split()).casefold() if value is not None else ""


def read_reviews(path: str | Path, *, on_problem: OnProblem | None = None,
                 kinds: RunKinds | None = None) -> dict[str, Review]:
    """The reviews an analyst typed into a workbook's Overview (`review`, `review note`, headers in
    any case), by case id; where the Overview holds a note qareport had to cut, the whole note kept in
    the hidden reviews sheet; and the reviews kept for cases absent from that run (with the case's
    row when it was last seen). {} for a results file. An Overview with rows but without the review
    columns is said through `on_problem`, and the reviews stored with the run stand in for it.
    `kinds`: the reading run's, which say the metrics of a last-seen row (None: the catalogue's)."""
    target = Path(path)
    report = on_problem or ignore_problem
    if target.suffix.lower() not in WORKBOOK_SUFFIXES:
        return {}
    sheets = read_sheets(target, (REVIEW_SHEET, REVIEWS_SHEET))
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
                seen = load_stored_json(kept[LAST_SEEN])  # TooDeep is a ValueError too
            except ValueError:
                seen = None
        review = Review(kept.get("review") or None, kept.get("review note") or None,
                        last_seen=(case_row_from_stored(seen, kinds) if isinstance(seen, dict) and "case_id" in seen
                                   else None))
        if review:
            reviews[case_id] = review
    return reviews


def read_history_reviews(runs: Sequence[RunSnapshot],
                         kinds: RunKinds | None = None) -> tuple[dict[str, Review], ...]:
    """The reviews typed into each run's workbook (`read_reviews`), in the order of `runs`; {} for a
    results file, or for a workbook that cannot be read again (it was read a moment ago as a run)."""
    found: list[dict[str, Review]] = []
    for run in runs:
        try:
            found.append(read_reviews(run.source, kinds=kinds))
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
    """The hidden reviews sheet: case id -> field -> its text, the parts joined in their order. A
    part given twice (a row copied in the sheet) counts once: the first, as the rows are read."""
    parts: dict[str, dict[str, dict[int, str]]] = {}
    for values in rows[1:]:
        case_id, field, part, text = (*values, None, None, None, None)[:4]
        case_id, field, text = stored_case_id(case_id), convert_value(field, "text"), convert_value(text, "text")
        number = convert_value(part, "count")
        if case_id is None or not field or text is None or number is BAD:
            continue
        parts.setdefault(case_id, {}).setdefault(field, {}).setdefault(number or 0, text)
    return {case_id: {field: "".join(text for _, text in sorted(pieces.items()))
                      for field, pieces in fields.items()}
            for case_id, fields in parts.items()}
