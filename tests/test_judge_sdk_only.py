"""The judge speaks to its model through the openai SDK's public client only, and reads whatever
comes back without a traceback: compressed replies, replies nested thousands of levels deep."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from openai_stub import Fault, serve_stub

from qareport.judge import Judge, JudgeSettings
from qareport.judge.json_depth import MAX_DEPTH, TooDeep, load_json, nesting_depth

PACKAGE = Path(__file__).resolve().parent.parent / "qareport"
ADAPTERS = {"qareport/workbook/rows_xml.py"}
"""The one module allowed to use a dependency's private names (XlsxWriter's row writer, pinned
below its next major, with a test of its own that fails when XlsxWriter changes)."""


def settings_for(server, tmp_path, **overrides) -> JudgeSettings:
    values = dict(base_url=server.url, api_key="sk-test", cache_path=str(tmp_path / "judge.sqlite3"),
                  timeout=5.0, max_retries=0, metrics=("answer_correctness",))
    values.update(overrides)
    return JudgeSettings(**values)


def qa(n: int) -> dict:
    return {"question_id": f"q{n}", "question_text": f"question {n}?", "status": "success",
            "reference_answer": f"a{n}; b{n}", "actual_answer": f"a{n}; c{n}"}


# --- what the judge reads ------------------------------------------------------------------------


def test_a_judge_that_gzips_its_replies_is_read_as_one_that_does_not(tmp_path):
    with serve_stub(gzip=True, usage=(100, 20)) as server, Judge(settings_for(server, tmp_path, concurrency=2)) as judge:
        run = judge.judge_results([qa(n) for n in range(3)])
    assert [r["answer_f1"] for r in run.results] == [0.5] * 3
    assert (run.usage.calls, run.usage.failed_calls, run.failure) == (3, 0, None)
    assert (run.usage.input_tokens, run.usage.output_tokens) == (300, 60)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("where", ["body", "content"])
def test_a_reply_nested_thousands_deep_fails_that_judgment_and_the_run_goes_on(server, tmp_path, where):
    deep = '{"a": ' * 5000 + "1" + "}" * 5000
    fault = Fault(raw=deep) if where == "body" else Fault(content=deep)
    server.script(fault, fault)  # the first request and its corrective retry
    with Judge(settings_for(server, tmp_path, concurrency=1)) as judge:
        run = judge.judge_results([qa(0), qa(1)])
    failed = [r for r in run.results if "answer_eval_error" in r]
    assert len(failed) == 1, run.results
    assert f"nests more than {MAX_DEPTH} levels deep" in failed[0]["answer_eval_error"]
    assert sum("answer_f1" in r for r in run.results) == 1
    assert run.failure is None


def test_the_nesting_guard_counts_brackets_outside_strings_without_recursing():
    assert nesting_depth('{"a": [1, {"b": "[[[[[["}]}') == 3
    assert nesting_depth(nested(200_000)) == 200_000  # far past any interpreter's recursion limit
    assert load_json('{"x": "' + "[" * 500 + '"}') == {"x": "[" * 500}
    with pytest.raises(TooDeep):
        load_json(nested(MAX_DEPTH + 1))
    assert load_json(nested(MAX_DEPTH)) is not None


# --- public APIs of dependencies only -------------------------------------------------------------


def _third_party(module: str) -> bool:
    root = module.split(".")[0]
    return root != "qareport" and root not in sys.stdlib_module_names and root != "__future__"


DOCUMENTED_UNDERSCORE_NAMES = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})
"""Named tuples' methods: public, with an underscore only so as not to clash with field names."""


def _private(name: str) -> bool:
    return (name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
            and name not in DOCUMENTED_UNDERSCORE_NAMES)


def _defined_private_names(trees: dict[Path, ast.Module]) -> set[str]:
    """Every private name qareport defines itself: functions, classes, assigned names and attributes,
    slots, keyword arguments of its own calls are not needed (they are not attributes)."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _private(node.value):
                names.add(node.value)  # __slots__ entries, names given to setattr
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return {name for name in names if _private(name)}


def _third_party_names(tree: ast.Module) -> set[str]:
    """The names a module binds to third-party modules or to things imported from them."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names
                         if _third_party(alias.name))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _third_party(node.module):
            bound.update(alias.asname or alias.name for alias in node.names)
    return bound


def private_uses(path: Path, tree: ast.Module, ours: set[str]) -> list[str]:
    """Where a module uses a private name of a third-party package: an import of a private module or
    name, an attribute no qareport code defines, a `getattr` probe of one, or a private method
    defined on a subclass of a third-party class (an override of its internals)."""
    where = path.relative_to(PACKAGE.parent).as_posix()
    found: list[str] = []
    foreign = _third_party_names(tree)
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _third_party(node.module):
            found.extend(f"{line}: from {node.module} import {a.name}" for a in node.names
                         if _private(a.name) or any(map(_private, node.module.split("."))))
        elif isinstance(node, ast.Import):
            found.extend(f"{line}: import {a.name}" for a in node.names
                         if _third_party(a.name) and any(map(_private, a.name.split("."))))
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if (isinstance(root, ast.Name) and root.id in foreign) or node.attr not in ours:
                found.append(f"{line}: .{node.attr}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and _private(node.args[1].value) and node.args[1].value not in ours):
            found.append(f"{line}: {node.func.id}(..., {node.args[1].value!r})")
        elif isinstance(node, ast.ClassDef):
            bases = [b for b in node.bases if isinstance(b, (ast.Name, ast.Attribute))]
            roots = []
            for base in bases:
                while isinstance(base, ast.Attribute):
                    base = base.value
                roots.append(base)
            if any(isinstance(r, ast.Name) and r.id in foreign for r in roots):
                found.extend(f"{where}:{item.lineno}: {node.name}.{item.name} overrides a private method"
                             for item in node.body
                             if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(item.name))
    return found


def uses_outside_adapters() -> dict[str, list[str]]:
    """Per module (its path from the repository's root), its uses of dependencies' private names."""
    trees = {path.relative_to(PACKAGE.parent).as_posix(): (path, ast.parse(path.read_text(encoding="utf-8")))
             for path in sorted(PACKAGE.rglob("*.py"))}
    ours = _defined_private_names({path: tree for name, (path, tree) in trees.items() if name not in ADAPTERS})
    found = {name: private_uses(path, tree, ours) for name, (path, tree) in trees.items() if name not in ADAPTERS}
    return {name: uses for name, uses in found.items() if uses}


def test_no_module_uses_a_private_name_of_a_dependency_outside_the_one_named_adapter():
    """A dependency's underscore names are its own to change: an SDK rename would surface where it
    hurts most (the judge's retry path, the workbook writer). Only `ADAPTERS` may, pinned and tested."""
    exp: dict[str, list[str]] = {}
    got = uses_outside_adapters()
    assert got == exp, "private names of dependencies used outside " + ", ".join(sorted(ADAPTERS))


def test_the_workbook_sheet_writer_uses_no_private_name_of_xlsxwriter():
    assert uses_outside_adapters().get("qareport/workbook/sheet.py", []) == []


def test_the_private_name_scan_finds_each_way_of_reaching_into_a_dependency():
    """The scan is not vacuous: each pattern the issue found is caught."""
    source = PACKAGE / "judge" / "example_private.py"
    text = ("import openai\nfrom openai._base_client import SyncAPIClient\nfrom xlsxwriter.worksheet import Worksheet\n"
            "def f(client):\n    client._calculate_retry_timeout(1)\n    openai._exceptions\n"
            "    getattr(client, '_api_key_provider', None)\n"
            "class Rows(Worksheet):\n    def _write_single_row(self):\n        pass\n")
    got = {use.split(": ", 1)[1] for use in private_uses(source, ast.parse(text), {"_ours"})}
    assert got == {"from openai._base_client import SyncAPIClient", "._calculate_retry_timeout", "._exceptions",
                   "getattr(..., '_api_key_provider')", "Rows._write_single_row overrides a private method"}
