"""The configuration file: `--config FILE`, else `./qareport.yaml`, else the `[tool.qareport]` table
of `./pyproject.toml`; its qareport mapping read, its top-level keys and their types checked, and
where each key is (the line of a YAML file's top-level key) for messages. What the values mean is
`qareport.settings`'s to say.

A file found in the current folder is trusted as the caches are (`files.open_trusted_folder`): one
that another user owns or may write to, or that lies in a folder another user may write to, is
ignored with a warning. Such a file could send the judge's API key to a server of that user's
choosing (`judge.base_url`), and a run in a shared folder (/tmp) must not read it. A file named with
`--config` is the user's explicit choice and read as it is.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from qareport.errors import SettingsError
from qareport.files import UntrustedCacheError, open_trusted_folder

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


def find_config_file(config_path: str | None, cwd: str | Path | None = None, *,
                     on_warning: Callable[[str], None] | None = None) -> Path | None:
    """`--config FILE` (which must exist), else `qareport.yaml`, else a `pyproject.toml` with a
    `[tool.qareport]` table, in `cwd` (default: the current directory). A file there that another
    user could have written is skipped, and `on_warning` (default: the "qareport" logger) told why."""
    if config_path:
        path = Path(config_path)
        if not path.is_file():
            raise SettingsError(f"{config_path}: no such configuration file; check --config")
        return path
    warn = on_warning or _log_warning
    folder = Path(cwd) if cwd is not None else Path.cwd()
    candidate = folder / DEFAULT_CONFIG_NAME
    if candidate.is_file() and _trusted(candidate, warn):
        return candidate
    pyproject = folder / PYPROJECT_NAME
    if pyproject.is_file() and _trusted(pyproject, warn) and "qareport" in _read_pyproject(pyproject).get("tool", {}):
        return pyproject
    return None


def untrusted_reason(path: Path) -> str | None:
    """Why another user could have written `path` (it or a folder above it is theirs, or they may
    write to it), or None when only this user or root can have."""
    try:
        with open_trusted_folder(path.parent) as folder:
            folder.check_file(path.name)
    except UntrustedCacheError as error:
        return str(error)
    except OSError:  # a folder that cannot be walked: reading the file will say what is wrong
        return None
    return None


def _trusted(path: Path, on_warning: Callable[[str], None]) -> bool:
    why = untrusted_reason(path)
    if why is None:
        return True
    on_warning(f"{path}: configuration not read, because another user could have written it ({why}); "
               "its settings (the judge's address among them) are ignored. Keep it in a folder only you can "
               "write, owned by you and not writable by others, or name it with --config if you trust it")
    return False


def _log_warning(message: str) -> None:
    logging.getLogger("qareport").warning("%s", message)


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
