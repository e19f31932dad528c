"""Guards against drift between the code and what users read."""

import argparse
import types
from pathlib import Path

import qareport
from qareport.cli import build_parser

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def all_options(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                yield from ((f"{name} {o}", o) for _, o in all_options(subparser))
        for option in action.option_strings:
            if option.startswith("--") and option not in ("--help",):
                yield option, option


def test_every_command_line_option_is_in_the_readme():
    missing = sorted({where for where, option in all_options(build_parser()) if option not in README})
    assert missing == []


def test_every_subcommand_is_in_the_readme():
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert [name for name in commands.choices if f"qareport {name}" not in README] == []


def test_the_public_api_is_exactly_the_exported_names():
    public = sorted(
        name for name in dir(qareport)
        if not name.startswith("_") and name not in ("annotations", "import_module", "Any")
        and not isinstance(getattr(qareport, name), types.ModuleType)
    )
    assert sorted(n for n in qareport.__all__ if n != "__version__") == public
    for name in qareport.__all__:
        assert getattr(qareport, name) is not None


def test_the_quick_start_commands_are_the_ones_ci_runs():
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    # one command: the install, then the gates (types, linter), each stopping it when it fails, then the tests
    command = ('python -m pip install -q --upgrade "pip>=25.1" && python -m pip install -q . --group dev '
               "&& python -m mypy --strict qareport && python -m ruff check && python -m pytest")
    assert command in [line.strip() for line in README.splitlines()]
    assert command in [line.strip() for line in ci.splitlines()]
    assert "qareport run testcases --responses testcases/responses --output report.xlsx" in README
