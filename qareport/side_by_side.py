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
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qareport.case_record import CaseRow
from qareport.comparison import Comparison
from qareport.records import CaseResult, DatasetSelection

MAX_PART = 3_000  # characters of one output part kept with the run
MAX_STORED = 30_000  # characters of a case's outputs as JSON (a cell holds 32,767)
PARTS = ("selection", "steps", "answer")
PART_LABELS = {"selection": "indicator selection", "steps": "steps called", "answer": "answer"}
MOVED = ("regression", "improvement")


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" [… {len(text) - limit:,} more characters]"


def selection_text(selection: Sequence[DatasetSelection] | None) -> str | None:
    """"IMF.WEO\nINDICATOR: NGDP_RPCH (real GDP growth), NGDPD\nCOUNTRY: IND (India)"."""
    if selection is None:
        return None
    lines = []
    for dataset in selection:
        lines.append(f"dataset {dataset.dataset_id}")
        for dimension in dataset.dimensions:
            terms = ", ".join(_term(term.id, term.name) for term in dimension.values)
            lines.append(f"{dimension.dimension_name}: {terms or '(nothing)'}")
    return "\n".join(lines) or "(nothing selected)"


def _term(term_id: Any, name: Any) -> str:
    shown_id, shown_name = str(term_id or ""), str(name or "")
    if shown_id and shown_name and shown_name != shown_id:
        return f"{shown_id} ({shown_name})"
    return shown_id or shown_name


def steps_text(steps: Sequence[Mapping[str, Any]] | None) -> str | None:
    """One line per step called, then its arguments as their values, one per line; a value over
    several lines (a SPARQL query) as it was written, indented:

        1. sparql_query [success]
           query:
             PREFIX dbo: <http://dbpedia.org/ontology/>
             SELECT ?city WHERE { ?city dbo:country dbr:France }
        2. retrieval [success]
           query: GDP of Brazil
           k: 5
    """
    if steps is None:
        return None
    lines = []
    for number, step in enumerate(steps, start=1):
        name = str(step.get("name") or "?")
        status = step.get("status")
        lines.append(f"{number}. {name}" + (f" [{status}]" if status else ""))
        lines += [ARGUMENT_INDENT + line for line in argument_lines(step.get("args"))]
    return "\n".join(lines) or "(no steps)"


ARGUMENT_INDENT = "   "
_VALUE_INDENT = "  "


def argument_lines(args: Any) -> list[str]:
    """A step's arguments as lines: "name: value" each, a value over several lines under its name,
    indented. Arguments given as JSON text (as tool calls carry them) are read first; what is not a
    mapping is shown as it is (text) or as compact JSON."""
    if args in (None, "", {}, []):
        return []
    if isinstance(args, str):
        parsed = _json_mapping(args)
        if parsed is None:
            return _text_lines(args)
        args = parsed
    if not isinstance(args, Mapping):
        return [_compact(args)]
    lines = []
    for key, value in args.items():
        text = value if isinstance(value, str) else _compact(value)
        block = _text_lines(text)
        if len(block) == 1:
            lines.append(f"{key}: {block[0]}")
        else:
            lines.append(f"{key}:")
            lines += [_VALUE_INDENT + line for line in block]
    return lines


def _text_lines(text: str) -> list[str]:
    """The lines of a text, without blank lines before or after and without their common indent."""
    lines = textwrap.dedent(text.strip("\n")).rstrip().splitlines()
    return lines or [""]


def _json_mapping(text: str) -> dict[str, Any] | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


_OLD_STEP_LINE = re.compile(r"^(\d+\. .*?(?: \[[^\]]*\])?) (\{.*\})$")


def readable_steps(text: str) -> str:
    """Steps text kept by an earlier qareport ("1. sparql_query [success] {"query": "\\nSELECT…"}",
    the arguments as escaped JSON) in today's form (`steps_text`); today's text as it is. A line
    whose JSON was cut by the stored run's limit stays as it was."""
    lines = []
    for line in text.split("\n"):
        found = _OLD_STEP_LINE.match(line)
        parsed = _json_mapping(found.group(2)) if found else None
        if found is None or parsed is None:
            lines.append(line)
            continue
        lines.append(found.group(1))
        lines += [ARGUMENT_INDENT + argument for argument in argument_lines(parsed)]
    return "\n".join(lines)


def answer_text(answer: Any) -> str | None:
    if answer is None:
        return None
    if isinstance(answer, str):
        return answer
    return json.dumps(answer, ensure_ascii=False, default=str)


def case_outputs(result: CaseResult) -> dict[str, Any]:
    """What the system produced for the case, as text: {"turns": [{turn, user_message, selection,
    steps, answer}]}, or {"error": ...} for an error response, or {} without a response."""
    response = result.response
    if response is None:
        return {}
    if response.status != "success":
        return {"error": str(response.error or response.status)}
    turns = []
    for number, output in enumerate(response.turns, start=1):
        case_turns = result.case.turns
        turns.append({
            "turn": number,
            "user_message": case_turns[number - 1].user_message if number <= len(case_turns) else "",
            "selection": selection_text(output.indicator_selection),
            "steps": steps_text(output.actual_steps),
            "answer": answer_text(output.actual_answer),
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
                 new_rows: Iterable[CaseRow]) -> tuple[SideBySide, ...]:
    """Every regressed or improved case, in the order of the Changes sheet, with both runs' outputs."""
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
        ))
    return tuple(pairs)
