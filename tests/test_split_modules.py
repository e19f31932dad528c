"""The modules issue 19 (item 6) split by concept: they import one way, and a name a kind author or
another module imported from where it was before the split still imports from there (their length is
held by tests/test_module_layout.py)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "qareport"
SPLIT = {  # the module as it was -> the modules it is now (itself included)
    "yaml_input": ("yaml_input", "yaml_guards", "yaml_values"),
    "clustered_statistics": ("clustered_statistics", "attempt_statistics"),
    "loading": ("loading", "input_problems", "input_files", "testcase_loading", "response_loading"),
    "kinds.indicator_selection": ("kinds.indicator_selection", "kinds.selection_reading", "kinds.selection_scoring",
                                  "kinds.selection_grades", "kinds.selection_details", "kinds.selection_changes"),
    "kinds": ("kinds", "kinds.kind_records", "kinds.kind_base", "kinds.registry"),
}
SPLIT_MODULES = sorted({module for modules in SPLIT.values() for module in modules})


def source_of(module: str) -> Path:
    path = PACKAGE.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def top_level_imports(module: str) -> set[str]:
    """The qareport modules `module` imports when it is imported (not those imported inside functions)."""
    found = set()
    for node in ast.parse(source_of(module).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("qareport."):
            found.add(node.module.removeprefix("qareport."))
    return found


def test_the_split_modules_import_each_other_one_way():
    graph = {module: top_level_imports(module) & set(SPLIT_MODULES) for module in SPLIT_MODULES}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for child in graph[start]:
            if child == goal or (child not in seen and reaches(child, goal, seen | {child})):
                return True
        return False

    circles = [module for module in SPLIT_MODULES if reaches(module, module, set())]
    assert circles == []


KEPT = {  # names imported from the module as it was, by kind authors, tests or modules not changed here
    "yaml_input": ("yaml_documents", "YamlProblem", "line_of"),
    "clustered_statistics": ("MINIMUM_ATTEMPTS", "CaseVerdict", "CaseChange", "decide_case_change",
                             "clustered_interval", "benjamini_hochberg"),
    "loading": ("load_suite",),
    "kinds.indicator_selection": ("INDICATOR_SELECTION", "DEFAULT_ACCEPTABLE_EXTRAS", "score_indicator_selection",
                                  "match_terms", "score_dimension", "grade_turn", "case_grade", "worst_grade",
                                  "dataset_scores", "render_indicator_details", "explain_indicator_change"),
    # the registry's helpers (grade_counts, grade_moves, ...) are methods of a run's `RunKinds` now
    "kinds": ("NOT_GRADED", "GRADE_FACT", "GradeMove", "stored_grade", "AGGREGATE_LABELS", "RunKinds",
              "catalogue", "for_run", "register", "register_kind", "unregister"),
}


@pytest.mark.parametrize("module", sorted(KEPT))
def test_names_imported_from_a_module_before_its_split_still_import_from_it(module):
    imported = importlib.import_module(f"qareport.{module}")
    exported = getattr(imported, "__all__", ())
    missing = [name for name in (*KEPT[module], *exported) if not hasattr(imported, name)]
    assert missing == []
