"""JSON output: the actual output and the reference output are equal once parsed as JSON.

Applies (graphrag-eval's rules):
  5.x  the reference step's `output_media_type` is application/json;
  6.x  the same, and both steps have the same name.

Key order and spacing do not matter, `1` equals `1.0`, list order does. An output that is not
JSON is a steps error (graphrag-eval raises there).
"""

from __future__ import annotations

import json
from typing import Any

from qareport.evaluation_options import Semantics
from qareport.kinds.steps.parsed_outputs import parsed_json
from qareport.kinds.steps.step_kind import (
    JSON,
    MATCH,
    Comparison,
    Step,
    StepPair,
    StepsError,
    actual_output,
    parse_reference_json,
    short,
)


class JsonOutput:
    name = "JSON output"

    def applies(self, reference: Step, actual: Step, *, semantics: Semantics) -> bool:
        if reference.get("output_media_type") != JSON:
            return False
        return semantics == 5 or reference["name"] == actual["name"]

    def compare(self, pair: StepPair, *, explain: bool = False) -> Comparison:
        expected = parse_reference_json(pair, JSON)
        try:
            got = parsed_json(actual_output(pair))
        except (TypeError, ValueError, RecursionError) as error:
            raise StepsError(
                f"{pair.actual_label} has an 'output' that is not JSON ({error}), and {pair.reference_label} "
                f"expects {JSON}; record the step's output as JSON text."
            ) from None
        if expected == got:
            return MATCH
        return Comparison(0.0, first_difference(expected, got) if explain else None)


def first_difference(expected: Any, got: Any, path: str = "") -> str:
    """Where two JSON values first differ, e.g. "JSON differs at limit: 41, expected 40"."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in expected:
            if key not in got:
                return f"JSON lacks {_join(path, key)}"
            if expected[key] != got[key]:
                return first_difference(expected[key], got[key], _join(path, key))
        extra = next(key for key in got if key not in expected)
        return f"JSON has {_join(path, extra)}, not in the reference"
    if isinstance(expected, list) and isinstance(got, list):
        if len(expected) != len(got):
            return f"JSON differs at {path or 'the top'}: {len(got)} items, expected {len(expected)}"
        for index, (one, other) in enumerate(zip(expected, got)):
            if one != other:
                return first_difference(one, other, f"{path}[{index}]")
    where = path or "the top"
    return f"JSON differs at {where}: {short(_text(got), 30)}, expected {short(_text(expected), 30)}"


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


JSON_OUTPUT = JsonOutput()
