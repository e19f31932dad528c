"""A run keeps every case's row (`case_rows.case_row`) to the end of the report and in the stored run:
the rows hold what repeats (fact texts, dimension scores) compactly, and say the same as before."""

from __future__ import annotations

from test_details_memory import generated_results

from qareport.case_rows import case_rows


def test_each_fact_text_of_a_run_is_held_once(tmp_path):
    present, results = generated_results(tmp_path, 200)
    rows = case_rows(results, present)
    items = [item for row in rows for facts in row.facts.values() for listed in facts.values() for item in listed]
    held: dict[str, set[int]] = {}
    for item in items:
        held.setdefault(item, set()).add(id(item))
    assert len(held) < len(items)  # the texts do repeat: "found" within "target", and across cases
    assert all(len(objects) == 1 for objects in held.values())
