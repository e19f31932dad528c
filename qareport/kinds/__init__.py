"""Kinds of target: what a test case can expect of a turn, one module per kind, registered here.

A kind is everything qareport knows about one sort of expectation (indicator selection, reference
steps, reference answer, ...): how to read its part of a target and of a response turn, how to score
a turn, which per-case metrics it yields and how they aggregate, how to say in one line why a case
lost points, and what it contributes to the Overview, Details and Statistics sheets. Everything
downstream (the case rows of the results file and of a stored run, the comparison with a baseline,
the headline metrics, the workbook's columns) asks `REGISTRY` instead of naming kinds.

Adding a kind means writing one module with a `Kind` subclass (and, if it renders a details cell, one
template) and calling `register(...)`: no other module changes. Everything such a module needs is
exported here (`__all__`).

Every metric a kind declares lies in [0, 1] and higher is better, so a drop is a regression.

Every kind, the built-in ones too, keeps its parsed parts in the records' `parts` mappings and its
scores in `TurnResult.scores`, under its name; the loader and the evaluator ask the kinds and name none.
Kinds that are scored together in one evaluation of a turn (graphrag-eval scores a question's answer
and steps in one result dict) share a `SharedEvaluation`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import TYPE_CHECKING, Any, Literal

from qareport.errors import ShapeError
from qareport.input_shapes import plain
from qareport.records import CaseResult, Problem, Response, TestCase, Turn, TurnOutput
from qareport.yaml_values import line_of

if TYPE_CHECKING:
    from qareport.evaluation_options import EvaluationOptions

# what a kind's author needs, in one import: the protocol, the records it reads and returns, the
# error that a malformed part raises (it becomes a Problem with file and line), and the registry
__all__ = [
    "REGISTRY",
    "CaseResult",
    "CellFormat",
    "Column",
    "ColumnPlace",
    "DetailRow",
    "Facts",
    "Kind",
    "Metric",
    "PassRules",
    "ShapeError",
    "SharedEvaluation",
    "Table",
    "TurnInput",
    "TurnScores",
    "all_metrics",
    "attempt_passed",
    "case_facts",
    "case_metric_keys",
    "case_metrics",
    "case_reason",
    "explain_case",
    "explain_change",
    "headline_metric_keys",
    "kind_of_metric",
    "main_metric",
    "mean_over_turns",
    "metric_format",
    "metric_label",
    "register",
    "register_kind",
    "run_kinds",
    "unregister",
]

CellFormat = Literal["score", "integer", "seconds", "cost"]
ColumnPlace = Literal["score", "number", "text"]
"""Where an Overview column goes: `score` columns come first, right after the case's id, name and
status (the headline metrics); `number` columns after the reason (per-dimension and secondary
metrics); `text` columns last (details cells, answers: one click away, never the first screen)."""
Facts = Mapping[str, Sequence[str]]
"""What a kind remembers of a case so that a later run can say what changed: named lists of short
items ("found": ["COUNTRY MEX"], ...). Stored with the run (`runs.case_row`), compared by
`Kind.explain_change`."""
DetailRow = tuple[Any, ...]
"""A row of the Details sheet after the case's id and groups: (turn, dimension or aspect, verdict,
item id, item text, note[, score[, reason]]). `None` leaves a cell empty; a shorter row leaves the
last cells empty."""


@dataclass(frozen=True, slots=True)
class Metric:
    """A per-case metric: its key in results files and stored runs, and the label an analyst reads."""

    key: str
    label: str
    headline: bool = False  # one of the run's headline metrics (Summary, Trend, email, comparison)


@dataclass(frozen=True, slots=True)
class Column:
    """An Overview column: a header, how to get a case's value, and how to show it."""

    header: str
    value: Callable[[CaseResult], Any]
    width: float
    format: CellFormat | None = None
    wrap: bool = False
    score: bool = False  # gets the red-to-green colour scale
    place: ColumnPlace | None = None  # None: decided by `where`
    metric: str | None = None
    """The metric key the column shows: the Overview takes it from the case's row (computed once),
    and `value` is then only the way to compute it."""

    @property
    def where(self) -> ColumnPlace:
        """The column's place: as given, else text for wrapped columns, else number."""
        if self.place is not None:
            return self.place
        return "text" if self.wrap else "number"


@dataclass(frozen=True, slots=True)
class Table:
    """A table a kind adds to the Statistics sheet: a title, a header row and value rows."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    formats: tuple[CellFormat | None, ...] = ()


DEFAULT_ANSWER_PASS_F1 = 0.8


@dataclass(frozen=True, slots=True)
class PassRules:
    """The thresholds of the kinds' pass rules (`Kind.passes`) that a user may set."""

    answer_f1: float = DEFAULT_ANSWER_PASS_F1  # an answer passes at this answer F1 or above (--answer-pass-f1)


@dataclass(frozen=True, slots=True)
class TurnInput:
    """What a kind needs to score one turn: its part of the target and of the system's output, and,
    for what a kind needs beyond them, the whole turn, the response and the run's options."""

    case: TestCase
    turn_number: int
    target: Any
    output: Any  # None when the system produced nothing of this kind for the turn
    turn: Turn | None = None
    response: Response | None = None
    turn_output: TurnOutput | None = None  # None: the response has no output for this turn
    options: EvaluationOptions | None = None


@dataclass(frozen=True, slots=True)
class TurnScores:
    """What evaluating a turn gave: scores to keep in `TurnResult.scores` (by kind name, or a shared
    record's key), the problems it found, and whether they make the case invalid (not evaluated)."""

    scores: Mapping[str, Any]
    problems: tuple[Problem, ...] = ()
    invalid: bool = False


class SharedEvaluation:
    """One evaluation of a turn that scores several kinds together; the kinds name it as `shared`.

    It runs once per turn in which any of its kinds has a target or an output part."""

    def evaluate(self, turn: TurnInput) -> TurnScores:
        raise NotImplementedError

    def evaluate_question(self, case: TestCase, response: Response | None,
                          options: EvaluationOptions) -> tuple[CaseResult, list[Problem]]:
        """A question of a graphrag-eval Q&A dataset (a case of kind `qa`), whose kinds name this
        evaluation: the whole case, as graphrag-eval evaluates a question."""
        raise NotImplementedError(f"{type(self).__name__} does not evaluate Q&A questions")


class Kind:
    """One kind of target. Subclasses set `name`, `label` and `metrics` and override what applies.

    `name` is the key of the kind's part under a user message's `target:` (and, by default, of a
    response turn's output).
    """

    name: str = ""
    label: str = ""
    metrics: tuple[Metric, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A case answered several times gets, for each metric, the mean over its attempts: every
        kind's `case_metrics` is wrapped once so that no kind has to know about attempts."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("case_metrics")
        if own is not None and not getattr(own, "over_attempts", False):
            setattr(cls, "case_metrics", _over_attempts(own))  # noqa: B010 (wrapping a method of the class)
        graded = cls.__dict__.get("case_grade")
        if graded is not None and not getattr(graded, "over_attempts", False):
            setattr(cls, "case_grade", _grade_over_attempts(graded))  # noqa: B010

    rank_metrics: tuple[str, ...] = ()
    """How the weakest cases of this kind are ranked, lowest first, key after key (default: the
    kind's headline metrics). Unlike metrics of different kinds are never averaged into one rank."""
    grades: tuple[str, ...] = ()
    """The grades the kind gives a case, best first (none: it does not grade). A case's grade is
    kept with its facts (`GRADE_FACT`), counted in the Summary, and a grade that moves between two
    runs is a change (a regression when it gets worse)."""
    grade_key: str = "grade"  # how a change line names the kind's grade (give each grading kind its own)
    main_metric: str | None = None
    """The metric whose spread over a case's attempts the Overview shows, and by which a case's change
    between two runs is decided (default: the kind's first headline metric)."""
    pass_rule: str = ""
    """When an attempt passes, in the analyst's words (empty: the kind has no pass rule)."""

    reads_target: bool = True
    """Whether the kind has a part under `target:` (a kind that only reads the judge's results has not)."""
    in_questions: bool = False
    """Whether a question of a graphrag-eval Q&A dataset carries this kind's part (under `name`)."""
    kept_on_error: bool = False
    """Whether an error response's output of this kind is still scored (graphrag-eval 6.x's steps)."""
    shared: SharedEvaluation | None = None
    """The evaluation this kind is scored in together with others (None: `evaluate_turn`)."""
    question_hash_key: str = ""
    """The short key under which a Q&A question's definition hash holds this kind's part (an
    `in_questions` kind; kept as it was so that the hashes of stored runs stay valid)."""
    key_advice: tuple[tuple[str, str], ...] = ()
    """(key, advice) for keys of a response that mean this kind's output under another name (an
    older version's): what the unknown-key problem says instead of "check its spelling"."""

    @property
    def output_key(self) -> str | None:
        """The key of a response turn (or record) that holds this kind's output (default: `name`;
        None: the kind reads nothing of a response)."""
        return self.name

    # --- reading -------------------------------------------------------------------------------

    def read_target(self, target: Mapping[str, Any], *, line: int | None) -> Any:
        """This kind's part of a target mapping as read (with its lines, `yaml_input.line_of`); None
        when it has none. The default hands the value, as plain data, to `parse_target`."""
        value = target.get(self.name)
        return None if value is None else self.parse_target(plain(value), line=line_of(target, self.name))

    def declared_in(self, target: Mapping[str, Any]) -> bool:
        """Whether a target mapping (or a Q&A question) has a part of this kind, read or not: a
        case too broken to read counts among the cases that could have had the kind's metrics, the
        same as it would if it could be read (`read_target` would give a part)."""
        return target.get(self.name) is not None

    def parse_target(self, value: Any, *, line: int | None) -> Any:
        """This kind's part of a target, checked; raise `qareport.errors.ShapeError` when unusable."""
        return value

    def parse_output(self, turn: Mapping[str, Any], *, line: int | None) -> Any:
        """This kind's part of a response turn (None when absent); raise `ShapeError` when unusable."""
        return None if self.output_key is None else turn.get(self.output_key)

    def output_as_written(self, turn: Mapping[str, Any]) -> None:
        """Put back, in a YAML response turn, the ids and names YAML 1.1 read as something else (see
        `input_shapes.written`), before the record loses what YAML remembered. Default: nothing."""

    def encode_part(self, part: Any) -> Any:
        """A parsed target part as plain JSON data, for the parse cache (default: as it is)."""
        return part

    def decode_part(self, data: Any) -> Any:
        """`encode_part` undone."""
        return data

    # --- where a case keeps this kind's parts ----------------------------------------------------

    def target_of(self, case: TestCase, turn_index: int) -> Any:
        return case.turns[turn_index].target.parts.get(self.name) if self.reads_target else None

    def output_of(self, output: TurnOutput | None) -> Any:
        return None if output is None else output.parts.get(self.name)

    def score_of(self, result: CaseResult, turn_index: int) -> Any:
        turns = result.turns
        return turns[turn_index].scores.get(self.name) if turn_index < len(turns) else None

    # --- scoring -------------------------------------------------------------------------------

    def has_target(self, case: TestCase) -> bool:
        """Whether the case has a target of this kind (or declares one, when it could not be read)."""
        return self.name in case.declared_targets or any(
            self.target_of(case, index) is not None for index in range(len(case.turns)))

    def evaluate_turn(self, turn: TurnInput) -> Any:
        """Score one turn that has a target of this kind; the result is kept in `TurnResult.scores[name]`."""
        raise NotImplementedError(f"kind {self.name!r} does not score turns")

    def reference_problems(self, case: TestCase, options: EvaluationOptions) -> list[Problem]:
        """The faults of a case's targets of this kind that any response would meet (what `validate`
        reports for test cases given without responses)."""
        return []

    def case_metrics(self, result: CaseResult) -> dict[str, float | None]:
        """Each metric of `metrics` for one case (None where the case has no value)."""
        return {metric.key: None for metric in self.metrics}

    def explain(self, result: CaseResult) -> str | None:
        """Why the case lost points, in one short line of the analyst's words (None: it did not)."""
        return None

    def passes(self, result: CaseResult, rules: PassRules) -> bool | None:
        """Whether one evaluated attempt passes this kind's rule (`pass_rule`); None: no verdict
        (no rule, no target of the kind, or no value, e.g. an answer the judge did not score)."""
        return None

    def main_metric_key(self) -> str | None:
        return self.main_metric or next((metric.key for metric in self.metrics if metric.headline), None)

    def case_grade(self, result: CaseResult) -> str | None:
        """The case's grade, one of `grades` (None: not graded, e.g. not evaluated)."""
        return None

    def ranking(self) -> tuple[str, ...]:
        """The metric keys the weakest cases are ranked by (see `rank_metrics`)."""
        return self.rank_metrics or tuple(metric.key for metric in self.metrics if metric.headline)

    def case_facts(self, result: CaseResult) -> dict[str, list[str]]:
        """What a later run needs to say what changed (default: the case's explanation)."""
        why = self.explain(result)
        return {"why": [why]} if why else {}

    def explain_change(self, old: Facts, new: Facts) -> str | None:
        """What changed between two runs of a case, in one short line (None: nothing to say).

        The default compares the explanations: a new one is said as it is, one that went away is
        said as "was: ..."."""
        before, after = "; ".join(old.get("why") or ()), "; ".join(new.get("why") or ())
        if after == before:
            return None
        if after:
            return after
        return f"was: {before}"

    # --- the workbook ----------------------------------------------------------------------------

    def present(self, results: Sequence[CaseResult]) -> bool:
        """Whether the run has anything of this kind (its columns and tables appear only then)."""
        return any(self.has_target(result.case) for result in results)

    def overview_columns(self, results: Sequence[CaseResult], *, templates_dir: str | None) -> list[Column]:
        return [Column(m.label, _metric_value(self, m.key), 10, "score", score=True,
                       place="score" if m.headline else "number", metric=m.key) for m in self.metrics]

    def details_rows(self, result: CaseResult) -> Iterator[DetailRow]:
        return iter(())

    def statistics_tables(self, results: Sequence[CaseResult]) -> list[Table]:
        return []

    def results_section(self, results: Sequence[CaseResult]) -> Mapping[str, Any] | None:
        """The kind's suite-level figures for the results file, JSON-ready, written under
        `kinds.<name>` (None: none). The built-in kinds' figures have their historic places
        (graphrag-eval's `aggregates`, `data_query_metrics`)."""
        return None


def _over_attempts(
    metrics_of: Callable[[Kind, CaseResult], dict[str, float | None]]
) -> Callable[[Kind, CaseResult], dict[str, float | None]]:
    """`metrics_of` for a case run once; the mean of each metric over the attempts (those that
    have it) for a case answered several times."""
    def case_metrics(kind: Kind, result: CaseResult) -> dict[str, float | None]:
        if not result.attempts:
            return metrics_of(kind, result)
        each = [metrics_of(kind, attempt) for attempt in result.attempts]
        return {key: mean_over_turns(values.get(key) for values in each) for key in each[0]}

    case_metrics.over_attempts = True  # type: ignore[attr-defined]
    case_metrics.__doc__ = metrics_of.__doc__
    return case_metrics


def _grade_over_attempts(
    grade_of: Callable[[Kind, CaseResult], str | None]
) -> Callable[[Kind, CaseResult], str | None]:
    """`grade_of` for a case run once; for a case answered several times, the grade most of its
    graded attempts got (the worse one on a tie)."""
    def case_grade(kind: Kind, result: CaseResult) -> str | None:
        if not result.attempts:
            return grade_of(kind, result)
        counts = Counter(grade for attempt in result.attempts if (grade := grade_of(kind, attempt)) is not None)
        if not counts:
            return None
        rank = {grade: index for index, grade in enumerate(kind.grades)}
        return max(counts, key=lambda grade: (counts[grade], rank.get(grade, len(rank))))

    case_grade.over_attempts = True  # type: ignore[attr-defined]
    case_grade.__doc__ = grade_of.__doc__
    return case_grade


def _metric_value(kind: Kind, key: str) -> Callable[[CaseResult], float | None]:
    return lambda result: kind.case_metrics(result).get(key)


def mean_over_turns(values: Iterable[Any]) -> float | None:
    """The mean of the numbers among `values` (booleans, NaN and infinities are not numbers here);
    None without any."""
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    return fmean(numbers) if numbers else None


# --- the registry --------------------------------------------------------------------------------

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


def _register_builtins() -> None:
    from qareport.kinds.answers import ANSWERS
    from qareport.kinds.indicator_selection import INDICATOR_SELECTION
    from qareport.kinds.steps import STEPS

    for kind in (INDICATOR_SELECTION, STEPS, ANSWERS):
        register(kind)


_register_builtins()
