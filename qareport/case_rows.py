"""A case as one typed row (`case_row`, a `CaseRow`): who the case is, the metrics of the run's kinds,
its values per attempt, token usage and judgments: what a later run compares. Built from the report
model only; `runs.py` derives the stored form from it (and reads it back), `comparison.py` compares them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from qareport import kinds
from qareport.case_record import CaseRow, Derived, Figures
from qareport.judge_agreement import case_judgments
from qareport.records import USAGE_FIELDS, CaseResult
from qareport.side_by_side import case_outputs

CASE_HEAD_FIELDS = ("case_id", "kind", "name", "groups", "cluster", "status", "error", "definition_hash", "file",
                    "reason", "targets", "facts", "outputs", "dimensions")


ATTEMPTS_FIELD = "attempts"
"""A case answered several times: each metric's values over its attempts, in attempt order (JSON;
`attempt_values`), so a later run can compare attempts with attempts. The column (and the key of a
results file's case row) is there only when a case of the run has attempts."""


def case_fields(run: kinds.RunKinds | None = None) -> tuple[str, ...]:
    """The columns of a case row: who the case is, the metrics of the run's kinds (`run`; None: of
    the catalogue's kinds, as a stored run is read back), usage, and the case's judgments (last: a
    workbook written before qareport kept them just lacks the column)."""
    metric_keys = (run if run is not None else kinds.catalogue()).case_metric_keys()
    return (*CASE_HEAD_FIELDS, *metric_keys, *USAGE_FIELDS, "judged")


def case_row(result: CaseResult, run: kinds.RunKinds) -> CaseRow:
    """The headline figures of one case as the run's kinds say them, typed (`runs.stored_case_values`
    is its stored form)."""
    response = result.response
    return CaseRow(
        case_id=result.case.id,
        kind=result.case.kind,
        name=result.case.name,
        groups=tuple(result.case.groups),
        cluster=result.case.cluster,  # None: a cluster of its own (`clusters`)
        status=result.status,
        error=result.error,
        definition_hash=result.case.definition_hash,
        file=result.case.location.path,
        reason=run.case_reason(result),
        targets=tuple(kind.name for kind in run if kind.has_target(result.case)),
        facts=run.case_facts(result),
        outputs=Derived(partial(case_outputs, kinds=run), result),  # what the system produced, for Compare
        judged=case_judgments(result, run),
        dimensions=Derived(run.case_breakdown, result),  # for the next run's changes per dimension
        metrics=Figures(run.case_metrics(result)),
        usage=Figures({key: getattr(response, key) if response is not None else None for key in USAGE_FIELDS}),
        attempts=attempt_values(result, run) if result.attempts else None,
    )


def attempt_values(result: CaseResult, run: kinds.RunKinds) -> dict[str, list[float | None]]:
    """Each metric's value in each attempt of a case (None where an attempt has none), for the
    metrics any attempt has."""
    each = [run.case_metrics(attempt) for attempt in result.attempts]
    return {key: [values.get(key) for values in each] for key in run.case_metric_keys()
            if any(values.get(key) is not None for values in each)}


def case_rows(results: Sequence[CaseResult], run: kinds.RunKinds) -> list[CaseRow]:
    return [case_row(result, run) for result in results]
