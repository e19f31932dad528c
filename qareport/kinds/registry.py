"""The registry of kinds and the helpers that ask it: the metrics of all kinds, their labels and
formats, a case's metrics, reason, facts and grades as every kind says them. Everything downstream
asks these instead of naming kinds; `qareport.kinds` exports them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qareport.kinds.kind_base import Kind
from qareport.kinds.kind_records import CellFormat, Facts, Metric, PassRules
from qareport.records import CaseResult

REGISTRY: list[Kind] = []


def register(kind: Kind) -> Kind:
    """Add a kind (after the ones already registered; the order is the order of columns and rows)."""
    if any(existing.name == kind.name for existing in REGISTRY):
        raise ValueError(f"a kind named {kind.name!r} is registered already")
    clashes = {m.key for m in kind.metrics} & set(case_metric_keys())
    if clashes:
        raise ValueError(f"kind {kind.name!r}: metric keys {sorted(clashes)} belong to another kind")
    REGISTRY.append(kind)
    return kind


register_kind = register  # the name under which the top-level package exports it


def unregister(name: str) -> None:
    REGISTRY[:] = [kind for kind in REGISTRY if kind.name != name]


def run_kinds(results: Sequence[CaseResult]) -> tuple[Kind, ...]:
    """The kinds a run has: the registered kinds present in its results (`Kind.present`), in
    registry order. A stored run has the columns of these kinds only."""
    return tuple(kind for kind in REGISTRY if kind.present(results))


def all_metrics() -> tuple[Metric, ...]:
    return tuple(metric for kind in REGISTRY for metric in kind.metrics)


def case_metric_keys() -> tuple[str, ...]:
    return tuple(metric.key for metric in all_metrics())


def headline_metric_keys() -> tuple[str, ...]:
    return tuple(metric.key for metric in all_metrics() if metric.headline)


AGGREGATE_LABELS = {  # the keys that are no kind's metric: graphrag-eval's aggregate keys, the usage fields
    "retrieval_answer_f1": "retrieval answer F1",
    # two different retrieval recalls: the steps score's recall@k counts document ids; these compare texts
    "retrieval_context_recall": "context recall (text similarity)",
    "retrieval_context_precision": "context precision (text similarity)",
    "retrieval_context_f1": "context F1 (text similarity)",
    "elapsed_sec": "elapsed seconds",
}


def metric_label(key: str | None) -> str:
    """The one label of a metric key, wherever it is shown: a registered metric's label, else an
    aggregate key's (`AGGREGATE_LABELS`), else the key's words."""
    for metric in all_metrics():
        if metric.key == key:
            return metric.label
    return AGGREGATE_LABELS.get(key or "") or (key or "").replace("_", " ")


def metric_format(key: str) -> CellFormat:
    """How a metric's values are shown: dollars, whole numbers (tokens), seconds, else a score."""
    if key.endswith("_cost"):
        return "cost"
    if key.endswith("tokens"):
        return "integer"
    if key == "elapsed_sec":
        return "seconds"
    return "score"


def case_metrics(result: CaseResult) -> dict[str, float | None]:
    """Every registered metric of one case, in registry order."""
    values: dict[str, float | None] = {}
    for kind in REGISTRY:
        values.update(kind.case_metrics(result))
    return values


def attempt_passed(result: CaseResult, rules: PassRules) -> bool | None:
    """Whether one attempt of a case passes: it was evaluated and passes the rule of every kind that
    has a verdict on it (`Kind.passes`). An attempt that was not evaluated (an error, an unusable
    response) does not pass; None when no kind has a verdict."""
    verdicts = [verdict for kind in REGISTRY if kind.has_target(result.case)
                if (verdict := kind.passes(result, rules)) is not None]
    if result.status != "success":
        return False
    return all(verdicts) if verdicts else None


def main_metric(result: CaseResult) -> str | None:
    """The case's main metric: the first kind's (in registry order) that has a value for it."""
    values = case_metrics(result)
    for kind in REGISTRY:
        key = kind.main_metric_key()
        if key is not None and values.get(key) is not None:
            return key
    return None


def explain_case(result: CaseResult) -> str | None:
    """The case's reason in one line: each kind's explanation, joined."""
    reasons = [reason for kind in REGISTRY if (reason := kind.explain(result))]
    return "; ".join(reasons) or None


def case_reason(result: CaseResult) -> str | None:
    """Why a case lost points, in one line: what happened to its response when it was not
    evaluated, else what its kinds say (and any turn that could not be scored). A case answered
    several times: each attempt's reason, the attempts with the same one named together ("attempts
    2, 3: INDICATOR: missed LP"), so an attempt that lost points is never hidden by one that did not."""
    if result.attempts:
        said: dict[str, list[int]] = {}
        for attempt in result.attempts:
            why = case_reason(attempt)
            if why:
                said.setdefault(why, []).append(attempt.attempt)
        return "; ".join(f"attempt{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}: {why}"
                         for why, numbers in said.items()) or None
    if result.status == "missing":
        return "no response"
    if result.status == "error":
        return (f"the system answered with an error: {result.error}" if result.error
                else "the system answered with an error")
    if result.status == "invalid":
        return f"not evaluated: {result.error}" if result.error else "not evaluated"
    parts = [part for part in (explain_case(result), result.error) if part]
    return "; ".join(parts) or None


GRADE_FACT = "grade"  # the key of a graded kind's facts that holds the case's grade, as a one-item list


def case_facts(result: CaseResult) -> dict[str, dict[str, list[str]]]:
    """Every kind's facts of one case, by kind name (kinds with nothing to remember left out), with
    the case's grade for the kinds that grade."""
    facts: dict[str, dict[str, list[str]]] = {}
    for kind in REGISTRY:
        found = dict(kind.case_facts(result))
        grade = kind.case_grade(result) if kind.grades else None
        if grade is not None:
            found[GRADE_FACT] = [grade]
        if found:
            facts[kind.name] = found
    return facts


@dataclass(frozen=True, slots=True)
class GradeMove:
    """A case's grade of one kind in two runs; `worse` when it moved down the kind's scale."""

    kind: Kind
    old: str
    new: str

    @property
    def worse(self) -> bool:
        return self.kind.grades.index(self.new) > self.kind.grades.index(self.old)

    @property
    def metric(self) -> str:
        """How a change line names it (`Kind.grade_key`)."""
        return self.kind.grade_key


def stored_grade(kind: Kind, facts: Mapping[str, Any]) -> str | None:
    """A kind's grade as a stored run keeps it (None when absent, or not one of the kind's grades:
    an older run, or an edit)."""
    items = (facts.get(kind.name) or {}).get(GRADE_FACT) if isinstance(facts.get(kind.name), Mapping) else None
    grade = items[0] if isinstance(items, (list, tuple)) and items else None
    return grade if isinstance(grade, str) and grade in kind.grades else None


def grade_moves(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[GradeMove]:
    """The grades that differ between two runs' facts of a case (both known), kind by kind."""
    moves = []
    for kind in REGISTRY:
        if not kind.grades:
            continue
        before, after = stored_grade(kind, old), stored_grade(kind, new)
        if before is not None and after is not None and before != after:
            moves.append(GradeMove(kind, before, after))
    return moves


def grade_counts(results: Sequence[CaseResult]) -> dict[str, dict[str, int]]:
    """Per kind that grades and is present (by its label): the cases per grade, best first, then
    those with a target of the kind that were not graded ("not graded")."""
    counts: dict[str, dict[str, int]] = {}
    for kind in REGISTRY:
        if not kind.grades or not kind.present(results):
            continue
        tally = dict.fromkeys((*kind.grades, NOT_GRADED), 0)
        for result in results:
            if kind.has_target(result.case):
                tally[kind.case_grade(result) or NOT_GRADED] += 1
        counts[kind.label] = tally
    return counts


NOT_GRADED = "not graded"


def explain_change(old: Mapping[str, Facts], new: Mapping[str, Facts]) -> str | None:
    """What changed in a case between two runs, each kind's words joined (`Kind.explain_change`)."""
    said = [text for kind in REGISTRY
            if (text := kind.explain_change(old.get(kind.name) or {}, new.get(kind.name) or {}))]
    return "; ".join(said) or None


def kind_of_metric(key: str) -> Kind | None:
    return next((kind for kind in REGISTRY if any(metric.key == key for metric in kind.metrics)), None)
