"""The package's layout, read from its own source: data flows one way (the report model, then the
stored run derived from it), and a module stays one concept."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "qareport"
MODEL = "qareport.report"
STORED_RUN_FORMAT = frozenset({
    "qareport.runs", "qareport.run_sheets", "qareport.run_reviews", "qareport.run_reading", "qareport.results_file",
})
"""The stored-run format (the workbook's hidden sheets, the results file): derived from the model, one way."""


def module_name(path: Path, package: Path) -> str:
    """`qareport/workbook/__init__.py` -> `qareport.workbook`, `qareport/runs.py` -> `qareport.runs`."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The package's modules a file imports, those under `if TYPE_CHECKING:` included: an import for
    typing is an arrow of the design too. `from qareport import kinds` counts as `qareport.kinds` only
    (as in tests/test_one_way_imports.py): the package's `__init__.py` imports every export for typing."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # a submodule named is an arrow to it alone, not to the package's __init__.py as well
            found.update(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known else node.module
                         for alias in node.names)
    return found & known


def import_graph(package: Path) -> dict[str, set[str]]:
    files = {module_name(path, package): path for path in package.rglob("*.py")}
    known = set(files)
    return {name: imports_of(path, known) - {name} for name, path in files.items()}


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, ()))
    return seen


def test_the_report_model_never_reaches_a_stored_format_module():
    graph = import_graph(PACKAGE)
    exp: list[str] = []
    got = sorted(reachable(graph, MODEL) & STORED_RUN_FORMAT)
    assert got == exp, f"{MODEL} imports the stored-run format (directly or through others): {got}"


def test_the_stored_format_derives_from_the_model_and_its_case_rows():
    graph = import_graph(PACKAGE)
    exp = ["qareport.results_file", "qareport.run_reviews", "qareport.run_sheets"]
    got = sorted(name for name in STORED_RUN_FORMAT if MODEL in graph[name])
    assert got == exp
    assert "qareport.case_rows" in graph["qareport.runs"]  # a stored row is the model's row, encoded
    assert "qareport.case_rows" not in STORED_RUN_FORMAT


def test_no_stored_format_module_is_in_an_import_circle():
    graph = import_graph(PACKAGE)
    exp: list[str] = []
    got = sorted(name for name in STORED_RUN_FORMAT if name in reachable(graph, name))
    assert got == exp, f"in an import circle: {got}"


ABOVE_THE_KINDS = ("qareport.judge.runner", "qareport.judge.client", "qareport.judge.planning",
                   "qareport.graphrag_eval_6", "qareport.statistics", "qareport.pipeline", "qareport.report",
                   "qareport.workbook")
"""The judge's machinery (its settings, usage and prices are records a run's records hold), the
summaries and the writers."""


def above_the_kinds(name: str) -> bool:
    return any(name == module or name.startswith(module + ".") for module in ABOVE_THE_KINDS)


def test_the_kinds_never_reach_the_judge_the_summaries_or_the_writers():
    """Data flows from the kinds to the summaries, the judge and the writers, never back: no kind
    module imports them, directly or through others (a kind's results-file entries once took 6.x's
    key order from the 6.x library API, which imports the judge, which imports the kinds)."""
    graph = import_graph(PACKAGE)
    got = sorted({reached for name in graph if name.startswith("qareport.kinds")
                  for reached in reachable(graph, name) if above_the_kinds(reached)})
    assert got == []


def test_the_layout_checks_see_a_circle_and_a_model_reaching_the_format(tmp_path):
    """The checks above can fail: on a package laid out as runs.py was (the model took its case rows
    from the stored format, which imported the model back for typing), both are found."""
    package = tmp_path / "qareport"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "report.py").write_text("from qareport.runs import case_rows\n")
    (package / "runs.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                     "    from qareport.report import Report\n")
    graph = import_graph(package)
    assert reachable(graph, MODEL) & STORED_RUN_FORMAT == {"qareport.runs"}
    assert "qareport.runs" in reachable(graph, "qareport.runs")


MAX_LINES = 500


def long_modules_without_a_reason(package: Path) -> list[str]:
    """Modules over MAX_LINES lines whose docstring does not say why the module is one concept."""
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_LINES and "one concept" not in (ast.get_docstring(ast.parse(text)) or ""):
            found.append(module_name(path, package))
    return found


def test_a_module_over_500_lines_says_in_its_docstring_why_it_is_one_concept():
    exp: list[str] = []
    got = long_modules_without_a_reason(PACKAGE)
    assert got == exp, f"split these by concept, or say in each docstring why it is one concept: {got}"



def test_a_long_module_is_found_unless_its_docstring_says_it_is_one_concept(tmp_path):
    body = "x = 1\n" * (MAX_LINES + 1)
    (tmp_path / "long.py").write_text('"""Many things."""\n' + body, encoding="utf-8")
    (tmp_path / "reasoned.py").write_text('"""A table of constants, one concept."""\n' + body, encoding="utf-8")
    (tmp_path / "short.py").write_text('"""Short."""\nx = 1\n', encoding="utf-8")
    assert [name.rsplit(".", 1)[-1] for name in long_modules_without_a_reason(tmp_path)] == ["long"]
