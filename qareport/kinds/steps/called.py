"""The steps a system called, as text a reviewer reads: one line per step, then its arguments as their
values (a SPARQL query as a query, with its line breaks), for the stored run and the Compare sheet."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any


def steps_text(steps: Sequence[Mapping[str, Any]] | None) -> str | None:
    """One line per step called, then its arguments as their values, one per line; a value over
    several lines (a SPARQL query) as it was written, indented:

        1. sparql_query [success]
           query:
             PREFIX dbo: <http://dbpedia.org/ontology/>
             SELECT ?city WHERE { ?city dbo:country dbr:France }
        2. retrieval [success]
           query: GDP of Brazil
           k: 5
    """
    if steps is None:
        return None
    lines = []
    for number, step in enumerate(steps, start=1):
        name = str(step.get("name") or "?")
        status = step.get("status")
        lines.append(f"{number}. {name}" + (f" [{status}]" if status else ""))
        lines += [ARGUMENT_INDENT + line for line in argument_lines(step.get("args"))]
    return "\n".join(lines) or "(no steps)"


ARGUMENT_INDENT = "   "
_VALUE_INDENT = "  "


def argument_lines(args: Any) -> list[str]:
    """A step's arguments as lines: "name: value" each, a value over several lines under its name,
    indented. Arguments given as JSON text (as tool calls carry them) are read first; what is not a
    mapping is shown as it is (text) or as compact JSON."""
    if args in (None, "", {}, []):
        return []
    if isinstance(args, str):
        parsed = _json_mapping(args)
        if parsed is None:
            return _text_lines(args)
        args = parsed
    if not isinstance(args, Mapping):
        return [_compact(args)]
    lines = []
    for key, value in args.items():
        text = value if isinstance(value, str) else _compact(value)
        block = _text_lines(text)
        if len(block) == 1:
            lines.append(f"{key}: {block[0]}")
        else:
            lines.append(f"{key}:")
            lines += [_VALUE_INDENT + line for line in block]
    return lines


def _text_lines(text: str) -> list[str]:
    """The lines of a text, without blank lines before or after and without their common indent."""
    lines = textwrap.dedent(text.strip("\n")).rstrip().splitlines()
    return lines or [""]


def _json_mapping(text: str) -> dict[str, Any] | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


_OLD_STEP_LINE = re.compile(r"^(\d+\. .*?(?: \[[^\]]*\])?) (\{.*\})$")


def readable_steps(text: str) -> str:
    """Steps text kept by an earlier qareport ("1. sparql_query [success] {"query": "\\nSELECT…"}",
    the arguments as escaped JSON) in today's form (`steps_text`); today's text as it is. A line
    whose JSON was cut by the stored run's limit stays as it was."""
    lines = []
    for line in text.split("\n"):
        found = _OLD_STEP_LINE.match(line)
        parsed = _json_mapping(found.group(2)) if found else None
        if found is None or parsed is None:
            lines.append(line)
            continue
        lines.append(found.group(1))
        lines += [ARGUMENT_INDENT + argument for argument in argument_lines(parsed)]
    return "\n".join(lines)
