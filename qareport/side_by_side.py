"""What the system produced for a case, kept with the run, and last run's and this run's outputs of
each regressed or improved case side by side (the Compare sheet).

A run keeps, per case, its outputs as text (`case_outputs`, stored by `case_rows.case_row` in the case
row's `outputs`): per turn the indicator selection, the steps called (name, status, arguments)
and the answer. The next run, given this one as its baseline, reads them back and lays the two
runs' outputs of every case that moved next to each other (`side_by_side`), as promptfoo's viewer
and LangSmith's compare view do. The text is for reading, so each part is cut at `MAX_PART`
characters with a visible marker (a case row is one cell of the stored run); the current run's
outputs are whole in Overview.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from qareport.case_record import CaseRow
from qareport.comparison import Comparison
from qareport.kinds import RunKinds
from qareport.records import CaseResult

MAX_PART = 3_000  # characters of one output part kept with the run
MAX_STORED = 30_000  # characters of a case's outputs as JSON (a cell holds 32,767)
MOVED = ("regression", "improvement")


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" [… {len(text) - limit:,} more characters]"


def case_outputs(result: CaseResult, kinds: RunKinds) -> dict[str, Any]:
    """What the system produced for the case, as text: {"turns": [{turn, user_message, and each
    kind's output text (`Kind.output_text`) under its key}]}, or {"error": ...} for an error
    response, or {} without a response."""
    response = result.response
    if response is None:
        return {}
    if response.status != "success":
        return {"error": str(response.error or response.status)}
    shown = [text for kind in kinds if (text := kind.output_text) is not None]
    turns = []
    for number, output in enumerate(response.turns, start=1):
        case_turns = result.case.turns
        turns.append({
            "turn": number,
            "user_message": case_turns[number - 1].user_message if number <= len(case_turns) else "",
            **{text.key: text.text(output) for text in shown},
        })
    return _fitted({"turns": turns})


def _fitted(outputs: dict[str, Any]) -> dict[str, Any]:
    """The outputs with each part cut to what the stored run keeps (shorter for many turns)."""
    turns = outputs["turns"]
    limit = MAX_PART
    while True:
        cut = [{key: _cut(value, limit) if isinstance(value, str) else value for key, value in turn.items()}
               for turn in turns]
        if len(json.dumps(cut, ensure_ascii=False)) <= MAX_STORED or limit <= 100:
            return {"turns": cut}
        limit //= 2


@dataclass(frozen=True, slots=True)
class SideBySide:
    """A case that moved, with both runs' outputs (`case_outputs` forms; {} when not kept)."""

    case_id: str
    name: str
    kind: str  # regression or improvement
    what: str  # "macro recall 1.00 → 0.50"
    reason: str | None
    old: Mapping[str, Any]
    new: Mapping[str, Any]
    old_status: str | None = None
    new_status: str | None = None
    parts: tuple[tuple[str, str], ...] = ()  # (key, label) of each kind's output text (`Kind.output_text`)

    def turns(self) -> list[tuple[int, str, Mapping[str, Any], Mapping[str, Any]]]:
        """(turn, user message, last run's outputs, this run's outputs) for every turn either has."""
        old_turns = {turn.get("turn"): turn for turn in self.old.get("turns") or () if isinstance(turn, Mapping)}
        new_turns = {turn.get("turn"): turn for turn in self.new.get("turns") or () if isinstance(turn, Mapping)}
        numbers = sorted({*old_turns, *new_turns}, key=lambda number: (not isinstance(number, int), str(number)))
        found = []
        for number in numbers:
            old, new = old_turns.get(number) or {}, new_turns.get(number) or {}
            message = str(new.get("user_message") or old.get("user_message") or "")
            found.append((number if isinstance(number, int) else 0, message, old, new))
        return found


def side_by_side(comparison: Comparison, old_rows: Iterable[CaseRow],
                 new_rows: Iterable[CaseRow], kinds: RunKinds) -> tuple[SideBySide, ...]:
    """Every regressed or improved case, in the order of the Changes sheet, with both runs' outputs
    as the run's kinds name them."""
    parts = tuple((text.key, text.label) for kind in kinds if (text := kind.output_text) is not None)
    old_by_id = {row.case_id: row for row in old_rows}
    new_by_id = {row.case_id: row for row in new_rows}
    pairs = []
    for movement in comparison.movements:
        if movement.kind not in MOVED:
            continue
        old, new = old_by_id.get(movement.case_id), new_by_id.get(movement.case_id)
        pairs.append(SideBySide(
            case_id=movement.case_id, name=movement.name, kind=movement.kind, what=movement.describe_moves(),
            reason=movement.reason, old=old.outputs if old is not None else {},
            new=new.outputs if new is not None else {},
            old_status=old.status if old is not None else None, new_status=new.status if new is not None else None,
            parts=parts,
        ))
    return tuple(pairs)
