"""One path for every kind: the built-in kinds implement the same protocol as any other kind.

The loader and the evaluator ask the registry and name no kind; each kind's parsed parts and scores
are kept under its name in the records; kinds scored together share one evaluation of a turn.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

import qareport
from qareport import kinds
from qareport.evaluation import evaluate_case
from qareport.kinds import Kind, Metric, SharedEvaluation, TurnInput, TurnScores
from qareport.kinds.qa_turn import reference_steps_line
from qareport.kinds.selection_parts import indicator_score, macro_recall
from qareport.loading import load_suite
from qareport.records import Location, Problem, Response, Target, TestCase, Turn, TurnOutput

PACKAGE = Path(qareport.__file__).parent
BUILT_IN_KEYS = ("indicator_selection", "reference_answer", "reference_steps", "actual_answer", "actual_steps")

CASE = """\
- id: c1
  name: everything at once
  conversation:
  - role: user
    content: GDP of Mexico?
    target:
      indicator_selection:
      - dataset_id: WEO
        dimensions:
        - dimension_name: COUNTRY
          values: [{id: MEX, name: Mexico}]
      reference_answer: about 1.8 trillion
      reference_steps:
      - - {name: sparql_query, args: {query: "SELECT 1"}, output: "x"}
"""
RESPONSE = {"id": "c1", "actual_answer": "1.8 trillion",
            "indicator_selection": [{"dataset_id": "WEO", "dimensions": [
                {"dimension_name": "COUNTRY", "values": [{"id": "MEX", "name": "Mexico"}]}]}],
            "actual_steps": [{"id": "call_1", "name": "sparql_query", "args": {"query": "SELECT 1"}, "output": "x",
                              "status": "success"}]}


def _suite(tmp_path: Path) -> Any:
    (tmp_path / "cases.yaml").write_text(CASE, encoding="utf-8")
    (tmp_path / "responses.json").write_text(json.dumps([RESPONSE]), encoding="utf-8")
    return load_suite([tmp_path / "cases.yaml"], [tmp_path / "responses.json"])


@pytest.fixture
def registry_kept():
    """Whatever a test does to the catalogue is undone."""
    saved = kinds.catalogue()
    yield
    for kind in kinds.catalogue():
        kinds.unregister(kind.name)
    for kind in saved:
        kinds.register(kind)


@pytest.mark.parametrize("module", ["loading.py", "evaluation.py"])
def test_the_loader_and_the_evaluator_name_no_kind(module):
    source = (PACKAGE / module).read_text(encoding="utf-8")
    named = [key for key in BUILT_IN_KEYS if key in source]
    assert named == [], f"{module} names {named}"
    imported = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in imported if name and name.startswith("qareport.kinds.")}, imported


def test_no_kind_is_set_apart_from_the_others():
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"builtin = True|getattr\([^)]*[\"']builtin[\"']", text), path
    assert not hasattr(kinds, "extra_kinds")


def test_kinds_import_nothing_from_the_loader_or_the_evaluator():
    for path in (PACKAGE / "kinds").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} | {
            alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert not imported & {"qareport.loading", "qareport.input_problems", "qareport.input_files",
                               "qareport.testcase_loading", "qareport.response_loading", "qareport.evaluation",
                               "qareport.pipeline"}, path


def test_every_kind_keeps_its_parts_and_scores_under_its_name(tmp_path):
    suite = _suite(tmp_path)
    assert suite.problems == ()
    case = suite.cases[0]
    assert set(case.turns[0].target.parts) == {"indicator_selection", "reference_answer", "reference_steps"}
    assert set(suite.responses["c1"].turns[0].parts) == {"indicator_selection", "reference_answer", "reference_steps"}
    result, problems = evaluate_case(case, suite.responses["c1"])
    assert problems == [] and result.status == "success"
    turn = result.turns[0]
    assert set(turn.scores) == {"indicator_selection", "qa", "reference_steps"}
    # the typed accessors read the same records
    assert indicator_score(turn) is turn.scores["indicator_selection"] and turn.qa is turn.scores["qa"]
    assert macro_recall(result) == 1.0 and turn.qa.steps_score == 1.0
    assert reference_steps_line(case.turns[0].target) == 13  # the line of its key


def test_a_built_in_kind_taken_out_of_the_registry_is_read_by_nobody(tmp_path, registry_kept):
    kinds.unregister("indicator_selection")
    suite = _suite(tmp_path)
    assert "indicator_selection" not in suite.cases[0].turns[0].target.parts
    assert "indicator_selection" not in suite.responses["c1"].turns[0].parts
    unknown = [p.message for p in suite.problems if "unknown key 'indicator_selection'" in p.message]
    assert len(unknown) == 2, suite.problems  # in the target and in the response
    result, _ = evaluate_case(suite.cases[0], suite.responses["c1"])
    assert "indicator_selection" not in result.turns[0].scores and result.turns[0].qa is not None


class _Counting(SharedEvaluation):
    def __init__(self) -> None:
        self.calls: list[int] = []

    def evaluate(self, turn: TurnInput) -> TurnScores:
        self.calls.append(turn.turn_number)
        assert turn.turn_output is not None and turn.response is not None
        words = str(turn.turn_output.parts.get("echo_a") or "")
        problem = Problem(turn.response.location, f"turn {turn.turn_number}: seen", turn.case.id)
        return TurnScores({"echo_record": words, "echo_a": len(words)}, (problem,), invalid=words == "bad")


class _EchoA(Kind):
    name, label = "echo_a", "echo a"
    metrics = (Metric("echo_a_length", "echo a length"),)


class _EchoB(Kind):
    name, label = "echo_b", "echo b"
    metrics = (Metric("echo_b_length", "echo b length"),)


def _echo_case(*outputs: str) -> tuple[TestCase, Response]:
    turns = tuple(Turn(n, f"say {n}", Target(parts={"echo_a": "x", "echo_b": "y"}))
                  for n in range(1, len(outputs) + 1))
    case = TestCase("e", "conversation", "echo", (), turns, Location("cases.yaml", 1))
    response = Response("e", Location("responses.json", 3),
                        turns=tuple(TurnOutput(parts={"echo_a": output}) for output in outputs))
    return case, response


def test_kinds_that_share_an_evaluation_are_scored_once_per_turn(registry_kept):
    shared = _Counting()
    first, second = _EchoA(), _EchoB()
    first.shared = second.shared = shared
    kinds.register(first), kinds.register(second)
    result, problems = evaluate_case(*_echo_case("hello", "hi"))
    assert shared.calls == [1, 2]
    assert [turn.scores for turn in result.turns] == [{"echo_record": "hello", "echo_a": 5},
                                                      {"echo_record": "hi", "echo_a": 2}]
    assert [p.message for p in problems] == ["turn 1: seen", "turn 2: seen"]
    assert result.status == "success"
    result, _ = evaluate_case(*_echo_case("fine", "bad"))
    assert result.status == "invalid"  # the shared evaluation said the case cannot be evaluated


COUNTED = """\
- id: good
  conversation:
  - role: user
    content: q
    target:
      indicator_selection:
      - dataset_id: WEO
        dimensions:
        - dimension_name: COUNTRY
          values: [{id: MEX, name: Mexico}]
- id: broken-elsewhere
  conversation:
  - role: user
    content: q
    target:
      indicator_selection:
  - role: user
    content: q2
    target:
      reference_steps: 5
"""


def test_an_unreadable_case_counts_for_every_kind_it_declares_as_a_readable_one_would(tmp_path):
    """`indicator_selection:` without a value is a target (an empty selection) in a case that can be
    read; in a case that cannot be read it counts among the indicator-selection cases too."""
    from qareport.evaluation import evaluate_suite
    from qareport.kinds.selection_statistics import DataQueryFigures
    from qareport.statistics import summarize

    (tmp_path / "cases.yaml").write_text(COUNTED, encoding="utf-8")
    (tmp_path / "r.json").write_text(json.dumps([{"id": "good", "indicator_selection": []}]), encoding="utf-8")
    suite = load_suite([tmp_path / "cases.yaml"], [tmp_path / "r.json"])
    broken = suite.cases[1]
    assert broken.turns == () and broken.declared_targets == ("indicator_selection", "reference_steps")
    figures = summarize(evaluate_suite(suite).results).figures_of(DataQueryFigures)
    data_query = figures.overall if figures is not None else None
    assert data_query is not None and (data_query.cases, data_query.invalid) == (2, 1)
