"""Two pairs of modules that once imported each other (issue 19, item 6) import one way now, the way
the data flows: the judge's client takes replies from a batch run's replies and knows nothing of the
rounds that fill them; the steps' verdicts explain a scoring, which knows nothing of its
explanations. Imports under `if TYPE_CHECKING:` count, as they do in tests/test_module_layout.py."""

from __future__ import annotations

import ast

from test_module_layout import PACKAGE, module_name, reachable


def import_graph() -> dict[str, set[str]]:
    """The package's modules each module imports, anywhere in it (under TYPE_CHECKING, in a function).
    `from qareport.kinds.steps import step_shapes` is an arrow to the module `step_shapes`, not to the
    package's `__init__.py`, as `from qareport.kinds.steps.step_shapes import x` is."""
    files = {module_name(path, PACKAGE): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    found.add(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in files else node.module)
        graph[name] = (found & set(files)) - {name}
    return graph


def circles_among(graph: dict[str, set[str]], modules: tuple[str, ...]) -> list[str]:
    """The `modules` that reach themselves through the package's imports."""
    return sorted(name for name in modules if name in reachable(graph, name))


def test_the_judge_client_never_reaches_the_batch_rounds():
    graph = import_graph()
    modules = ("qareport.judge.client", "qareport.judge.batch", "qareport.judge.batch_replies")
    assert circles_among(graph, modules) == []
    assert "qareport.judge.batch" not in reachable(graph, "qareport.judge.client")
    assert "qareport.judge.client" not in reachable(graph, "qareport.judge.batch_replies")
    assert {"qareport.judge.client", "qareport.judge.batch_replies"} <= graph["qareport.judge.batch"]


def test_the_steps_scoring_never_reaches_its_verdicts():
    graph = import_graph()
    modules = ("qareport.kinds.steps.matching", "qareport.kinds.steps.verdicts", "qareport.kinds.steps.outcome")
    assert circles_among(graph, modules) == []
    assert "qareport.kinds.steps.verdicts" not in reachable(graph, "qareport.kinds.steps.matching")
    outcome_reaches = reachable(graph, "qareport.kinds.steps.outcome")
    assert {"qareport.kinds.steps.matching", "qareport.kinds.steps.verdicts"}.isdisjoint(outcome_reaches)
    assert {"qareport.kinds.steps.matching", "qareport.kinds.steps.outcome"} <= graph["qareport.kinds.steps.verdicts"]
