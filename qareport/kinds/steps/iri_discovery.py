"""iri_discovery (graphrag-eval 6.x): the reference IRI turned up in the agent's lookups.

Applies under 6.x to every reference step named `iri_discovery`, whatever the actual step's name;
under 5.x never. The reference step's `output` is the IRI. It is found:

* in an `autocomplete_search` call: as the value of a binding of type `uri` in its SPARQL JSON
  output (a literal holding the IRI text does not count);
* in a `sparql_query` call: anywhere in its output text (as 6.6 looks for it: a substring, so
  `urn:x:1` is also found in `urn:x:10`).

Calls of other tools never find it. An `autocomplete_search` output that is not a SPARQL JSON
result, or a binding value without a `type`, is a steps error where 6.6 raises.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from qareport.evaluation_options import Semantics
from qareport.kinds.steps.parsed_outputs import parsed_json
from qareport.kinds.steps.step_kind import (
    MATCH,
    NO_MATCH,
    Comparison,
    ReferenceStepsError,
    Step,
    StepPair,
    StepsError,
    actual_output,
)

IRI_DISCOVERY = "iri_discovery"
AUTOCOMPLETE_SEARCH = "autocomplete_search"
SPARQL_QUERY = "sparql_query"


class IriDiscovery:
    name = IRI_DISCOVERY

    def applies(self, reference: Step, actual: Step, *, semantics: Semantics) -> bool:
        return semantics == 6 and reference["name"] == IRI_DISCOVERY

    def called_as(self, reference: Step, *, semantics: Semantics) -> tuple[str, ...] | None:
        """The calls that can find the IRI (for explaining a miss)."""
        if semantics == 6 and reference.get("name") == IRI_DISCOVERY:
            return (AUTOCOMPLETE_SEARCH, SPARQL_QUERY)
        return None

    def compare(self, pair: StepPair, *, explain: bool = False) -> Comparison:
        output = actual_output(pair)
        name = pair.actual["name"]
        if name not in (AUTOCOMPLETE_SEARCH, SPARQL_QUERY):
            return Comparison(0.0, f"{name} calls cannot discover an IRI" if explain else None)
        if "output" not in pair.reference:
            raise ReferenceStepsError(f"{pair.reference_label} has no 'output'; give the IRI the step must find.")
        iri = pair.reference["output"]
        if name == SPARQL_QUERY:
            try:
                found = iri in output
            except TypeError:
                raise StepsError(
                    f"{pair.reference_label} or {pair.actual_label}: the IRI and the sparql_query output "
                    "must both be text."
                ) from None
            if found:
                return MATCH
            return Comparison(0.0, "IRI not in the sparql_query output" if explain else None)
        in_literal = False
        for value in _binding_values(output, pair):
            if not isinstance(value, Mapping) or "type" not in value:
                raise StepsError(
                    f"{pair.actual_label} has a binding value without a 'type'; an autocomplete_search "
                    "output must be a SPARQL JSON result."
                )
            if value["type"] == "uri":
                if value.get("value") == iri:
                    return MATCH
            elif value.get("value") == iri:
                in_literal = True
        if not explain:
            return NO_MATCH
        if in_literal:
            return Comparison(0.0, "IRI found in autocomplete_search, but as a literal, not a uri binding")
        return Comparison(0.0, "IRI not found in any autocomplete_search binding")


def _binding_values(output: Any, pair: StepPair) -> Iterator[Any]:
    """Every value of every binding, in order (read lazily: the first match ends the search)."""
    try:
        bindings = iter(parsed_json(output)["results"]["bindings"])
    except (TypeError, ValueError, KeyError, IndexError, RecursionError):
        raise _not_a_result(pair) from None
    for binding in bindings:
        if not isinstance(binding, Mapping):
            raise _not_a_result(pair)
        yield from binding.values()


def _not_a_result(pair: StepPair) -> StepsError:
    return StepsError(
        f"{pair.actual_label} has an 'output' that is not a SPARQL JSON result with bindings; an "
        "autocomplete_search output must be one."
    )


IRI_DISCOVERY_KIND = IriDiscovery()
