"""What `pip install .` installs: every bundled template's folder is a declared package whose data
patterns take its files (a folder left to setuptools' guessing is warned about now and would be
left out later). Checked on pyproject.toml: building a wheel here would need the network."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_template_folder_is_a_declared_package_whose_data_takes_its_files():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    templates = ROOT / setuptools["package-dir"]["qareport.templates"]
    files = [path for path in templates.rglob("*") if path.is_file() and "__pycache__" not in path.parts
             and path.suffix != ".py"]
    assert files
    for path in files:
        folder = path.parent.relative_to(templates)
        package = ".".join(("qareport.templates", *folder.parts))
        assert package in setuptools["packages"], f"{package} is not declared in [tool.setuptools] packages"
        patterns = setuptools["package-data"].get(package, [])
        assert any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns), f"{path} is not package data"


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_version_is_written_once_in_the_package_and_read_by_the_build():
    import qareport

    project = _project()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "qareport.__version__"}
    assert qareport.__version__.count(".") == 2


def test_the_declared_licence_ships_as_its_text():
    project = _project()["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_classifiers_claim_the_python_versions_the_project_requires():
    project = _project()["project"]
    claimed = {c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if c.startswith("Programming Language :: Python :: 3.")}
    assert project["requires-python"] == ">=3.11" and claimed == {"3.11", "3.12", "3.13"}
    assert "Operating System :: OS Independent" in project["classifiers"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]  # the licence expression says it


def test_developer_tools_are_a_dependency_group_not_a_user_extra():
    project = _project()
    extras = [requirement for extra in project["project"].get("optional-dependencies", {}).values()
              for requirement in extra]
    assert not [r for r in extras if r.split(">")[0].split("=")[0] in ("pytest", "mypy", "ruff", "types-PyYAML")]
    groups = project["dependency-groups"]
    assert any(r.startswith("pytest") for r in groups["test"]) and any(r.startswith("mypy") for r in groups["lint"])


def test_the_only_console_script_is_qareport():
    # graphrag-eval installs `answer-correctness`: a second owner of that name would overwrite it
    assert _project()["project"]["scripts"] == {"qareport": "qareport.cli:main"}
