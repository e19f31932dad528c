"""What a later run compares of an indicator selection: the terms found, missed and extra of a case,
and the change between two runs said in words ("lost COUNTRY MEX")."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from qareport.kinds.kind_records import Facts
from qareport.kinds.selection_details import term_label
from qareport.kinds.selection_parts import indicator_score
from qareport.records import CaseResult, Term, TurnResult


def _item(turn: TurnResult, several: bool, dimension: str, term: Term) -> str:
    """A fact item, interned: a run keeps every case's facts (`CaseRow.facts`), and the same texts
    recur across its cases and between a case's "target" and "found" lists."""
    return sys.intern((f"turn {turn.number} " if several else "") + f"{dimension} {term_label(term)}")


def indicator_facts(result: CaseResult) -> dict[str, list[str]]:
    """The case's target terms, the ones found and the extra ones, as "DIMENSION ID" items."""
    several = len(result.case.turns) > 1
    facts: dict[str, list[str]] = {"target": [], "found": [], "extra": []}
    for turn in result.turns:
        score = indicator_score(turn)
        if score is None:
            continue
        for dimension in (*score.dimensions, *score.not_in_target):
            name = dimension.dimension_name
            found = [_item(turn, several, name, v.term) for v in dimension.true_positives]
            facts["found"] += found
            facts["target"] += found + [_item(turn, several, name, v.term) for v in dimension.false_negatives]
            facts["extra"] += [_item(turn, several, name, v.term) for v in dimension.false_positives]
    return {key: items for key, items in facts.items() if items}


def _split_item(item: str) -> tuple[str, str]:
    """("turn 2 COUNTRY", "MEX") of an item; a name-only term's quoted name stays whole."""
    if item.endswith("'") and " '" in item:
        prefix, _, name = item.rpartition(" '")
        return prefix, "'" + name
    prefix, _, last = item.rpartition(" ")
    return prefix, last


def _by_dimension(items: Iterable[str], sign: str = "") -> str:
    """"COUNTRY MEX, KEN; INDICATOR LP": items grouped by what precedes their last word."""
    grouped: dict[str, list[str]] = {}
    for item in items:
        prefix, last = _split_item(item)
        grouped.setdefault(prefix, []).append(sign + last)
    return "; ".join(f"{prefix} {', '.join(ids)}" if prefix else ", ".join(ids) for prefix, ids in grouped.items())


def _new(old: Facts, new: Facts, key: str) -> list[str]:
    before = set(old.get(key) or ())
    return [item for item in new.get(key) or () if item not in before]


def explain_indicator_change(old: Facts, new: Facts) -> str | None:
    """"target edited: COUNTRY +KEN -MEX", "lost COUNTRY MEX", "extra INDICATOR GDP_CONST", "found
    COUNTRY KEN", "no longer extra ...": bad news first."""
    said = []
    added, removed = _new(old, new, "target"), _new(new, old, "target")
    if added or removed:
        changes: dict[str, list[str]] = {}
        for item in added:
            prefix, last = _split_item(item)
            changes.setdefault(prefix, []).append("+" + last)
        for item in removed:
            prefix, last = _split_item(item)
            changes.setdefault(prefix, []).append("\u2212" + last)
        said.append("target edited: " + "; ".join(f"{prefix} {' '.join(ids)}" for prefix, ids in changes.items()))
    target = set(new.get("target") or ())
    lost = [item for item in _new(new, old, "found") if item in target]
    for words, items in (("lost", lost), ("extra", _new(old, new, "extra")), ("found", _new(old, new, "found")),
                         ("no longer extra", _new(new, old, "extra"))):
        if items:
            said.append(f"{words} {_by_dimension(items)}")
    return "; ".join(said) or None
