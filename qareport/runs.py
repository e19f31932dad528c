"""Stored runs: the one format a run is kept in (its names, its case-row cells, and reading back what
an analyst may have edited), written and read back by the `run_*` modules and `results_file.py` only.

A run is kept as one flat row per case (`stored_case_values` of each `CaseRow` of `case_rows.case_rows`,
read back by `case_row_from_stored`: who the case is, the metrics of the run's kinds, token usage),
a few key-value facts about the run (`run_sheets.run_metadata`), and, when it was
compared with a baseline, its changes. Two containers hold that format, and either can be a later run's
baseline or a point of its trend:

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

The modules of the format, each one concept: `run_sheets.py` (the hidden sheets, which the workbook
writer lays out: `stored_run_tables`), `results_file.py`, `run_reviews.py` (the reviews, read from the
Overview and stored whole), `run_reading.py` (a run read back, and a history of runs). Reading a
workbook back uses python-calamine (values only: what is stored is values, and it reads a large
sheet several times faster than openpyxl). Reading never trusts the file: a value of another type than the format
holds (an analyst's edit) is converted when that is unambiguous and otherwise left out, with a problem
naming sheet and cell.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from qareport import kinds
from qareport.case_record import CaseRow, Derived, Figures
from qareport.case_rows import ATTEMPTS_FIELD, CASE_HEAD_FIELDS
from qareport.errors import BaselineError
from qareport.headline import STATUSES
from qareport.id_text import normalise_id
from qareport.judge.json_depth import load_json, nesting_depth
from qareport.judge_agreement import stored_judgments
from qareport.kinds import RunKinds, catalogue
from qareport.records import USAGE_FIELDS, Location, Problem

RESULTS_SHEET = "qareport_results"
RUN_SHEET = "qareport_run"
CHANGES_SHEET = "qareport_changes"
CARRIED_SHEET = "qareport_carried"  # cases the run could not load, with their rows when last seen
CARRIED_FIELDS = ("case_id", "last_seen", "not_loaded", "row")  # the row as its stored values' JSON
DATA_SHEETS = (RESULTS_SHEET, RUN_SHEET, CHANGES_SHEET, CARRIED_SHEET)
OVERVIEW_SHEET = "Overview"  # visible, but its header row is read back: a later run keeps its columns
RUN_FORMAT = "qareport-run/1"
CHANGE_FIELDS = ("kind", "case_id", "name", "metric", "old", "new", "delta", "old_status", "new_status", "reason")
LIST_FIELDS = ("groups", "targets")
JSON_FIELDS = ("facts", "outputs", "dimensions", "judged")
"""Mappings, kept as JSON text in a cell; outputs: `side_by_side.case_outputs`; dimensions: each target
dimension's precision and recall (`dimension_scores`); judged: the case's judged metrics and their
values (`judge_agreement.case_judgments`), so the judge can be checked against the reviews of earlier
runs."""
WORKBOOK_SUFFIXES = (".xlsx",)
RESULTS_SUFFIXES = (".yaml", ".yml", ".json")
RUN_SUFFIXES = (*WORKBOOK_SUFFIXES, *RESULTS_SUFFIXES)


def _stored_attempts(raw: Any) -> dict[str, list[float | None]] | None:
    """A stored case's attempt values, whatever an edit left: per metric, each attempt's finite
    number (as a metric's column holds it: an answer relevance, a cosine, can be below 0) or None (an
    attempt without a value, as written); a metric without a number is left out. None when no metric
    is left: a case answered once, or one whose attempts have no value (a cell holds both as {})."""
    if not isinstance(raw, dict):
        return None
    def finite(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

    kept = {str(metric): [None if v is None else float(v) for v in values if v is None or finite(v)]
            for metric, values in raw.items() if isinstance(values, list)}
    return {metric: values for metric, values in kept.items() if any(v is not None for v in values)} or None


def stored_case_values(row: CaseRow) -> dict[str, Any]:
    """A case row as a stored run keeps it, JSON-ready: `case_fields()` in the order a results file's
    case row has them (the metrics in the row's order), then `attempts` when the case has them. The
    one way from a `CaseRow` to the stored format; `case_row_from_stored` is the way back."""
    values: dict[str, Any] = {
        "case_id": row.case_id, "kind": row.kind, "name": row.name, "groups": list(row.groups),
        "cluster": row.cluster, "status": row.status, "error": row.error, "definition_hash": row.definition_hash or "",
        "file": row.file, "reason": row.reason, "targets": None if row.targets is None else list(row.targets),
        "facts": {kind: {name: list(items) for name, items in facts.items()} for kind, facts in row.facts.items()},
        "outputs": dict(row.outputs), "judged": dict(row.judged),
        "dimensions": {name: dict(scores) for name, scores in row.dimensions.items()},
        **row.metrics,
        **{key: row.usage.get(key) for key in USAGE_FIELDS},
    }
    if row.attempts is not None:
        values[ATTEMPTS_FIELD] = {metric: list(each) for metric, each in row.attempts.items()}
    return values


def encode_case_value(field: str, value: Any) -> Any:
    """A case-row value as a cell holds it (lists as JSON text)."""
    if field in LIST_FIELDS:
        return json.dumps(list(value or []), ensure_ascii=False)
    if field in (*JSON_FIELDS, ATTEMPTS_FIELD):
        return json.dumps(value or {}, ensure_ascii=False, sort_keys=True)
    return value


PART = 30_000  # characters a stored part holds (a cell holds 32,767)
PART_LINES = 250  # line breaks a stored part holds (a cell holds 253)


def text_parts(text: str) -> list[str]:
    """A text in pieces that each fit a cell and that join back to it exactly ("".join)."""
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + PART)
        if text.count("\n", start, end) > PART_LINES:
            breaks = [index for index in range(start, end) if text[index] == "\n"]
            end = breaks[PART_LINES - 1] + 1
        pieces.append(text[start:end])
        start = end
    return pieces


def fits_a_cell(value: Any) -> bool:
    """Whether a stored value is one cell's worth (`text_parts` gives one piece)."""
    return not isinstance(value, str) or (len(value) <= PART and value.count("\n") <= PART_LINES)


def spread_row(values: Sequence[Any], header: Sequence[str]) -> tuple[Any, ...]:
    """A row of stored values with every text too long for one cell split: its first part in its
    column, each further part after the row's last column as a pair of cells (the column's name,
    the part). A row whose values all fit is returned as it is."""
    if all(fits_a_cell(value) for value in values):
        return tuple(values)
    row: list[Any] = []
    spilled: list[Any] = []
    for name, value in zip(header, values):
        if fits_a_cell(value):
            row.append(value)
            continue
        first, *rest = text_parts(value)
        row.append(first)
        for part in rest:
            spilled += [name, part]
    return (*row, *spilled)


def gather_row(values: Sequence[Any], header: Sequence[str]) -> list[Any]:
    """A stored row's values by column, the parts `spread_row` put after its last column joined back
    to their column's text (a pair whose name is not a column is not the format's: left out)."""
    width = len(header)
    row = list(values[:width])
    row += [None] * (width - len(row))
    extra = values[width:]
    columns = {name: index for index, name in enumerate(header) if name}
    for at in range(0, len(extra) - 1, 2):
        name, part = extra[at], extra[at + 1]
        index = columns.get(name) if isinstance(name, str) else None
        if index is not None and isinstance(part, str) and isinstance(row[index], str):
            row[index] += part
    return row


STORED_DEPTH = 200
"""Levels of arrays and objects a stored JSON cell may nest: a run's inputs nest at most 100
(`json_input.MAX_DEPTH`) and what it stores wraps them in a few more. Deeper, `json.loads` could
run out of stack (RecursionError), so such a value is left out unread (`too_deep`)."""


def too_deep(value: Any) -> bool:
    """Whether a stored cell's JSON text nests deeper than STORED_DEPTH (counted without parsing)."""
    return (isinstance(value, str) and value.count("[") + value.count("{") > STORED_DEPTH
            and nesting_depth(value) > STORED_DEPTH)


def load_stored_json(text: str) -> Any:
    """`json.loads` of a stored text, or TooDeep (a ValueError) when it nests deeper than STORED_DEPTH."""
    return load_json(text, max_depth=STORED_DEPTH)


def _from_json(value: Any, *, fallback: Callable[[str], Any]) -> Any:
    """A value stored as JSON text in a cell; `fallback(text)` when the text is not JSON."""
    if not isinstance(value, str):
        return value
    try:
        return load_stored_json(value)
    except ValueError:  # not JSON (an edit), or nested too deep (`clean_case_values` said so)
        return fallback(value)


def _stored_outputs(value: Any) -> dict[str, Any]:
    """A case's stored outputs (`side_by_side.case_outputs`); {} for anything but a mapping."""
    outputs = _from_json(value, fallback=lambda text: {})
    return outputs if isinstance(outputs, dict) else {}


def _texts(raw: Any) -> tuple[str, ...]:
    """A list stored as JSON text (or, edited, as comma-separated text), as texts."""
    raw = _from_json(raw, fallback=lambda text: [part.strip() for part in text.split(",") if part.strip()])
    return tuple(str(item) for item in raw if not isinstance(item, (list, dict))) if isinstance(raw, list) else ()


def _text(value: Any) -> str | None:
    """A stored text: None for an empty cell, an empty text, or a value that is no text (which
    `clean_case_values` has converted where that was unambiguous)."""
    return value if isinstance(value, str) and value else None


def _number(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def case_row_from_stored(values: Mapping[str, Any], kind_set: RunKinds | None = None) -> CaseRow:
    """A case row from cells (or from a results file's case row), once `clean_case_values` has given
    each value its type; its metrics are those of `kind_set` (the reading run's; None: the
    catalogue's). A field the stored run lacks is None (a metric, a usage field, the targets of
    a run stored before runs kept them) or empty (the mappings); nothing is filled in."""
    outputs = values.get("outputs")
    return CaseRow(
        case_id=stored_case_id(values.get("case_id")) or "",
        kind=_text(values.get("kind")),
        name=_text(values.get("name")),
        groups=_texts(values.get("groups")),
        cluster=_text(values.get("cluster")),
        status=_text(values.get("status")),
        error=_text(values.get("error")),
        definition_hash=_text(values.get("definition_hash")),
        file=_text(values.get("file")),
        reason=_text(values.get("reason")),
        targets=None if values.get("targets") is None else _texts(values.get("targets")),
        facts=_facts(_from_json(values.get("facts"), fallback=lambda text: {})),
        # parsed when read: only the cases that moved are shown side by side (`side_by_side`)
        outputs=Derived(_stored_outputs, outputs) if isinstance(outputs, str) else _stored_outputs(outputs),
        judged=stored_judgments(_from_json(values.get("judged"), fallback=lambda text: {})),
        dimensions=_dimensions(_from_json(values.get("dimensions"), fallback=lambda text: {})),
        metrics=Figures({key: _number(values.get(key))
                         for key in _metric_keys(kinds.catalogue() if kind_set is None else kind_set)}),
        usage=Figures({key: _number(values.get(key)) for key in USAGE_FIELDS}),
        attempts=_stored_attempts(_from_json(values.get(ATTEMPTS_FIELD), fallback=lambda text: {})),
    )


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
    """Each kind's facts (named lists of short items, `kinds.case_facts`), whatever an edit left;
    the texts interned, as a run's own are: they recur across cases and between a case's lists."""
    if not isinstance(raw, dict):
        return {}
    return {str(kind): {str(name): [sys.intern(str(item)) for item in items if not isinstance(item, (list, dict))]
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


def ignore_problem(problem: Problem) -> None:
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


def dropped_problem(target: Path, where: str, what: str, expected: Expected, value: Any) -> Problem:
    return Problem(Location(str(target)),
                   f"{where}: {what} must be {_EXPECTED_WORDS[expected]} (got {_shown(value)}); left out, the "
                   "rest of the stored run is still read (restore the value qareport wrote, or clear the cell)")


def column_letter(column: int) -> str:
    """A column's letters (1 -> A, 27 -> AA)."""
    letters = ""
    while column:
        column, rest = divmod(column - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def case_value_types(kind_set: RunKinds | None = None) -> dict[str, Expected]:
    """What each case-row field holds (the metrics of `kind_set`; None: the catalogue's); lists and
    mappings are read by `case_row_from_stored`."""
    return dict(_value_types(kinds.catalogue() if kind_set is None else kind_set))


@functools.lru_cache(maxsize=16)
def _metric_keys(kind_set: RunKinds) -> tuple[str, ...]:
    """The case metrics of a set of kinds, worked out once per set: a stored run's every row asks."""
    return kind_set.case_metric_keys()


@functools.lru_cache(maxsize=16)
def _value_types(kind_set: RunKinds) -> tuple[tuple[str, Expected], ...]:
    types = {field: "text" for field in CASE_HEAD_FIELDS if field not in (*LIST_FIELDS, *JSON_FIELDS)}
    types.update({key: "number" for key in (*_metric_keys(kind_set), *USAGE_FIELDS)})
    return tuple(types.items())


def clean_case_values(values: Mapping[str, Any], *, where: Callable[[str], str], target: Path,
                      on_problem: OnProblem, kinds: RunKinds | None = None) -> dict[str, Any] | None:
    """A stored case row with each value of the type its field holds (see `convert_value`); a value
    that cannot be converted is left out with a problem. None (and a problem) for a row without a
    case id, which nothing could be compared with."""
    cleaned = dict(values)
    for field, expected in _value_types(catalogue() if kinds is None else kinds):
        if field not in cleaned:
            continue
        value = convert_value(cleaned[field], expected)
        if value is BAD:
            on_problem(dropped_problem(target, where(field), f"'{field}'", expected, cleaned[field]))
            value = None
        cleaned[field] = value
    for field in (*LIST_FIELDS, *JSON_FIELDS, ATTEMPTS_FIELD):
        if too_deep(cleaned.get(field)):
            on_problem(Problem(Location(str(target)),
                               f"{where(field)}: '{field}' nests more than {STORED_DEPTH} levels of arrays and "
                               "objects; left out, the rest of the stored run is still read (restore the value "
                               "qareport wrote, or clear the cell)"))
            cleaned[field] = None
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
                             r"|alert\..+|digest\.\d+|not_evaluated\..+|judge\.(model|embedding_model)|judged\..+\.(label|partial))")


def metadata_value_type(key: str) -> Expected | None:
    """What the qareport_run sheet holds under a key (None: any plain value, such as an option)."""
    if _METADATA_COUNTS.fullmatch(key):
        return "count"
    if _METADATA_NUMBERS.fullmatch(key):
        return "number"
    if _METADATA_TEXTS.fullmatch(key):
        return "text"
    return None


def read_metadata(rows: Sequence[tuple[Any, ...]], target: Path, on_problem: OnProblem) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for number, row in enumerate(rows[1:], start=2):
        key = convert_value(row[0] if row else None, "text")
        if not key:
            continue
        value = gather_row(row, ("key", "value"))[1]  # a long text continues after the value (`spread_row`)
        expected = metadata_value_type(key)
        if expected is not None:
            converted = convert_value(value, expected)
            if converted is BAD:
                on_problem(dropped_problem(target, f"sheet '{RUN_SHEET}', cell B{number}", f"'{key}'", expected, value))
                continue
            value = converted
        metadata[key] = value
    return metadata


def json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def stored_case_id(value: Any) -> str | None:
    """A case id read back (a stored case row, an Overview id cell, the reviews sheet), made exactly
    as `loading` makes this run's case ids (text as written, then NFC and trimmed, `id_text`), so that
    both compare alike and a review stays with the case it was typed for."""
    text = convert_value(value, "text")
    text = normalise_id(text) if text else text
    return text if text else None


def read_sheets(target: Path, names: Iterable[str], *,
                first_rows: Iterable[str] = ()) -> dict[str, list[tuple[Any, ...]]]:
    """The values of the named sheets that exist, row by row from cell A1, as openpyxl would read
    them: an empty cell is None, a number without a fraction an int (XlsxWriter writes 3.0 as 3).
    Of the sheets in `first_rows`, only the first row is read (a header row of a long sheet)."""
    from python_calamine import CalamineWorkbook

    if not target.is_file():
        raise BaselineError(f"{target}: no such file")
    try:
        workbook = CalamineWorkbook.from_path(str(target))
        try:
            present = set(workbook.sheet_names)
            read = {name: _even_rows(map(_cell_values, workbook.get_sheet_by_name(name).to_python(
                        skip_empty_area=False))) for name in names if name in present}
            read.update({name: _even_rows(map(_cell_values, workbook.get_sheet_by_name(name).to_python(
                        skip_empty_area=False, nrows=1))) for name in first_rows if name in present})
            return read
        finally:
            workbook.close()
    except Exception as error:  # a damaged or foreign file can fail anywhere inside the reader
        raise BaselineError(f"{target}: cannot read it as an Excel workbook "
                            f"({type(error).__name__}: {error})") from error


_WHOLE = float(2**53)  # beyond it a float is not read as an int: not every whole number is exact there


def _cell_values(row: Sequence[Any]) -> tuple[Any, ...]:
    """A row's values with calamine's conventions turned into openpyxl's (see `read_sheets`)."""
    return tuple(None if value == "" else
                 int(value) if type(value) is float and value.is_integer() and -_WHOLE < value < _WHOLE
                 else value for value in row)


def _even_rows(rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows all as long as the longest."""
    read = [tuple(row) for row in rows]
    width = max((len(row) for row in read), default=0)
    return [row + (None,) * (width - len(row)) if len(row) < width else row for row in read]
