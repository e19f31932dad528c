"""SPARQL results: an actual SPARQL JSON result against the reference result (see `tables`).

Applies (graphrag-eval's rules):
  5.x  the reference step's `output_media_type` is application/sparql-results+json (the actual
       step has the reference step's name, as every 5.x candidate has);
  6.x  the same, and both steps are named `sparql_query`.

Compared on the reference step's `required_columns` (a single name written as a string is that one
column), `ordered` (default false) and `ignore_duplicates` (default true). An actual output that is
not JSON (DESCRIBE / CONSTRUCT in Turtle) never matches. A reference output that is not JSON is a
steps error under 5.x (graphrag-eval 5.2 raises) and no match under 6.x (6.6 scores it 0).
"""

from __future__ import annotations

from typing import Any

from qareport.evaluation_options import Semantics
from qareport.kinds.steps.parsed_outputs import parsed_json
from qareport.kinds.steps.step_kind import (
    MATCH,
    NO_MATCH,
    SPARQL_RESULTS_JSON,
    Comparison,
    ReferenceStepsError,
    Step,
    StepPair,
    actual_output,
    parse_reference_json,
)
from qareport.kinds.steps.tables import SparqlResultError, compare_tables

SPARQL_QUERY = "sparql_query"


class SparqlResults:
    name = "SPARQL results"

    def applies(self, reference: Step, actual: Step, *, semantics: Semantics) -> bool:
        if reference.get("output_media_type") != SPARQL_RESULTS_JSON:
            return False
        return semantics == 5 or reference["name"] == actual["name"] == SPARQL_QUERY

    def compare(self, pair: StepPair, *, explain: bool = False) -> Comparison:
        reference = pair.reference
        output = actual_output(pair)
        try:
            actual_result: Any = parsed_json(output)
        except (TypeError, ValueError, RecursionError):
            actual_result = str(output)  # not JSON (DESCRIBE / CONSTRUCT): never matches
        if pair.semantics == 6:
            if isinstance(actual_result, str):  # 6.6 stops here, before reading the reference
                return Comparison(0.0, "returned no SPARQL JSON result (not JSON: a DESCRIBE or CONSTRUCT result?)")
            try:
                reference_result = parsed_json(reference.get("output"))
            except (ValueError, RecursionError):
                return Comparison(0.0, "the reference output is not JSON, so nothing can match it")
            except TypeError:
                raise ReferenceStepsError(
                    f"{pair.reference_label} has no 'output'; add the SPARQL JSON result the step must produce."
                ) from None
        else:
            reference_result = parse_reference_json(pair, SPARQL_RESULTS_JSON)
            if isinstance(actual_result, str):  # graphrag-eval 5.2 stops on it (json.loads)
                return Comparison(0.0, "returned no SPARQL JSON result (not JSON: a DESCRIBE or CONSTRUCT result?)",
                                  "its output is not JSON (a DESCRIBE or CONSTRUCT result in Turtle?), on which "
                                  "graphrag-eval 5.2 stops; scored as no match")
        if "required_columns" not in reference:
            raise ReferenceStepsError(
                f"{pair.reference_label} has no 'required_columns'; add the list of columns the answer "
                "must contain."
            )
        required_columns = reference["required_columns"]
        head_vars = _head_vars(actual_result)
        try:
            verdict = compare_tables(
                reference_result,
                _vars_as_list(actual_result, head_vars),
                _columns_as_list(required_columns),
                ordered=reference.get("ordered", False),
                ignore_duplicates=reference.get("ignore_duplicates", True),
                explain=explain,
            )
        except SparqlResultError as error:
            raise ReferenceStepsError(f"{pair.reference_label}: {error}; fix the reference step.") from None
        if verdict.note is None and type(required_columns) is not str and type(head_vars) is not str:
            if verdict.matched:  # the common verdicts, without notes: no new objects
                return MATCH
            return NO_MATCH if verdict.reason is None else Comparison(0.0, verdict.reason)
        notes = [note for note in (_string_note(required_columns, "'required_columns'"),
                                   _string_note(head_vars, "the actual 'head.vars'"),
                                   verdict.note) if note]
        if verdict.matched and not notes:
            return MATCH
        return Comparison(float(verdict.matched), verdict.reason, "; ".join(notes) or None)


def _columns_as_list(required_columns: Any) -> Any:
    """`required_columns: name` is the one column `name` (graphrag-eval reads a string letter by
    letter, which is the same for a one-letter name)."""
    return [required_columns] if isinstance(required_columns, str) else required_columns


def _head_vars(result: Any) -> Any:
    head = result.get("head") if type(result) is dict else None
    return head.get("vars") if type(head) is dict else None


def _vars_as_list(result: Any, variables: Any) -> Any:
    """`head.vars` (`variables`) written as one string is that one variable (as for `required_columns`)."""
    if isinstance(variables, str):
        return {**result, "head": {**result["head"], "vars": [variables]}}
    return result


def _string_note(value: Any, what: str) -> str | None:
    """A note where graphrag-eval reads a name otherwise: a string of several letters."""
    if isinstance(value, str) and len(value) > 1:
        return (f"{what} is the string {value!r}, read as that one name (graphrag-eval reads it letter "
                "by letter); write it as a list")
    return None


SPARQL_RESULTS = SparqlResults()
