"""Reading a stored run back (`read_run`, `read_report`), from a workbook's hidden sheets or a
results file, and a history of runs (`read_history`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

from qareport import kinds
from qareport.case_changes import CHANGE_KINDS, CaseChange, group_movements
from qareport.case_record import CaseRow
from qareport.comparison import Comparison, HeadlineDelta
from qareport.digest import Digest
from qareport.errors import BaselineError, QAReportError
from qareport.headline import Headline, headline_metrics
from qareport.judge.identity import JudgeIdentity
from qareport.judge.usage import JudgeUsage
from qareport.kinds import RunKinds
from qareport.records import CarriedCase, Location, Problem, RunSnapshot
from qareport.results_file import read_results_file, stated_extras, stated_semantics
from qareport.runs import (
    BAD,
    CARRIED_SHEET,
    CHANGE_FIELDS,
    CHANGES_SHEET,
    DATA_SHEETS,
    OVERVIEW_SHEET,
    RESULTS_SHEET,
    RESULTS_SUFFIXES,
    RUN_FORMAT,
    RUN_SHEET,
    RUN_SUFFIXES,
    WORKBOOK_SUFFIXES,
    Expected,
    OnProblem,
    case_row_from_stored,
    clean_case_values,
    column_letter,
    convert_value,
    dropped_problem,
    gather_row,
    ignore_problem,
    load_stored_json,
    read_metadata,
    read_sheets,
)
from qareport.stored_digest import digest_from_json


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


def read_run(path: str | Path, *, on_problem: OnProblem | None = None, kinds: RunKinds | None = None) -> RunSnapshot:
    """The run a workbook or results file holds; BaselineError when it is not a qareport run.
    `on_problem` hears of each stored value left out because it was edited into something else;
    `kinds`, the reading run's kinds, say which metrics a case row has (None: the catalogue's)."""
    target = Path(path)
    suffix = target.suffix.lower()
    if not target.is_file():
        raise BaselineError(f"{target}: no such file (a baseline is a qareport workbook or results file)")
    if suffix in WORKBOOK_SUFFIXES:
        return read_report(target, on_problem=on_problem, kinds=kinds).snapshot
    if suffix in RESULTS_SUFFIXES:
        return _read_results_file(target, on_problem or ignore_problem, kinds)
    raise BaselineError(
        f"{target}: a baseline must be a qareport workbook (.xlsx) or results file "
        f"({', '.join(RESULTS_SUFFIXES)}), not '{target.suffix or target.name}'"
    )


def _read_results_file(target: Path, on_problem: OnProblem, kinds: RunKinds | None) -> RunSnapshot:
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

        cleaned = clean_case_values(case, where=where, target=target, on_problem=on_problem, kinds=kinds)
        if cleaned is not None:
            rows.append(case_row_from_stored(cleaned, kinds))
    return RunSnapshot(
        source=str(target),
        created=convert_value(about.get("created"), "text") or "",
        qareport_version=convert_value(about.get("version"), "text") or "",
        cases=tuple(rows),
        steps_semantics=stated_semantics(about.get("steps_semantics")),
        acceptable_extras=stated_extras(about.get("acceptable_extras")),
        judge_identity=JudgeIdentity.from_mapping(judge) if isinstance(judge := about.get("judge"), dict) else None,
        partly_judged=_partly_judged(document.get("judge")),
        carried=_carried_in_results(document.get("carried"), target, on_problem, kinds),
    )


def _partly_judged(judge: Any) -> tuple[tuple[str, str], ...]:
    """The judged metrics a results file says were partial (`JudgedMetric.to_dict`); none when it
    says nothing, or something that is not one."""
    metrics = judge.get("metrics") if isinstance(judge, dict) else None
    return tuple((str(metric["key"]), metric["partial"]) for metric in metrics or ()
                 if isinstance(metric, dict) and "key" in metric and isinstance(metric.get("partial"), str)
                 and metric["partial"]) if isinstance(metrics, list) else ()


def _carried_in_results(entries: Any, target: Path, on_problem: OnProblem,
                        kinds: RunKinds | None) -> tuple[CarriedCase, ...]:
    """The results file's `carried` list (`results_file._carried_entry`); an item an edit made
    unreadable is left out with a problem."""
    carried = []
    for index, entry in enumerate(entries if isinstance(entries, list) else [], start=1):
        item = entry if isinstance(entry, dict) else {}

        def where(field: str, index: int = index) -> str:
            return f"'carried' item {index}, 'row', '{field}'"

        found = _carried_case(item.get("row"), item.get("last_seen"), item.get("not_loaded"), where,
                              target, on_problem, kinds)
        if found is None:
            on_problem(Problem(Location(str(target)), f"'carried' item {index}: not a carried case qareport "
                                                      "wrote; left out (the case is compared as a new case)"))
        else:
            carried.append(found)
    return tuple(carried)


def _carried_case(stored: Any, last_seen: Any, not_loaded: Any, where: Callable[[str], str], target: Path,
                  on_problem: OnProblem, kinds: RunKinds | None) -> CarriedCase | None:
    """A carried case from its stored row and dates, None when any of them is not what qareport wrote."""
    last_seen, not_loaded = convert_value(last_seen, "text"), convert_value(not_loaded, "text")
    cleaned = (clean_case_values(stored, where=where, target=target, on_problem=on_problem, kinds=kinds)
               if isinstance(stored, dict) and "case_id" in stored else None)
    if cleaned is None or not isinstance(last_seen, str) or not isinstance(not_loaded, str):
        return None
    return CarriedCase(case_row_from_stored(cleaned, kinds), last_seen=last_seen, not_loaded=not_loaded)


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


def read_report(path: str | Path, *, on_problem: OnProblem | None = None,
                kinds: RunKinds | None = None) -> ReportRecord:
    """A qareport workbook's run, metadata and changes, from its hidden sheets. A value an edit made
    into something else is converted or left out (`on_problem` hears which), never a crash."""
    target = Path(path)
    report = on_problem or ignore_problem
    sheets = read_sheets(target, DATA_SHEETS, first_rows=[OVERVIEW_SHEET])
    if RESULTS_SHEET not in sheets or RUN_SHEET not in sheets:
        raise BaselineError(
            f"{target}: not a qareport workbook with per-case results (no hidden "
            f"'{RESULTS_SHEET}' sheet); give a workbook written by qareport or its --results file"
        )
    metadata = read_metadata(sheets[RUN_SHEET], target, report)
    if metadata.get("format") != RUN_FORMAT:
        raise BaselineError(
            f"{target}: the '{RUN_SHEET}' sheet has format {metadata.get('format')!r}; "
            f"this qareport reads {RUN_FORMAT!r}"
        )
    header, *rows = sheets[RESULTS_SHEET] or [()]
    names = [convert_value(name, "text") for name in header]
    while names and names[-1] is None:  # the width of the longest row: parts of long values (`gather_row`)
        names.pop()
    if "case_id" not in names:
        raise BaselineError(f"{target}: the '{RESULTS_SHEET}' sheet has no 'case_id' column")
    columns = {name: index for index, name in enumerate(names, start=1) if name}  # the last wins, as in a row
    cases = []
    for number, values in enumerate(rows, start=2):
        if all(value is None for value in values):
            continue
        def where(field: str, number: int = number) -> str:
            return f"sheet '{RESULTS_SHEET}', cell {column_letter(columns.get(field, 1))}{number}"

        cleaned = clean_case_values(dict(zip(names, gather_row(values, names))), where=where, target=target,
                                    on_problem=report,
                                    kinds=kinds)
        if cleaned is not None:
            cases.append(case_row_from_stored(cleaned, kinds))
    snapshot = RunSnapshot(
        source=str(target),
        created=str(metadata.get("created") or ""),
        qareport_version=str(metadata.get("qareport_version") or ""),
        cases=tuple(cases),
        steps_semantics=stated_semantics(metadata.get("option.steps_semantics")),
        acceptable_extras=stated_extras(metadata.get("option.acceptable_extras")),
        judge_identity=JudgeIdentity.from_metadata(metadata),
        partly_judged=tuple((key.removeprefix("judged.").removesuffix(".partial"), str(value))
                            for key, value in metadata.items()
                            if key.startswith("judged.") and key.endswith(".partial") and value),
        carried=_read_carried(sheets.get(CARRIED_SHEET), target, report, kinds),
        overview_headers=_overview_headers(sheets.get(OVERVIEW_SHEET)),
    )
    changes = _read_changes(sheets.get(CHANGES_SHEET), target, report)
    return ReportRecord(snapshot, metadata, _comparison(metadata, changes, cases),
                        headline=_stated_headline(metadata), status_counts=_stated_status_counts(metadata),
                        digest=_stored_digest(target, metadata, report))


def _named_rows(rows: list[tuple[Any, ...]] | None) -> Iterator[tuple[int, dict[str | None, Any]]]:
    """A stored sheet's lines after its header row, each by its sheet row number, as {column name:
    value} with the parts of a long value joined (`gather_row`); empty lines left out."""
    if not rows:
        return
    header, *lines = rows
    names = [convert_value(name, "text") for name in header]
    while names and names[-1] is None:  # the width of the longest row: parts of long values (`gather_row`)
        names.pop()
    for number, values in enumerate(lines, start=2):
        if not all(value is None for value in values):
            yield number, dict(zip(names, gather_row(values, names)))


def _read_carried(rows: list[tuple[Any, ...]] | None, target: Path, on_problem: OnProblem,
                  kinds: RunKinds | None) -> tuple[CarriedCase, ...]:
    """The cases the run could not load, with their rows when last seen; a line an edit made
    unreadable is left out with a problem (its case then comes back as a new case)."""
    carried = []
    for number, row in _named_rows(rows):
        try:
            stored = (load_stored_json(text) if isinstance(text := convert_value(row.get("row"), "text"), str)
                      else None)
        except ValueError:
            stored = None

        def where(field: str, number: int = number) -> str:
            return f"sheet '{CARRIED_SHEET}', row {number}, '{field}'"

        found = _carried_case(stored, row.get("last_seen"), row.get("not_loaded"), where, target, on_problem, kinds)
        if found is None:
            on_problem(Problem(Location(str(target)), f"sheet '{CARRIED_SHEET}', row {number}: not a carried case "
                                                      "qareport wrote; left out (the case is compared as a new case)"))
        else:
            carried.append(found)
    return tuple(carried)


def _overview_headers(rows: list[tuple[Any, ...]] | None) -> tuple[str, ...]:
    """The Overview's headers as written, less its `more` columns (which follow from the texts); an
    edited header is kept as text, and an emptied one left out."""
    headers = (convert_value(value, "text") for value in (rows[0] if rows else ()))
    return tuple(header for header in headers if header and header != "more")


_CHANGE_TYPES: dict[str, Expected] = {"kind": "text", "case_id": "text", "name": "text", "metric": "text",
                                      "delta": "number", "old_status": "text", "new_status": "text", "reason": "text"}


def _read_changes(rows: list[tuple[Any, ...]] | None, target: Path, on_problem: OnProblem) -> list[CaseChange]:
    """The stored changes; a line an edit made unreadable is left out with a problem."""
    if not rows:
        return []
    header, *lines = rows
    names = [convert_value(name, "text") for name in header]
    while names and names[-1] is None:  # the width of the longest row: parts of long values (`gather_row`)
        names.pop()
    changes = []
    for number, values in enumerate(lines, start=2):
        if all(value is None for value in values):
            continue
        row = dict(zip(names, gather_row(values, names)))
        fields: dict[str, Any] = {}
        for index, field in enumerate(CHANGE_FIELDS, start=1):
            value = row.get(field)
            expected = _CHANGE_TYPES.get(field)
            if expected is None:  # old, new: a number, or a status as text
                value = value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else None
            else:
                value = convert_value(value, expected)
            column = names.index(field) + 1 if field in names else index
            where = f"sheet '{CHANGES_SHEET}', cell {column_letter(column)}{number}"
            if value is BAD:
                on_problem(dropped_problem(target, where, f"'{field}'", expected or "number", row.get(field)))
                value = None
            fields[field] = value
        if fields["kind"] not in CHANGE_KINDS or not fields["case_id"]:
            on_problem(Problem(Location(str(target)), f"sheet '{CHANGES_SHEET}', row {number}: not a change qareport "
                                                      f"wrote (kind {fields['kind']!r}); left out"))
            continue
        changes.append(CaseChange(**fields))
    return changes


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
                cases: Sequence[CaseRow]) -> Comparison | None:
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
    order = kinds.catalogue().headline_metric_keys()
    return (order.index(metric) if metric in order else len(order), metric)


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
                 on_problem: OnProblem | None = None, kinds: RunKinds | None = None) -> History:
    """The runs in the given files and folders. A named file that is not a qareport run is an
    error; in a folder such a file (a configuration, say) is skipped and said so."""
    named, found = find_run_files(paths, exclude=exclude)
    runs = [read_run(path, on_problem=on_problem, kinds=kinds) for path in named]
    skipped = []
    for path in found:
        try:
            runs.append(read_run(path, on_problem=on_problem, kinds=kinds))
        except BaselineError as error:
            skipped.append(str(error))
    return History(tuple(runs), tuple(skipped))
