"""The configuration file (`qareport.yaml`): defaults for options, so a team runs the same way.

Looked for at `--config PATH`, else `./qareport.yaml` if present. Command-line options win over
the file; the file wins over the environment; the environment wins over built-in defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from qareport.errors import QAReportError

DEFAULT_CONFIG_NAME = "qareport.yaml"
KNOWN_KEYS = {
    "match_terms_by": str,
    "templates": str,
    "strict": bool,
    "judge": dict,
    "email": dict,
}


def load_config(path: str | None) -> tuple[dict[str, Any], str | None]:
    """The configuration mapping and the file it came from (None when there is none)."""
    candidate = Path(path) if path else Path(DEFAULT_CONFIG_NAME)
    if not candidate.is_file():
        if path:
            raise QAReportError(f"{path}: no such configuration file")
        return {}, None
    try:
        data = yaml.safe_load(candidate.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as error:
        line = getattr(getattr(error, "problem_mark", None), "line", None)
        where = f"{candidate}:{line + 1}" if line is not None else str(candidate)
        raise QAReportError(f"{where}: cannot read the configuration: {error}") from error
    if data is None:
        return {}, str(candidate)
    if not isinstance(data, dict):
        raise QAReportError(f"{candidate}: the configuration must be a mapping of option: value")
    for key, value in data.items():
        expected = KNOWN_KEYS.get(key)
        if expected is None:
            raise QAReportError(
                f"{candidate}: unknown key '{key}'; known keys: {', '.join(sorted(KNOWN_KEYS))}"
            )
        if not isinstance(value, expected):
            raise QAReportError(
                f"{candidate}: '{key}' must be a {expected.__name__} (got {type(value).__name__})"
            )
    return data, str(candidate)
