"""The real graphrag-eval, imported from its wheel, for side-by-side comparisons (never installed).

    from graphrag_eval_wheels import import_graphrag_eval
    ge6 = import_graphrag_eval("6.6.1")              # None when the wheel is not there
    ge6 = import_graphrag_eval("6.6.1", download=True)

Wheels live in $QAREPORT_WHEELS, else ~/.cache/qareport/wheels (`.ci/run` downloads them there:
`pip download graphrag-eval==X --no-deps --python-version 3.12 --only-binary=:all: -d DIR`; the
wheels are pure Python and their metadata asks for Python 3.12). A wheel is unpacked beside itself
(6.x reads its prompt file from disk) and imported under its own name (`graphrag_eval_6_6_1`), so
that several versions can be compared in one process. On Python < 3.12 its aggregation module gets
Python 3.12's `sum()` (compensated float sums), as on the Python it requires.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType


def wheel_folder() -> Path:
    return Path(os.environ.get("QAREPORT_WHEELS") or Path.home() / ".cache" / "qareport" / "wheels")


def wheel_path(version: str) -> Path:
    return wheel_folder() / f"graphrag_eval-{version}-py3-none-any.whl"


def download_wheel(version: str) -> Path:
    folder = wheel_folder()
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--python-version", "3.12",
                    "--only-binary=:all:", "--dest", str(folder), f"graphrag-eval=={version}"], check=True)
    return wheel_path(version)


def import_graphrag_eval(version: str, *, download: bool = False, plain_name: bool = False) -> ModuleType | None:
    """graphrag-eval `version` as the module `graphrag_eval_<version with underscores>`, or None
    when its wheel is absent (and `download` is false). `plain_name`: also make it `graphrag_eval`
    (5.x imports its own modules by that name while it runs)."""
    name = "graphrag_eval_" + version.replace(".", "_")
    if name in sys.modules:
        return sys.modules[name]
    wheel = wheel_path(version)
    if not wheel.is_file():
        if not download:
            return None
        wheel = download_wheel(version)
    unpacked = wheel.with_suffix("")  # graphrag_eval-6.6.1-py3-none-any/
    package = unpacked / "graphrag_eval"
    if not (package / "__init__.py").is_file():
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(unpacked)
    spec = importlib.util.spec_from_file_location(name, package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # a few of its modules import `graphrag_eval.util` by its name: lend them this version's, briefly
    util = importlib.import_module(f"{name}.util")
    lent = {key: sys.modules.get(key) for key in ("graphrag_eval", "graphrag_eval.util")}
    if lent["graphrag_eval"] is None:
        placeholder = ModuleType("graphrag_eval")
        placeholder.__path__ = []
        sys.modules["graphrag_eval"] = placeholder
    sys.modules["graphrag_eval.util"] = util
    try:
        spec.loader.exec_module(module)
    finally:
        for key, previous in lent.items():
            if previous is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = previous
    if plain_name:
        sys.modules["graphrag_eval"] = module
        sys.modules["graphrag_eval.util"] = sys.modules[f"{name}.util"]
    aggregation = sys.modules[f"{name}.aggregation"]
    if sys.version_info < (3, 12):
        from qareport.aggregates import sum_as_python312

        aggregation.sum = sum_as_python312  # type: ignore[attr-defined]
    return module
