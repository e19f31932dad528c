"""Modules by concept (issue 19, item 6): a module of the judge or of the workbook stays within
MAX_LINES, unless its docstring says why it is one concept (the words "one concept")."""

from __future__ import annotations

import ast
from pathlib import Path

import qareport

MAX_LINES = 500
PACKAGES = ("judge", "workbook")


def oversized_modules(root: Path, packages: tuple[str, ...], max_lines: int) -> list[str]:
    """The modules of `packages` under `root` longer than `max_lines` whose docstring does not say
    why they are one concept, as "path: lines"."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            lines = len(text.splitlines())
            docstring = ast.get_docstring(ast.parse(text)) or ""
            if lines > max_lines and "one concept" not in docstring:
                found.append(f"{path.relative_to(root)}: {lines}")
    return found


def test_judge_and_workbook_modules_stay_within_500_lines_or_say_why():
    assert oversized_modules(Path(qareport.__file__).parent, PACKAGES, MAX_LINES) == []


def test_a_long_module_is_found_unless_its_docstring_says_it_is_one_concept(tmp_path):
    package = tmp_path / "judge"
    package.mkdir()
    body = "\n".join(f"x{number} = {number}" for number in range(MAX_LINES + 1))
    (package / "long.py").write_text(f'"""Many things."""\n{body}\n', encoding="utf-8")
    (package / "short.py").write_text('"""Few things."""\nx = 1\n', encoding="utf-8")
    (package / "whole.py").write_text(f'"""Long, but one concept: a table of values."""\n{body}\n',
                                      encoding="utf-8")
    assert oversized_modules(tmp_path, ("judge",), MAX_LINES) == [f"{Path('judge', 'long.py')}: {MAX_LINES + 2}"]
