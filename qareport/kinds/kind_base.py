"""The `Kind` base class: the protocol a kind of target implements, with its defaults. A kind scores
one answer (`attempt_metrics`, `attempt_grade`); the base class gives a case's metrics and grade over
its attempts (`case_metrics`, `case_grade`), so that no kind has to know about attempts. A kind's
author imports it from `qareport.kinds`."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from statistics import fmean
from typing import TYPE_CHECKING, Any

from qareport.input_shapes import plain
from qareport.records import CaseResult, Problem, TestCase
from qareport.yaml_values import line_of

if TYPE_CHECKING:
    from qareport.evaluation_options import EvaluationOptions

from qareport.evaluation_options import PassRules
from qareport.kinds.kind_records import (
    Column,
    DetailRow,
    Facts,
    KindFigures,
    Metric,
    OutputText,
    SharedEvaluation,
    SuiteFigures,
    SuiteOptions,
    Table,
    TurnInput,
)


class Kind:
    """One kind of target. Subclasses set `name`, `label` and `metrics` and override what applies.

    `name` is the key of the kind's part under a user message's `target:` (and, by default, of a
    response turn's output).
    """

    name: str = ""
    label: str = ""
    metrics: tuple[Metric, ...] = ()

    @property
    def rank_metrics(self) -> tuple[str, ...]:
        """How the weakest cases of this kind are ranked, lowest first, key after key (default: the
        kind's headline metrics; a kind sets its own as a class attribute). Unlike metrics of
        different kinds are never averaged into one rank."""
        return tuple(metric.key for metric in self.metrics if metric.headline)

    grades: tuple[str, ...] = ()
    """The grades the kind gives a case, best first (none: it does not grade). A case's grade is
    kept with its facts (`GRADE_FACT`), counted in the Summary, and a grade that moves between two
    runs is a change (a regression when it gets worse)."""
    grade_key: str = "grade"  # how a change line names the kind's grade (give each grading kind its own)
    definition_facts: tuple[str, ...] = ()
    """The facts (`case_facts` names) that follow from the test alone: between two runs of a test not
    known to have changed they are not compared (an older run may lack them or word them otherwise)."""
    @property
    def main_metric(self) -> str | None:
        """The metric whose spread over a case's attempts the Overview shows, and by which a case's
        change between two runs is decided (default: the kind's first headline metric; a kind sets
        its own as a class attribute)."""
        return next((metric.key for metric in self.metrics if metric.headline), None)

    reads_target: bool = True
    """Whether the kind has a part under `target:` (a kind that only reads the judge's results has not)."""
    in_questions: bool = False
    """Whether a question of a graphrag-eval Q&A dataset carries this kind's part (under `name`)."""
    shared: SharedEvaluation | None = None
    output_text: OutputText | None = None
    """How its output of a turn is kept with the run and shown in the Compare sheet (None: it is not)."""
    """The evaluation this kind is scored in together with others (None: `evaluate_turn`)."""
    @property
    def output_key(self) -> str | None:
        """The key of a response turn (or record) that holds this kind's output (default: `name`;
        None: the kind reads nothing of a response)."""
        return self.name

    # --- reading -------------------------------------------------------------------------------

    def read_target(self, target: Mapping[str, Any], *, line: int | None) -> object:
        """This kind's part of a target mapping as read (with its lines, `yaml_values.line_of`); None
        when it has none. The default hands the value, as plain data, to `parse_target`."""
        value = target.get(self.name)
        return None if value is None else self.parse_target(plain(value), line=line_of(target, self.name))

    def declared_in(self, target: Mapping[str, Any]) -> bool:
        """Whether a target mapping (or a Q&A question) has a part of this kind, read or not: a
        case too broken to read counts among the cases that could have had the kind's metrics, the
        same as it would if it could be read (`read_target` would give a part)."""
        return target.get(self.name) is not None

    def parse_target(self, value: Any, *, line: int | None) -> object:
        """This kind's part of a target, checked; raise `qareport.errors.ShapeError` when unusable."""
        return value

    def parse_output(self, turn: Mapping[str, Any], *, line: int | None) -> object:
        """This kind's part of a response turn (None when absent); raise `ShapeError` when unusable."""
        return None if self.output_key is None else turn.get(self.output_key)

    def output_as_written(self, turn: Mapping[str, Any]) -> None:
        """Put back, in a YAML response turn, the ids and names YAML 1.1 read as something else (see
        `input_shapes.written`), before the record loses what YAML remembered. Default: nothing."""

    # --- scoring -------------------------------------------------------------------------------

    def has_target(self, case: TestCase) -> bool:
        """Whether the case has a target of this kind (or declares one, when it could not be read)."""
        return self.name in case.declared_targets or (self.reads_target and any(
            turn.target.parts.get(self.name) is not None for turn in case.turns))

    def evaluate_turn(self, turn: TurnInput) -> object:
        """Score one turn that has a target of this kind; the result is kept in `TurnResult.scores[name]`."""
        raise NotImplementedError(f"kind {self.name!r} does not score turns")

    def reference_problems(self, case: TestCase, options: EvaluationOptions) -> list[Problem]:
        """The faults of a case's targets of this kind that any response would meet (what `validate`
        reports for test cases given without responses)."""
        return []

    def attempt_metrics(self, result: CaseResult) -> dict[str, float | None]:
        """Each metric of `metrics` for one answer of a case (None where it has no value)."""
        return {metric.key: None for metric in self.metrics}

    def case_metrics(self, result: CaseResult) -> dict[str, float | None]:
        """Each metric of one case: its answer's (`attempt_metrics`), or for a case answered several
        times the mean over the attempts that have a value. Not to be overridden."""
        if not result.attempts:
            return self.attempt_metrics(result)
        each = [self.attempt_metrics(attempt) for attempt in result.attempts]
        return {key: mean_over_turns(values.get(key) for values in each) for key in each[0]}

    def breakdown(self, result: CaseResult) -> dict[str, dict[str, float]]:
        """A case's figures per part the kind scores separately (indicator selection: per dimension,
        its precision and recall), kept with the run so the next one can say which part changed."""
        return {}

    def explain(self, result: CaseResult) -> str | None:
        """Why the case lost points, in one short line of the analyst's words (None: it did not)."""
        return None

    def pass_rule(self, rules: PassRules) -> str:
        """When an attempt passes (`passes`) by `rules`, the thresholds the run used, in the analyst's
        words (empty: the kind has no pass rule)."""
        return ""

    def passes(self, result: CaseResult, rules: PassRules) -> bool | None:
        """Whether one evaluated attempt passes this kind's rule (`pass_rule`); None: no verdict
        (no rule, no target of the kind, or no value, e.g. an answer the judge did not score)."""
        return None

    def attempt_grade(self, result: CaseResult) -> str | None:
        """The grade of one answer of a case, one of `grades` (None: not graded, e.g. not evaluated)."""
        return None

    def case_grade(self, result: CaseResult) -> str | None:
        """The case's grade: its answer's (`attempt_grade`), or for a case answered several times the
        grade most of its graded attempts got (the worse one on a tie). Not to be overridden."""
        if not result.attempts:
            return self.attempt_grade(result)
        counts = Counter(grade for attempt in result.attempts if (grade := self.attempt_grade(attempt)) is not None)
        if not counts:
            return None
        rank = {grade: index for index, grade in enumerate(self.grades)}
        return max(counts, key=lambda grade: (counts[grade], rank.get(grade, len(rank))))

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
        """The tables the kind adds to the Statistics sheet (with their notes and charts)."""
        return []

    def results_section(self, results: Sequence[CaseResult]) -> Mapping[str, Any] | None:
        """The kind's suite-level figures for the results file, JSON-ready, written under
        `kinds.<name>` (None: none)."""
        return None

    def suite_figures(self, results: Sequence[CaseResult], options: SuiteOptions) -> SuiteFigures | None:
        """The kind's figures over the run, computed once (`statistics.summarize`); None when the run
        has nothing of the kind. The default is `statistics_tables` and `results_section`; a kind whose
        figures others read (the built-in ones) returns its own typed `SuiteFigures`."""
        if not self.present(results):
            return None
        tables, section = tuple(self.statistics_tables(results)), self.results_section(results)
        return KindFigures(self.name, tables, section) if tables or section is not None else None


def _metric_value(kind: Kind, key: str) -> Callable[[CaseResult], float | None]:
    return lambda result: kind.case_metrics(result).get(key)


def mean_over_turns(values: Iterable[Any]) -> float | None:
    """The mean of the numbers among `values` (booleans, NaN and infinities are not numbers here);
    None without any."""
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    return fmean(numbers) if numbers else None
