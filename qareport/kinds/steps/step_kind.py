"""What every kind of step implements: which step pairs it compares, and how. Pure; no I/O.

A *step kind* (SPARQL results, JSON output, retrieval, a time-series lookup, ...) is one module of
this package with one object implementing `StepKind`:

* `applies(reference, actual, semantics=...)`: whether this kind compares that reference step with
  that actual step under graphrag-eval's 5.x or 6.x rules (they differ: 6.x looks at both names);
* `compare(pair, explain=...)`: a `Comparison`, a score in [0, 1] (above 0 is a match) and, when
  it is below 1 and `explain` is asked for, a short reason in the analyst's words ("returned other rows (3
  of 5 required rows)"). Matching asks for scores only; reasons are asked for the steps that lost
  points.

`registry.STEP_KINDS` lists them in the order they are asked; the first that applies compares.
A step that lacks what its comparison needs makes `compare` raise `StepsError`, whose message
names the step and says what to fix (graphrag-eval would crash there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from qareport.evaluation_options import DEFAULT_SEMANTICS, Semantics
from qareport.kinds.steps.parsed_outputs import parsed_json

Step = Mapping[str, Any]

SPARQL_RESULTS_JSON = "application/sparql-results+json"
JSON = "application/json"


class StepsError(Exception):
    """A step lacks what scoring needs; the message says which step and what to fix."""


class ReferenceStepsError(StepsError):
    """A StepsError whose fault is in the reference steps (the test file), not in the response: the
    problem is then located at the test case, where it is fixed."""


@dataclass(frozen=True, slots=True)
class Comparison:
    """One actual step's output against one reference step's. Every score here lies in [0, 1],
    higher is better, and above 0 the actual step reproduces the reference step."""

    score: float
    reason: str | None = None  # why it is below 1, in the analyst's words (given when asked)
    note: str | None = None  # graphrag-eval stops on this input; how it was scored instead


MATCH = Comparison(1.0)
NO_MATCH = Comparison(0.0)  # without a reason: one object for every pair that does not match


class StepPair(NamedTuple):
    """A reference step and an actual step about to be compared, with where each sits (for
    messages: `place` is "of the last group" or "of group 2"). A named tuple rather than a frozen
    dataclass: one is made for every pair compared, and a tuple is made several times faster."""

    reference: Step
    actual: Step
    reference_index: int  # 0-based, within its group
    actual_index: int  # 0-based, within the actual steps
    place: str = "of the last group"
    semantics: Semantics = DEFAULT_SEMANTICS

    @property
    def reference_label(self) -> str:
        return reference_label(self.reference_index, self.reference, self.place)

    @property
    def actual_label(self) -> str:
        return actual_label(self.actual_index, self.actual)


class StepKind(Protocol):
    """One kind of step: which pairs it compares, and how (see the module docstring)."""

    name: str  # how the analyst calls it, e.g. "SPARQL results"

    def applies(self, reference: Step, actual: Step, *, semantics: Semantics) -> bool: ...

    def compare(self, pair: StepPair, *, explain: bool = False) -> Comparison:
        """The score, and with `explain` the reason when it is below 1."""
        ...


# --- shared by the step kinds ------------------------------------------------------------------


def reference_label(index: int, step: Step, place: str = "of the last group") -> str:
    return f"reference step {index + 1} {place} ({step.get('name')!r})"


def actual_label(index: int, step: Step) -> str:
    details = [repr(step.get("name"))]
    if step.get("id") is not None:
        details.append(f"id {step['id']!r}")
    return f"actual step {index + 1} ({', '.join(details)})"


def actual_output(pair: StepPair) -> Any:
    """The actual step's output; StepsError when a successful step has none."""
    try:
        return pair.actual["output"]
    except KeyError:
        raise StepsError(
            f"{pair.actual_label} has status 'success' but no 'output'; record the step's output, or set "
            "its status to 'error'."
        ) from None


def parse_reference_json(pair: StepPair, media_type: str) -> Any:
    """The reference step's output as JSON; StepsError when it is not JSON."""
    try:
        return parsed_json(pair.reference.get("output"))
    except (TypeError, ValueError, RecursionError) as error:
        raise ReferenceStepsError(
            f"{pair.reference_label} has an 'output' that is not JSON ({error}), but its output_media_type is "
            f"{media_type}; give the output as JSON text."
        ) from None


def short(text: Any, limit: int = 60) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
