"""The problems found while reading input files, collected in the order found (never raised): the
collector every reader adds to, and what it says of a key that nothing reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qareport import kinds
from qareport.errors import ShapeError
from qareport.input_shapes import ShapeErrors
from qareport.records import Location, Problem, Unloaded

STATGPT_ONLY = "a key of statgpt's fuller ground-truth schema, which qareport does not score"
KEY_ADVICE = {
    **dict.fromkeys(("is_out_of_scope", "tool_calls", "query_normalization", "datasets_selection"), STATGPT_ONLY),
    "steps": "graphrag-eval 4.0 called the tool calls 'steps'; rename the key to 'actual_steps'",
}
"""What to say of unknown keys whose meaning is known (another tool's key, an older version's name);
any other gets "check its spelling if it was meant to be scored"."""


@dataclass
class ProblemCollector:
    """Problems found so far, in the order found."""

    problems: list[Problem] = field(default_factory=list)
    unloaded: list[Unloaded] = field(default_factory=list)  # test cases that could not be read
    # unknown keys of one file, each named once: (in what, key) -> [line, case id, how many times]
    unknown: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    known: kinds.RunKinds = field(default_factory=kinds.catalogue)  # the run's kinds, which advise on keys

    def add(self, path: str, line: int | None, message: str, case_id: str | None = None) -> None:
        self.problems.append(Problem(Location(path, line), message, case_id))

    def unknown_key(self, in_what: str, key: Any, line: int | None, case_id: str | None) -> None:
        """`key` of a target or a response (`in_what`) is read by nothing: counted, and named once per
        file by `name_unknown_keys`."""
        seen = self.unknown.setdefault((in_what, str(key)), [line, case_id, 0])
        seen[2] += 1

    def name_unknown_keys(self, path: str) -> None:
        """One problem per unknown key counted since the last call, at its first place."""
        for (in_what, key), (line, case_id, count) in self.unknown.items():
            where = (f"the {in_what} of case '{case_id}'" if in_what == "target" else
                     f"the response for '{case_id}'" if case_id is not None else f"a {in_what}")
            more = count - 1
            also = f" (also in {more} more {in_what}{'s' if more > 1 else ''} of this file)" if more else ""
            advice = KEY_ADVICE.get(key, "check its spelling if it was meant to be scored")
            shown = key if len(key) <= 80 else key[:79] + "…"
            self.add(path, line, f"unknown key '{shown}' in {where}{also}: not evaluated; {advice}", case_id)
        self.unknown.clear()


def shape_problems(error: ShapeError, line: int | None) -> list[tuple[int | None, str]]:
    """(line, message) for each problem a ShapeError stands for: one, or every value without id
    and name of a selection."""
    if isinstance(error, ShapeErrors):
        return [(where or error.line or line, message) for where, message in error.each]
    return [(error.line or line, str(error))]
