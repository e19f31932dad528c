"""Suite-level figures from case results: Data Query Metrics and the Q&A aggregates.

Averages are over *evaluated* cases only, and always travel with the counts of error, missing and
invalid cases beside them, so a run that fails more never looks better.

The per-group figures (per tag and per dimension) are computed as pandas frames here, in
`group_frames`; pandas is imported when a run has cases to group (indicator-selection targets), so
a run without them, and the import of the pipeline, do not pay for it. The per-template figures are
graphrag-eval's aggregates (`aggregates.compute_aggregates`), kept in its own arithmetic so that its
users get its very numbers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from qareport.aggregates import compute_aggregates
from qareport.kinds.steps.step_kind import DEFAULT_SEMANTICS, Semantics
from qareport.means import mean
from qareport.records import CaseResult

if TYPE_CHECKING:  # imported when first needed (`group_frames`): it is most of the pipeline's import time
    import pandas as pd

STATUSES = ("success", "error", "missing", "invalid")


@dataclass(frozen=True, slots=True)
class GroupScores:
    """Macro precision and recall of one group (or of the whole suite), with its case counts."""

    group: str
    cases: int
    evaluated: int
    errors: int
    missing: int
    invalid: int
    macro_precision: float | None
    macro_recall: float | None


@dataclass(frozen=True, slots=True)
class DimensionScores:
    """One dimension name over the cases whose target has it."""

    dimension: str
    cases: int  # evaluated cases whose target has the dimension (those the means are over)
    macro_precision: float | None
    macro_recall: float | None
    true_positives: int
    false_positives: int
    false_negatives: int
    not_scored: int = 0  # cases whose target has the dimension, not evaluated (error, missing, invalid)


@dataclass(frozen=True, slots=True)
class SuiteStatistics:
    data_query: GroupScores | None  # None when no case has an indicator-selection target
    per_group: tuple[GroupScores, ...]
    per_dimension: tuple[DimensionScores, ...]
    qa_aggregates: dict[str, Any] | None  # graphrag-eval's aggregates over the Q&A questions
    status_counts: dict[str, int] = field(default_factory=dict)
    question_results: list[dict[str, Any]] = field(default_factory=list)  # graphrag-eval's per-question dicts


@dataclass(frozen=True, slots=True)
class GroupFrames:
    """The per-group figures' rows as frames: `groups` one row per (case, tag) of the cases with an
    indicator-selection target (columns case, group, status, precision, recall); `dimensions` one row
    per (evaluated case, turn, dimension) (case, dimension, precision, recall, tp, fp, fn)."""

    groups: pd.DataFrame
    dimensions: pd.DataFrame


def group_frames(results: Sequence[CaseResult]) -> GroupFrames | None:
    """The frames the per-tag and per-dimension figures are computed from; None (and pandas not
    imported) when no case has an indicator-selection target."""
    group_rows = _group_rows(results)
    if not group_rows:
        return None
    import pandas as pd

    return GroupFrames(
        groups=pd.DataFrame(group_rows, columns=["case", "group", "status", "precision", "recall"]),
        dimensions=pd.DataFrame(_dimension_rows(results), columns=list(DIMENSION_COLUMNS)),
    )


DIMENSION_COLUMNS = ("case", "dimension", "precision", "recall", "tp", "fp", "fn")


def _group_rows(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """One row per (case, group) for the cases with an indicator target."""
    rows = []
    for result in results:
        if not result.has_indicator_target:
            continue
        for group in result.case.groups or ("(no tag)",):
            rows.append({
                "case": result.case.id,
                "group": group,
                "status": result.status,
                "precision": result.macro_precision,
                "recall": result.macro_recall,
            })
    return rows


def _scores(name: str, frame: pd.DataFrame) -> GroupScores:
    counts = Counter(frame["status"])
    evaluated = frame[(frame["status"] == "success") & frame["recall"].notna()]
    return GroupScores(
        group=name,
        cases=len(frame),
        evaluated=len(evaluated),
        errors=counts["error"],
        missing=counts["missing"],
        invalid=counts["invalid"],
        macro_precision=_mean(evaluated["precision"]),
        macro_recall=_mean(evaluated["recall"]),
    )


def _mean(series: pd.Series) -> float | None:
    """The mean over the evaluated cases as every output gives it (`means.mean`: summed in case
    order), so that the Statistics sheet and the Summary show the same digits."""
    return mean([float(value) for value in series.dropna()])


def _dimension_rows(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """One row per (evaluated case, turn, dimension of its target)."""
    rows = []
    for result in results:
        if result.status != "success":
            continue
        # a case answered several times: its value per dimension is the mean over its attempts' turns
        # (the counts are summed over them)
        turns = [turn for attempt in (result.attempts or (result,)) if attempt.status == "success"
                 for turn in attempt.turns]
        for turn in turns:
            if turn.indicator is None:
                continue
            for dimension in turn.indicator.dimensions:
                rows.append({
                    "case": result.case.id,
                    "dimension": dimension.dimension_name,
                    "precision": dimension.precision,
                    "recall": dimension.recall,
                    "tp": len(dimension.true_positives),
                    "fp": len(dimension.false_positives),
                    "fn": len(dimension.false_negatives),
                })
    return rows


def _dimension_scores(results: Sequence[CaseResult], frame: pd.DataFrame | None) -> tuple[DimensionScores, ...]:
    """Per dimension name: the per-case value is the mean over the case's turns that target it;
    beside it, the cases whose target has the dimension that were not evaluated."""
    not_scored: Counter[str] = Counter()
    for result in results:
        if result.status != "success":
            not_scored.update(_target_dimensions(result))
    if frame is None or not len(frame):
        return tuple(DimensionScores(str(name), 0, None, None, 0, 0, 0, count) for name, count in not_scored.items())
    per_case = frame.groupby(["dimension", "case"], sort=False).agg(
        precision=("precision", "mean"), recall=("recall", "mean"),
        tp=("tp", "sum"), fp=("fp", "sum"), fn=("fn", "sum"),
    )
    per_dimension = per_case.groupby(level="dimension", sort=False).agg(
        cases=("precision", "size"), precision=("precision", "mean"), recall=("recall", "mean"),
        tp=("tp", "sum"), fp=("fp", "sum"), fn=("fn", "sum"),
    )
    return tuple(
        DimensionScores(
            dimension=str(name),
            cases=int(row.cases),
            macro_precision=float(row.precision),
            macro_recall=float(row.recall),
            true_positives=int(row.tp),
            false_positives=int(row.fp),
            false_negatives=int(row.fn),
            not_scored=not_scored.pop(str(name), 0),
        )
        for name, row in per_dimension.iterrows()
    ) + tuple(DimensionScores(str(name), 0, None, None, 0, 0, 0, count) for name, count in not_scored.items())


def _target_dimensions(result: CaseResult) -> list[str]:
    """The dimension names a case's target has (each once), whatever became of its response."""
    names: dict[str, None] = {}
    for turn in result.case.turns:
        for dataset in turn.target.indicator_selection or ():
            names.update((dimension.dimension_name, None) for dimension in dataset.dimensions if dimension.values)
    return list(names)


def question_results(results: Iterable[CaseResult]) -> list[dict[str, Any]]:
    """The graphrag-eval result dicts of the Q&A questions (not of conversation turns); each
    attempt's, marked with its `attempt`, for a question answered several times (graphrag-eval's
    aggregates count each attempt as a sample)."""
    return [
        attempt.turns[0].qa
        for result in results
        for attempt in (result.attempts or (result,))
        if attempt.case.kind == "qa" and attempt.turns and attempt.turns[0].qa is not None
    ]


def summarize(results: Sequence[CaseResult], *, steps_semantics: Semantics = DEFAULT_SEMANTICS,
              custom_metrics: Sequence[str] = ()) -> SuiteStatistics:
    """The suite's figures; the Q&A aggregates by graphrag-eval `steps_semantics`' rules, with the
    custom LLM metrics' outputs among them."""
    frames = group_frames(results)
    data_query = None
    per_group: tuple[GroupScores, ...] = ()
    if frames is not None:
        frame = frames.groups
        overall = frame.drop_duplicates("case")
        data_query = _scores("all test cases", overall)
        per_group = tuple(
            _scores(str(group), part) for group, part in frame.groupby("group", sort=True)
        )
    questions = question_results(results)
    return SuiteStatistics(
        data_query=data_query,
        per_group=per_group,
        per_dimension=_dimension_scores(results, None if frames is None else frames.dimensions),
        qa_aggregates=compute_aggregates(questions, semantics=steps_semantics, custom_metrics=custom_metrics)
        if questions else None,
        status_counts={status: sum(r.status == status for r in results) for status in STATUSES},
        question_results=questions,
    )
