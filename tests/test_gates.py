"""The gates run where they belong: CI runs mypy --strict and ruff as steps of their own, before
the tests, and the configuration they read is in pyproject.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    """The commands of .ci/run, a `&&` chain taken apart."""
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    kept = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith(("#", "echo"))]
    return [part.strip() for line in kept for part in line.split(" && ")]


def test_ci_runs_mypy_strict_and_ruff_as_their_own_steps_before_the_tests():
    commands = _commands()
    steps = ["python -m mypy --strict qareport", "python -m ruff check", "python -m pytest"]
    assert all(step in commands for step in steps), commands
    assert [commands.index(step) for step in steps] == sorted(commands.index(step) for step in steps)
    install = next(i for i, command in enumerate(commands) if "pip install" in command and "--group dev" in command)
    assert install < commands.index(steps[0])  # inside the fresh environment, with the dev dependency group


def test_the_gates_are_configured_in_pyproject_and_installed_with_the_dev_dependency_group():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["tool"]["mypy"]["strict"] is True
    assert project["tool"]["ruff"]["line-length"] == 120
    groups = project["dependency-groups"]
    assert {"include-group": "lint"} in groups["dev"] and {"include-group": "test"} in groups["dev"]
    lint = " ".join(groups["lint"])
    assert "mypy" in lint and "ruff>=" in lint
    assert "test" not in project["project"]["optional-dependencies"]  # a user's extras hold no developer tools
    assert not (REPO / "tests" / "test_public_api.py").read_text(encoding="utf-8").count("\"mypy\"")  # not in pytest


def test_the_docstrings_examples_run_as_doctests_with_the_suite():
    options = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert "--doctest-modules" in options["addopts"].split()
    assert "qareport" in options["testpaths"]
    examples = [path for path in (REPO / "qareport").rglob("*.py") if ">>> " in path.read_text(encoding="utf-8")]
    assert examples  # there are examples to run


def test_every_exception_is_drawn_in_the_tree_and_raised_or_a_base_of_one_that_is():
    import re

    from qareport import errors

    classes = {name: value for name, value in vars(errors).items()
               if isinstance(value, type) and issubclass(value, Exception) and value.__module__ == errors.__name__}
    drawn = set(re.findall(r"^    [│├└─ ]*([A-Z]\w+) ", errors.__doc__ or "", re.MULTILINE))
    assert drawn == set(classes), drawn ^ set(classes)
    source = "\n".join(path.read_text(encoding="utf-8") for path in (REPO / "qareport").rglob("*.py")
                       if path.name != "errors.py")
    used = {name for name in classes if re.search(rf"\b{name}\(", source)}
    bases = {base.__name__ for cls in classes.values() for base in cls.__mro__[1:]}
    assert set(classes) <= used | bases, set(classes) - used - bases
