"""Steps score: which actual tool calls reproduce the reference's groups of steps. Pure.

Two sets of rules, graphrag-eval's, chosen by `semantics`:

**5** (graphrag-eval 5.2: `get_steps_matches`, `evaluate_steps`)

* Only the **last** group of `reference_steps` is scored.
* The candidates for a reference step are the actual steps with status `success` and the same
  `name`. Reference steps are taken in group order; each tries its candidates latest first and
  takes the first whose output scores above 0. An actual step matches at most one reference step.
* The score is the sum of the match scores over the number of steps in the last group.

**6** (graphrag-eval 6.6: `match_groups`, `calculate_steps_score`)

* **Every** group is scored, the last first. Within a group the reference steps are taken last
  first, and each tries every successful actual step (whatever its name: the step kinds decide
  which pairs can match), latest first, up to the earliest call matched by the later group; the
  first scoring above 0 is its match, and an actual step matches one reference step per group.
* When a group is not matched in full, the groups before it are not tried.
* The score is the mean over the groups of (the sum of the group's match scores over its size).

Outputs are compared by the step kinds (`registry.STEP_KINDS`: SPARQL results, retrieval, the
time-series lookups, IRI discovery, JSON, exact text), each saying under which rules it applies.

Where graphrag-eval raises (a step without what the comparison needs, an empty group, output that
must be JSON and is not, ...), `evaluate_steps` returns an outcome whose `error` names the question,
the step and what to fix, and whose `score` is None. As in graphrag-eval, a step is only checked
when the rules reach it: a reference step without output that no actual step could match does not
stop the scoring. Where graphrag-eval stops on an input that qareport scores (an infinite number in
a SPARQL result, an ASK answer without `head` for a SELECT reference, a failed retrieval call under
5.x, a column list written as a string), the outcome carries a note.

The records made here, `StepMatch` and `StepsOutcome`, are `outcome`'s; `verdicts` explains a
scored question afterwards, and nothing here imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from qareport.evaluation_options import DEFAULT_SEMANTICS, Semantics
from qareport.kinds.steps import step_shapes
from qareport.kinds.steps.exact import EXACT_OUTPUT
from qareport.kinds.steps.outcome import StepMatch, StepsOutcome
from qareport.kinds.steps.parsed_outputs import close_scope, open_scope
from qareport.kinds.steps.registry import chosen_kinds, step_kind_for
from qareport.kinds.steps.step_kind import (
    Comparison,
    ReferenceStepsError,
    StepKind,
    StepPair,
    StepsError,
    actual_label,
    reference_label,
)

_new_tuple = tuple.__new__  # named tuples made without their own __new__, a Python function


class StepsScore(NamedTuple):
    """The steps score of one question and its matches, or the fault that stopped the scoring: what
    a result dict needs, without the records a `StepsOutcome` adds (`score_steps`; a named tuple,
    made several times faster than the frozen dataclass, for every question of `qa.run_evaluation`)."""

    score: float | None
    matches: tuple[StepMatch, ...] = ()
    notes: tuple[str, ...] = ()
    fault: str | None = None  # what is wrong and how to fix it (the StepsError's message)
    fault_in_reference: bool = False  # in the reference steps (a ReferenceStepsError), not the response
    every_call_succeeded: bool = False  # known to have no failed call


def evaluate_steps(
    reference_groups: Sequence[Sequence[Mapping[str, Any]]],
    actual_steps: Sequence[Mapping[str, Any]],
    *,
    question_id: str | None = None,
    semantics: Semantics = DEFAULT_SEMANTICS,
) -> StepsOutcome:
    """Score `actual_steps` against `reference_groups` under graphrag-eval `semantics` (5 or 6; see
    the module doc). Neither argument is modified. `question_id` only names the question in `error`.
    """
    return steps_outcome(score_steps(reference_groups, actual_steps, semantics=semantics), actual_steps,
                         question_id=question_id, semantics=semantics)


def score_steps(reference_groups: Sequence[Sequence[Mapping[str, Any]]], actual_steps: Sequence[Mapping[str, Any]],
                *, semantics: Semantics = DEFAULT_SEMANTICS) -> StepsScore:
    """`evaluate_steps`'s score, matches and notes, or the fault that stopped it."""
    scope = open_scope()  # each output parsed once for all the pairs compared
    try:
        return _score_steps(reference_groups, actual_steps, semantics)
    finally:
        close_scope(scope)


def steps_outcome(scored: StepsScore, actual_steps: Sequence[Mapping[str, Any]], *, question_id: str | None,
                  semantics: Semantics) -> StepsOutcome:
    """The `StepsOutcome` of a question scored by `score_steps`."""
    failed_calls = () if scored.every_call_succeeded else step_shapes.failed_calls(actual_steps)
    if scored.fault is not None:
        return StepsOutcome(score=None, failed_calls=failed_calls, error=steps_error(scored.fault, question_id),
                            semantics=semantics, fault=scored.fault, fault_in_reference=scored.fault_in_reference)
    return StepsOutcome(score=scored.score, matches=scored.matches, failed_calls=failed_calls, notes=scored.notes,
                        semantics=semantics)


def steps_error(fault: str, question_id: str | None) -> str:
    """The steps error of a question: "question 'X': <fault>" (graphrag-eval users see which question)."""
    return f"question {question_id!r}: {fault}" if question_id is not None else fault


def _score_steps(reference_groups: Sequence[Sequence[Mapping[str, Any]]], actual_steps: Sequence[Mapping[str, Any]],
                 semantics: Semantics) -> StepsScore:
    matcher = _Matcher(actual_steps)
    try:
        if semantics == 6:
            groups = step_shapes.all_groups(reference_groups)
            successful = step_shapes.successful_calls(actual_steps)
            matches = matcher.match_all_groups(groups, successful)
            score = _mean_of_group_scores(groups, matches)
        else:
            last_group = step_shapes.last_group(reference_groups)
            step_shapes.refuse_six_only_steps(last_group)
            successful = step_shapes.successful_calls(actual_steps)
            candidates = step_shapes.candidates_by_name(last_group, actual_steps, successful)
            matches = matcher.match_last_group(last_group, candidates)
            total = 0.0  # added in match order from 0.0, as graphrag-eval does, for identical floats
            for match in matches:
                total += match.score
            score = total / len(last_group)
            matcher.notes.extend(step_shapes.failed_retrieval_notes(actual_steps))
    except StepsError as error:
        return StepsScore(None, fault=str(error), fault_in_reference=isinstance(error, ReferenceStepsError))
    notes = tuple(dict.fromkeys(matcher.notes)) if matcher.notes else ()
    # every call successful (the checked steps are a sequence): no failed call to look for
    return _new_tuple(StepsScore, (score, matches, notes, None, False, len(successful) == len(actual_steps)))


def annotate_reference_steps(
    reference_groups: Sequence[Sequence[Mapping[str, Any]]],
    outcome: StepsOutcome | StepsScore,
    actual_steps: Sequence[Mapping[str, Any]],
) -> list[list[dict[str, Any]]]:
    """A copy of `reference_groups` in which each matched reference step has `matches` set to the
    id of its actual step, as graphrag-eval writes it.

    A step that appears in several places (a YAML anchor and its aliases) stays one object in the
    copy, so `matches` shows wherever it appears, the last match written winning, as it does in
    graphrag-eval (which writes into its input).
    """
    copies: dict[int, dict[str, Any]] = {}
    annotated = []
    for group in reference_groups:  # loops rather than a comprehension calling dict() for every step
        copied = []
        for step in group:
            key = id(step)
            if key in copies:
                copied.append(copies[key])
            else:
                copies[key] = copy = step.copy() if type(step) is dict else dict(step)
                copied.append(copy)
        annotated.append(copied)
    for match in outcome.matches:
        actual_id = match.actual_id
        if 0 <= match.actual_index < len(actual_steps):
            actual_id = actual_steps[match.actual_index].get("id", actual_id)
        annotated[match.group_index][match.reference_index]["matches"] = actual_id
    return annotated


def compare_pair(pair: StepPair, *, explain: bool = False) -> Comparison:
    """One reference step against one actual step, by the step kind that applies (5.x first checks
    that both have an output, as graphrag-eval 5.2 does). Raises StepsError."""
    if pair.semantics == 5:
        if not pair.reference.get("output"):
            raise ReferenceStepsError(f"{pair.reference_label} has no 'output'; add the output the step must produce.")
        if "output" not in pair.actual:
            raise StepsError(
                f"{pair.actual_label} has status 'success' but no 'output'; record the step's output, or set "
                "its status to 'error'."
            )
    kind = step_kind_for(pair.reference, pair.actual, semantics=pair.semantics)
    return kind.compare(pair, explain=explain)


class _Matcher:
    """The matching of one question's steps, and the notes its comparisons leave."""

    def __init__(self, actual_steps: Sequence[Mapping[str, Any]]):
        self.actual_steps = actual_steps
        self.notes: list[str] = []

    def score_5(self, reference: Mapping[str, Any], reference_index: int, actual_index: int, place: str) -> float:
        pair = StepPair(reference, self.actual_steps[actual_index], reference_index, actual_index, place, 5)
        return self.scored(pair, compare_pair(pair))

    def score_6(self, reference: Mapping[str, Any], reference_index: int, actual_index: int, place: str,
                kind: StepKind) -> float:
        """`compare_pair` under 6.x, by `kind`, without 5.x's checks."""
        pair = StepPair(reference, self.actual_steps[actual_index], reference_index, actual_index, place, 6)
        return self.scored(pair, kind.compare(pair))

    def scored(self, pair: StepPair, comparison: Comparison) -> float:
        if comparison.note is not None:
            self.notes.append(f"{pair.actual_label} against {pair.reference_label}: {comparison.note}")
        return comparison.score

    def matched(self, reference: Mapping[str, Any], reference_index: int, actual_index: int,
                score: float, group_index: int, place: str) -> StepMatch:
        """The match; StepsError when the actual step has no id."""
        actual = self.actual_steps[actual_index]
        if "id" not in actual:
            raise StepsError(
                f"{actual_label(actual_index, actual)} matches {reference_label(reference_index, reference, place)} "
                "but has no 'id'; give every step the id of its tool call."
            )
        return _new_tuple(StepMatch, (reference_index, actual_index, actual["id"], score, group_index))

    def match_last_group(self, group: Sequence[Mapping[str, Any]],
                         candidates: dict[Any, list[int]]) -> tuple[StepMatch, ...]:
        used: set[int] = set()
        matches = []
        for reference_index, reference in enumerate(group):
            for actual_index in reversed(candidates.get(reference["name"], [])):
                if actual_index in used:
                    continue
                score = self.score_5(reference, reference_index, actual_index, "of the last group")
                if score > 0.0:
                    matches.append(self.matched(reference, reference_index, actual_index, score, -1,
                                                "of the last group"))
                    used.add(actual_index)
                    break
        return tuple(matches)

    def match_all_groups(self, groups: Sequence[Sequence[Mapping[str, Any]]],
                         calls: list[int]) -> tuple[StepMatch, ...]:
        """`calls`: the indices of the successful actual steps, in call order."""
        matches: list[StepMatch] = []
        actual_steps = self.actual_steps
        search_upto = len(actual_steps)
        score, matched = self.score_6, self.matched
        for group_index in reversed(range(len(groups))):
            group = groups[group_index]
            place = _GROUP_PLACES[group_index] if group_index < len(_GROUP_PLACES) else f"of group {group_index + 1}"
            used: set[int] = set()
            found = []
            successful = [index for index in reversed(calls) if index < search_upto]
            for reference_index in reversed(range(len(group))):
                reference = group[reference_index]
                try:
                    chosen = chosen_kinds(reference, semantics=6)
                except (KeyError, TypeError):  # parts that cannot be a key: `step_kind_for` asks the kinds
                    chosen = {}
                for actual_index in successful:
                    if actual_index in used:
                        continue
                    actual = actual_steps[actual_index]
                    kind = chosen.get(actual["name"])  # the successful calls' names are checked: keys
                    if kind is None:
                        kind = step_kind_for(reference, actual, semantics=6)
                    if kind is EXACT_OUTPUT and "output" in actual:
                        # most 6.x pairs (calls of other tools): `ExactOutput.compare`'s score, without a pair made
                        pair_score = 1.0 if reference.get("output") == actual["output"] else 0.0
                    else:
                        pair_score = score(reference, reference_index, actual_index, place, kind)
                    if pair_score > 0.0:
                        if "id" not in actual:
                            matched(reference, reference_index, actual_index, pair_score, group_index, place)
                        found.append(_new_tuple(StepMatch, (reference_index, actual_index, actual["id"], pair_score,
                                                            group_index)))
                        used.add(actual_index)
                        break
            matches.extend(found)
            if len(found) < len(group):
                break  # a reference step has no call: the earlier groups are not tried
            search_upto = min(used)  # the calls of `found`
        return tuple(matches)


_GROUP_PLACES = tuple(f"of group {number}" for number in range(1, 17))  # made once, not for every question


def searched_calls(groups: Sequence[Sequence[Mapping[str, Any]]], matches: Sequence[StepMatch],
                   group_index: int, actual_count: int) -> tuple[int, bool]:
    """Under 6.x: how many of the first calls `group_index` was matched against, and whether it was
    tried at all (a later group not matched in full stops the matching)."""
    upto = actual_count
    for later in range(len(groups) - 1, group_index, -1):
        found = [m.actual_index for m in matches if m.group_index == later]
        if len(found) < len(groups[later]) or not found:
            return upto, False
        upto = min(found)
    return upto, True


def _mean_of_group_scores(groups: Sequence[Sequence[Mapping[str, Any]]], matches: Sequence[StepMatch]) -> float:
    """6.6's arithmetic, step for step, for identical floats."""
    by_group = [0.0] * len(groups)  # a sum per group, from 0.0 in match order, as 6.6's defaultdict(float)
    for match in matches:
        by_group[match.group_index] += match.score
    total: float = 0
    for group_index in range(len(groups)):
        total += by_group[group_index] / len(groups[group_index])
    return total / len(groups)
