"""What a library user's type checker sees of `qareport`: the exports' real types (they load lazily
at run time, so only the `if TYPE_CHECKING:` imports in qareport/__init__.py can show them), and an
error for a name the package does not export."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import qareport

REPO = Path(__file__).resolve().parent.parent

USES_THE_EXPORTS = '''\
from pathlib import Path

import qareport
from qareport import QAReportError, RunOptions, load_suite, recall_at_k

suite = load_suite(["testcases"], ["testcases/responses"])
reveal_type(suite)
reveal_type(recall_at_k)
options = RunOptions(testcases=("testcases",), responses=("testcases/responses",), output="report.xlsx")
reveal_type(qareport.run_pipeline)
version: str = qareport.__version__
error: type[Exception] = QAReportError
wrong: int = qareport.summarize
'''

NAMES_WHAT_IS_NOT_EXPORTED = '''\
import qareport
from qareport import no_such_function

qareport.no_such_name
'''


def test_the_type_checking_imports_are_exactly_the_lazy_exports():
    tree = ast.parse((REPO / "qareport" / "__init__.py").read_text(encoding="utf-8"))
    (block,) = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "typing.TYPE_CHECKING"]
    typed = {alias.name: node.module for node in block.body if isinstance(node, ast.ImportFrom)
             for alias in node.names if alias.asname == alias.name}  # `X as X`: re-exported under --strict
    assert typed == qareport._EXPORTS


def test_a_type_checker_sees_the_exports_real_types_and_refuses_a_name_not_exported(tmp_path):
    pytest.importorskip("mypy", reason="mypy comes with the lint dependency group")
    (tmp_path / "uses_the_exports.py").write_text(USES_THE_EXPORTS, encoding="utf-8")
    (tmp_path / "names_what_is_not_exported.py").write_text(NAMES_WHAT_IS_NOT_EXPORTED, encoding="utf-8")
    # from the repository, so that pyproject.toml's settings and mypy's cache there apply
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context",
                           str(tmp_path / "uses_the_exports.py"), str(tmp_path / "names_what_is_not_exported.py")],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    # only the snippets' lines, by file name (mypy's cache may name the folder of an earlier run): what
    # mypy says of qareport itself is the gate's business
    snippet = re.compile(r"^.*?((?:uses_the_exports|names_what_is_not_exported)\.py:.*)$")
    lines = [found[1] for found in map(snippet.match, done.stdout.splitlines()) if found]
    said = "\n".join(lines)
    revealed = {line.split(":")[1]: line.split("Revealed type is ")[1] for line in lines if "Revealed type is" in line}
    assert revealed.keys() == {"7", "8", "10"}, said
    assert revealed["7"] == '"qareport.records.Suite"'
    assert revealed["8"].startswith('"def (') and revealed["8"].endswith('-> float"')
    assert revealed["10"].startswith('"def (options: qareport.pipeline.RunOptions')
    assert revealed["10"].endswith('-> qareport.pipeline.RunOutcome"')
    assert "Any" not in said
    errors = [line.split("  [")[0] for line in lines if ": error: " in line]
    assert [error.split(": error: ")[0] for error in errors] == [
        "names_what_is_not_exported.py:2", "names_what_is_not_exported.py:4", "uses_the_exports.py:13"], said
    assert 'Module "qareport" has no attribute "no_such_function"' in errors[0]
    assert "Module has no attribute \"no_such_name\"" in errors[1]
    assert "Incompatible types in assignment" in errors[2] and "SuiteStatistics" in errors[2]
