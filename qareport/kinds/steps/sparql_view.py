"""What an analyst reads of a SPARQL step where its score is reviewed: the query as it was written
(line breaks kept) and a short view of the rows the call returned against the rows the reference
requires. Pure; no I/O.

    returned 3 rows: OSLO T1 | urn:uuid:f176…; OSLO T2 | urn:uuid:f176…; …
    required 2 rows (transformerName, transformer): OSLO T1 | urn:uuid:f176…; …

A query is a step's `args.query` (arguments given as JSON text are read first). Rows are shown for
a SPARQL JSON result (`head` / `results.bindings`, or an ASK's `boolean`); anything else has no view.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qareport.kinds.steps.sparql_cells import parse_sparql_term

SPARQL_JSON = "application/sparql-results+json"
ROWS_SHOWN = 3  # rows of each result shown; the count says how many there are
CELL_CHARS = 60  # characters of one cell shown (an IRI such as urn:uuid:… whole)
UNBOUND_SHOWN = "–"
_LINE_BREAKS = re.compile(r"[\r\n\t\u2028\u2029]+")


@dataclass(frozen=True, slots=True)
class SparqlView:
    """A reference SPARQL step and the call shown beside it (the one that matched it, else the last
    call of the same name): each query, and each result's short view (None where there is none)."""

    reference_query: str | None
    actual_id: Any
    actual_query: str | None
    returned: str | None
    required: str | None

    def lines(self) -> list[tuple[str, str]]:
        """(what, text) for each part there is: reference query, actual query, rows returned, rows required."""
        parts = (("reference query", self.reference_query), ("actual query", self.actual_query),
                 ("rows returned", self.returned), ("rows required", self.required))
        return [(what, text) for what, text in parts if text]


def is_sparql_step(step: Mapping[str, Any]) -> bool:
    """A reference SPARQL step: its result is a SPARQL JSON result, or its name says SPARQL (a
    retrieval's or a search's `query` is text to look for, not a query to review)."""
    return step.get("output_media_type") == SPARQL_JSON or "sparql" in str(step.get("name") or "").lower()


def sparql_view(reference: Mapping[str, Any], actual_steps: Sequence[Mapping[str, Any]],
                matched_id: Any) -> SparqlView:
    """The view of `reference` beside the call `matched_id` names, else the last call of its name."""
    call = _paired_call(reference, actual_steps, matched_id)
    required = reference.get("required_columns")
    columns = [str(name) for name in required] if isinstance(required, list) and required else None
    return SparqlView(
        reference_query=step_query(reference),
        actual_id=call.get("id") if call is not None else None,
        actual_query=step_query(call) if call is not None else None,
        returned=rows_view(call.get("output"), None) if call is not None and call.get("status") == "success" else None,
        required=rows_view(reference.get("output"), columns),
    )


def _paired_call(reference: Mapping[str, Any], actual_steps: Sequence[Mapping[str, Any]],
                 matched_id: Any) -> Mapping[str, Any] | None:
    if matched_id is not None:
        for step in actual_steps:
            if step.get("id") == matched_id:
                return step
    same_name = [step for step in actual_steps if step.get("name") == reference.get("name")]
    succeeded = [step for step in same_name if step.get("status") == "success"]
    candidates = succeeded or same_name
    return candidates[-1] if candidates else None


def step_query(step: Mapping[str, Any]) -> str | None:
    """The step's query as written, without blank lines around it and its common indent; None
    when its arguments hold no query text."""
    args = step.get("args")
    if isinstance(args, str):
        args = _json(args)
    query = args.get("query") if isinstance(args, Mapping) else None
    if not isinstance(query, str) or not query.strip():
        return None
    return textwrap.dedent(query.strip("\n")).rstrip()


def rows_view(output: Any, columns: Sequence[str] | None) -> str | None:
    """"3 rows: a | b; c | d; …", "yes" / "no" for an ASK result, "no rows"; None for an output that
    is not a SPARQL JSON result. `columns`: the ones to show (the required ones), else every variable."""
    result = _json(output) if isinstance(output, str) else output
    if not isinstance(result, Mapping):
        return None
    if isinstance(result.get("boolean"), bool) and "results" not in result:
        return "yes" if result["boolean"] else "no"
    bindings = (result.get("results") or {}).get("bindings") if isinstance(result.get("results"), Mapping) else None
    if not isinstance(bindings, list):
        return None
    head = result.get("head")
    variables = head.get("vars") if isinstance(head, Mapping) else None
    shown = list(columns) if columns else [str(name) for name in variables or ()]
    if not bindings:
        return "no rows"
    count = f"{len(bindings):,} row{'s' if len(bindings) != 1 else ''}"
    named = f" ({', '.join(shown)})" if columns else ""
    rows = [" | ".join(_cell(row, name) for name in shown) for row in bindings[:ROWS_SHOWN]]
    more = "; …" if len(bindings) > ROWS_SHOWN else ""
    return f"{count}{named}: {'; '.join(rows)}{more}"


def _cell(row: Any, name: str) -> str:
    term = row.get(name) if isinstance(row, Mapping) else None
    value = parse_sparql_term(term) if term is not None else None
    if value is None:
        return UNBOUND_SHOWN
    text = _LINE_BREAKS.sub(" ", str(value))  # one line; its spaces kept, as they may be the difference
    return text if len(text) <= CELL_CHARS else text[:CELL_CHARS] + "…"


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None
