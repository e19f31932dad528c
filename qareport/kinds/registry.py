"""The kinds of a run and the catalogue they come from.

`RunKinds` is a typed, immutable set of kinds (in the order of columns and rows) whose methods are
the helpers everything downstream asks instead of naming kinds: the metrics of its kinds, their
labels, a case's metrics, reason, facts and grades as every kind says them.

The catalogue is the built-in kinds plus those a kind's author adds with `register` (at import
time: the recipe in docs/architecture.md). A run's set is the catalogue's kinds plus the run's own (the custom
evaluations kind built from its settings), made once by `for_run` and passed down explicitly; a run
never changes the catalogue, so two runs in one process do not see each other's kinds. Code that
reads a stored run with no run at hand asks `catalogue()`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qareport.evaluation_options import PassRules
from qareport.kinds.kind_base import Kind
from qareport.kinds.kind_records import CellFormat, Facts, Metric
from qareport.records import CaseResult

AGGREGATE_LABELS = {  # the keys that are no kind's metric: graphrag-eval's aggregate keys, the usage fields
    "retrieval_answer_f1": "retrieval answer F1",
    # two different retrieval recalls: the steps score's recall@k counts document ids; these compare texts
    "retrieval_context_recall": "context recall (text similarity)",
    "retrieval_context_precision": "context precision (text similarity)",
    "retrieval_context_f1": "context F1 (text similarity)",
    "elapsed_sec": "elapsed seconds",
}

GRADE_FACT = "grade"  # the key of a graded kind's facts that holds the case's grade, as a one-item list
NOT_GRADED = "not graded"


@dataclass(frozen=True, slots=True)
class RunKinds:
    """A set of kinds in column order (a run's, or the catalogue's) and what it says of a case."""

    kinds: tuple[Kind, ...] = ()

    def __iter__(self) -> Iterator[Kind]:
        return iter(self.kinds)

    def __len__(self) -> int:
        return len(self.kinds)

    def adding(self, kind: Kind) -> RunKinds:
        """This set and `kind` after its kinds. ValueError when its name or one of its metric keys
        is taken by a kind of the set."""
        if any(existing.name == kind.name for existing in self.kinds):
            raise ValueError(f"a kind named {kind.name!r} is registered already")
        clashes = {m.key for m in kind.metrics} & set(self.case_metric_keys())
        if clashes:
            raise ValueError(f"kind {kind.name!r}: metric keys {sorted(clashes)} belong to another kind")
        return RunKinds((*self.kinds, kind))

    def named(self, name: str) -> Kind | None:
        return next((kind for kind in self.kinds if kind.name == name), None)

    def present_in(self, results: Sequence[CaseResult]) -> RunKinds:
        """The kinds a run has: those of the set present in its results (`Kind.present`), in order.
        A stored run has the columns of these kinds only."""
        return RunKinds(tuple(kind for kind in self.kinds if kind.present(results)))

    def all_metrics(self) -> tuple[Metric, ...]:
        return tuple(metric for kind in self.kinds for metric in kind.metrics)

    def case_metric_keys(self) -> tuple[str, ...]:
        return tuple(metric.key for metric in self.all_metrics())

    def headline_metric_keys(self) -> tuple[str, ...]:
        return tuple(metric.key for metric in self.all_metrics() if metric.headline)

    def metric_label(self, key: str | None) -> str:
        """The one label of a metric key, wherever it is shown: a metric's label, else an aggregate
        key's (`AGGREGATE_LABELS`), else the key's words."""
        for metric in self.all_metrics():
            if metric.key == key:
                return metric.label
        return AGGREGATE_LABELS.get(key or "") or (key or "").replace("_", " ")

    def kind_of_metric(self, key: str) -> Kind | None:
        return next((kind for kind in self.kinds if any(metric.key == key for metric in kind.metrics)), None)

    def case_metrics(self, result: CaseResult) -> dict[str, float | None]:
        """Every metric of one case, in the set's order."""
        values: dict[str, float | None] = {}
        for kind in self.kinds:
            values.update(kind.case_metrics(result))
        return values

    def case_breakdown(self, result: CaseResult) -> dict[str, dict[str, float]]:
        """Every kind's figures per part of one case (`Kind.breakdown`), by part name."""
        parts: dict[str, dict[str, float]] = {}
        for kind in self.kinds:
            parts.update(kind.breakdown(result))
        return parts

    def attempt_passed(self, result: CaseResult, rules: PassRules) -> bool | None:
        """Whether one attempt of a case passes: it was evaluated and passes the rule of every kind
        that has a verdict on it (`Kind.passes`). An attempt that was not evaluated (an error, an
        unusable response) does not pass; None when no kind has a verdict."""
        verdicts = [verdict for kind in self.kinds if kind.has_target(result.case)
                    if (verdict := kind.passes(result, rules)) is not None]
        if result.status != "success":
            return False
        return all(verdicts) if verdicts else None

    def main_metric(self, result: CaseResult) -> str | None:
        """The case's main metric: the first kind's (in order) that has a value for it."""
        values = self.case_metrics(result)
        for kind in self.kinds:
            key = kind.main_metric
            if key is not None and values.get(key) is not None:
                return key
        return None

    def explain_case(self, result: CaseResult) -> str | None:
        """The case's reason in one line: each kind's explanation, joined."""
        reasons = [reason for kind in self.kinds if (reason := kind.explain(result))]
        return "; ".join(reasons) or None

    def case_reason(self, result: CaseResult) -> str | None:
        """Why a case lost points, in one line: what happened to its response when it was not
        evaluated, else what its kinds say (and any turn that could not be scored). A case answered
        several times: each attempt's reason, the attempts with the same one named together
        ("attempts 2, 3: INDICATOR: missed LP"), so an attempt that lost points is never hidden by
        one that did not."""
        if result.attempts:
            said: dict[str, list[int]] = {}
            for attempt in result.attempts:
                why = self.case_reason(attempt)
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
        parts = [part for part in (self.explain_case(result), result.error) if part]
        return "; ".join(parts) or None

    def case_facts(self, result: CaseResult) -> dict[str, dict[str, list[str]]]:
        """Every kind's facts of one case, by kind name (kinds with nothing to remember left out),
        with the case's grade for the kinds that grade."""
        facts: dict[str, dict[str, list[str]]] = {}
        for kind in self.kinds:
            found = dict(kind.case_facts(result))
            grade = kind.case_grade(result) if kind.grades else None
            if grade is not None:
                found[GRADE_FACT] = [grade]
            if found:
                facts[kind.name] = found
        return facts

    def grade_moves(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[GradeMove]:
        """The grades that differ between two runs' facts of a case (both known), kind by kind."""
        moves = []
        for kind in self.kinds:
            if not kind.grades:
                continue
            before, after = stored_grade(kind, old), stored_grade(kind, new)
            if before is not None and after is not None and before != after:
                moves.append(GradeMove(kind, before, after))
        return moves

    def grade_counts(self, results: Sequence[CaseResult]) -> dict[str, dict[str, int]]:
        """Per kind that grades and is present (by its label): the cases per grade, best first,
        then those with a target of the kind that were not graded ("not graded")."""
        counts: dict[str, dict[str, int]] = {}
        for kind in self.kinds:
            if not kind.grades or not kind.present(results):
                continue
            tally = dict.fromkeys((*kind.grades, NOT_GRADED), 0)
            for result in results:
                if kind.has_target(result.case):
                    tally[kind.case_grade(result) or NOT_GRADED] += 1
            counts[kind.label] = tally
        return counts

    def explain_change(self, old: Mapping[str, Facts], new: Mapping[str, Facts], *,
                       test_changed: bool = True) -> str | None:
        """What changed in a case between two runs, each kind's words joined (`Kind.explain_change`).
        Of a test not known to have changed, the kinds' `definition_facts` are taken as this run's, and
        a kind whose old facts lack them (a run stored before it kept them) says nothing."""
        said = []
        for kind in self.kinds:
            before, after = old.get(kind.name) or {}, new.get(kind.name) or {}
            if not test_changed and kind.definition_facts:
                if any(name in after and name not in before for name in kind.definition_facts):
                    continue
                before = {**before, **{name: after[name] for name in kind.definition_facts if name in after}}
            if text := kind.explain_change(before, after):
                said.append(text)
        return "; ".join(said) or None


_catalogue = RunKinds()
_registering = threading.Lock()


def catalogue() -> RunKinds:
    """The built-in kinds and the registered ones, in registration order."""
    return _catalogue


def register(kind: Kind) -> Kind:
    """Add a kind to the catalogue, after the ones already there (the order is the order of columns
    and rows); at import time, before a run. ValueError when its name or a metric key is taken."""
    global _catalogue
    with _registering:
        _catalogue = _catalogue.adding(kind)
    return kind


register_kind = register  # the name under which the top-level package exports it


def unregister(name: str) -> None:
    """Take a registered kind out of the catalogue again (a test's kind, when the test is done)."""
    global _catalogue
    with _registering:
        _catalogue = RunKinds(tuple(kind for kind in _catalogue if kind.name != name))


def for_run(*own: Kind) -> RunKinds:
    """A run's set: the catalogue's kinds, then the run's own (ValueError when one takes a name or
    a metric key of another)."""
    kinds = catalogue()
    for kind in own:
        kinds = kinds.adding(kind)
    return kinds


def metric_format(key: str) -> CellFormat:
    """How a metric's values are shown: dollars, whole numbers (tokens), seconds, else a score."""
    if key.endswith("_cost"):
        return "cost"
    if key.endswith("tokens"):
        return "integer"
    if key == "elapsed_sec":
        return "seconds"
    return "score"


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
