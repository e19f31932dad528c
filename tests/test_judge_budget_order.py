"""A judge budget that runs out judges a stated, deterministic subset: the first cases in the test
cases' order, the same on every rerun, whatever the concurrency; the report says the budget was
reached, never that no judge was available."""

from __future__ import annotations

import json

from conftest import RESPONSES, TESTCASES
from test_judge_cost import stub  # noqa: F401  (the loopback judge, a fixture)

from qareport.cli import main
from qareport.digest import stakeholder_words
from qareport.exit_status import JUDGE_FAILED


def _asked(stub, tmp_path, name: str) -> list[str]:  # noqa: F811
    """The judge requests a budgeted run sends, in the order sent."""
    stub.reset()
    code = main(["run", str(TESTCASES), "-r", str(RESPONSES), "-o", str(tmp_path / f"{name}.xlsx"),
                 "--cache-path", str(tmp_path / f"{name}.sqlite3"), "--judge-concurrency", "8",
                 "--judge-budget", "0.002"])
    assert code == JUDGE_FAILED
    return [json.dumps(request.body, sort_keys=True) for request in stub.requests]


def test_a_budget_judges_the_same_first_cases_on_every_rerun_whatever_the_concurrency(stub, tmp_path):  # noqa: F811
    runs = [_asked(stub, tmp_path, str(number)) for number in range(3)]
    assert runs[0] and runs[0] == runs[1] == runs[2]


def test_a_reached_budget_is_said_as_such_to_the_reader_never_as_no_judge():
    words = stakeholder_words("budget reached: $0.0020 of the $0.0020 judge budget spent; 9 judgment(s) not made")
    assert "budget was reached" in words and "partial" in words and "no LLM judge" not in words
