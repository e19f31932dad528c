"""The configuration file: `--config FILE`, else `./qareport.yaml`, else the `[tool.qareport]` table
of `./pyproject.toml`; its qareport mapping read, its top-level keys and their types checked, and
where each key is (the line of a YAML file's top-level key) for messages. What the values mean is
`qareport.settings`'s to say.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from qareport.errors import SettingsError

DEFAULT_CONFIG_NAME = "qareport.yaml"
PYPROJECT_NAME = "pyproject.toml"
RUN_CONFIG_KEYS = {"match_terms_by": str, "templates": str, "strict": bool, "steps_semantics": int,
                   "config_ge6": str, "answer_pass_f1": object, "audit_size": object}
"""The run settings a configuration file may give at its top level (`settings.RunSettings`), and
the type of their values there (`object`: any, the setting's own check says what it must be)."""
SECTION_KEYS = {"judge": dict, "email": dict, "indicator_selection": dict}
RETIRED_KEYS = {"testcase_cache": "the parse cache it turned off is gone (it saved too little to keep)"}
"""Keys earlier versions read, and why they went: a configuration that still has one is told what to remove."""


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """The qareport mapping of a configuration file; `path` None when there is no file.
    `prefix` is how its keys are named in messages ("" in qareport.yaml, "tool.qareport." in
    pyproject.toml)."""

    path: str | None
    values: Mapping[str, Any]
    prefix: str = ""
    lines: Mapping[str, int] = field(default_factory=dict)  # top-level key -> 1-based line (YAML files)

    def section(self, name: str) -> Mapping[str, Any]:
        return self.values.get(name) or {}

    def where(self, key: str) -> str:
        """How a message names `key` (dotted, e.g. 'judge.model') of this file."""
        place = self.path or "the configuration"
        return f"'{self.prefix}{key}' in {place}"

    def at(self, key: str) -> str:
        """"qareport.yaml:4" for a top-level key (the file alone when the line is not known)."""
        line = self.lines.get(key)
        place = self.path or "the configuration"
        return f"{place}:{line}" if line else place


def find_config_file(config_path: str | None, cwd: str | Path | None = None) -> Path | None:
    """`--config FILE` (which must exist), else `qareport.yaml`, else a `pyproject.toml` with a
    `[tool.qareport]` table, in `cwd` (default: the current directory)."""
    if config_path:
        path = Path(config_path)
        if not path.is_file():
            raise SettingsError(f"{config_path}: no such configuration file; check --config")
        return path
    folder = Path(cwd) if cwd is not None else Path.cwd()
    candidate = folder / DEFAULT_CONFIG_NAME
    if candidate.is_file():
        return candidate
    pyproject = folder / PYPROJECT_NAME
    if pyproject.is_file() and "qareport" in _read_pyproject(pyproject).get("tool", {}):
        return pyproject
    return None


def read_config_file(path: Path | None) -> ConfigFile:
    """The qareport mapping of `path`, its top-level keys and their types checked."""
    if path is None:
        return ConfigFile(None, MappingProxyType({}))
    lines: dict[str, int] = {}
    if path.name == PYPROJECT_NAME or path.suffix == ".toml":
        data = _read_pyproject(path).get("tool", {}).get("qareport")
        prefix = "tool.qareport."
    else:
        data = _read_yaml(path)
        prefix = ""
        lines = _top_level_lines(path)
    config = ConfigFile(str(path), MappingProxyType({}), prefix)
    if data is None:
        return config
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: the configuration must be a mapping of option: value "
                            f"(got {type(data).__name__})")
    known = {**RUN_CONFIG_KEYS, **SECTION_KEYS}
    for key, value in data.items():
        expected = known.get(key)
        if key in RETIRED_KEYS:
            raise SettingsError(f"{path}: '{prefix}{key}' is no longer a setting: {RETIRED_KEYS[key]}; remove it")
        if expected is None:
            raise SettingsError(f"{path}: unknown key '{prefix}{key}'; known keys: {', '.join(sorted(known))}")
        if not isinstance(value, expected):
            raise SettingsError(
                f"{path}: '{prefix}{key}' must be a {expected.__name__} (got {type(value).__name__})"
            )
    return ConfigFile(str(path), MappingProxyType(dict(data)), prefix, MappingProxyType(lines))


def _top_level_lines(path: Path) -> dict[str, int]:
    """The line of each top-level key of a YAML mapping (for messages); empty when unreadable."""
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(key.value): key.start_mark.line + 1 for key, _ in node.value}


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as error:
        line = getattr(getattr(error, "problem_mark", None), "line", None)
        where = f"{path}:{line + 1}" if line is not None else str(path)
        raise SettingsError(f"{where}: cannot read the configuration: {error}") from error


def _read_pyproject(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as error:
        raise SettingsError(f"{path}: cannot read the configuration: {error}") from error
