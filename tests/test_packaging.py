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
