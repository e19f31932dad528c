"""Checks made before any work: a run that cannot end well stops in a second, writing nothing.

A scheduled job that names a path that does not exist, an output it cannot write, or a template
with a syntax error must fail at once with one line that names the option and what to fix, not
after the judge was paid for, and never with a confident report of 29 "missing" cases. Each check
raises `UsageError` (exit status 2 on the command line).

What is checked:

- every path named as test cases, responses, baseline or history exists (a folder may be empty:
  that is an input problem, reported with the rest), and is a file or a folder, not a device or a
  socket (`/dev/zero` would be read for ever);
- the workbook's name ends in `.xlsx`, the results file's in `.yaml`, `.yml` or `.json`; the name
  and the path are not longer than the file system takes (the temporary file written first gets a
  name that fits whenever the final one does); their folders exist and can be written; neither is
  one of the inputs (a report never overwrites data);
- a `--templates` folder exists, and every template in it compiles (syntax, encoding, a template
  that includes itself);
- an email's subject and addresses hold no line break or other control character (a header cannot
  be split in two); `qareport.settings` checks the same of values from the environment and the
  configuration file, naming where each came from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from qareport.errors import UsageError
from qareport.files import TEMPORARY_PREFIX, name_too_long
from qareport.input_files import special_file

WORKBOOK_SUFFIX = ".xlsx"
RESULTS_SUFFIXES = (".yaml", ".yml", ".json")
INPUT_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")
TEMPLATE_SUFFIXES = (".txt", ".html", ".md")
STALE_AFTER_SECONDS = 3600  # a temporary file of ours this old belongs to a run that was killed


def check_inputs_exist(option: str, paths: Iterable[str | Path]) -> None:
    """Every named path is there: a misspelt one is a usage error, not a run of "missing" cases."""
    for path in paths:
        if not os.path.lexists(path):
            raise UsageError(f"{option} {path}: no such file or folder; check the path")
        if not os.path.exists(path):
            raise UsageError(f"{option} {path}: a link to something that does not exist; check the path")
        special = special_file(path)
        if special is not None and "(FIFO)" not in special:  # a named pipe is an input problem, named with the rest
            raise UsageError(f"{option} {path}: {special}, not a file or a folder; give a file or a folder of files")


def check_output(option: str, path: str | Path, *, suffixes: Sequence[str], inputs: Iterable[str | Path]) -> None:
    """An output the run can write at the end, and that overwrites no input."""
    target = Path(path)
    if target.suffix.lower() not in suffixes:
        raise UsageError(f"{option} {target}: the name must end in {' or '.join(suffixes)} "
                         f"(got {target.suffix or 'no suffix'})")
    too_long = name_too_long(target)
    if too_long is not None:
        raise UsageError(f"{option} {_shortened(str(target))}: {too_long}")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{option} {target}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {target}: the folder {folder} cannot be written")
    if target.is_dir():
        raise UsageError(f"{option} {target}: is a folder; name a file")
    for given in inputs:
        if _is_input(target, Path(given)):
            raise UsageError(f"{option} {target}: is one of the inputs ({given}); writing it would destroy "
                             "them; name another file")


def open_elsewhere(path: str | Path) -> str | None:
    """A warning when an office program has the workbook open: LibreOffice's lock file
    (`.~lock.NAME.xlsx#`) or Excel's owner file (`~$NAME.xlsx`) beside it. The new workbook still
    replaces the file (a report is never left unwritten), but the program keeps showing the old one,
    and saving there would write the old report, with the reviews typed since, over the new one."""
    target = Path(path)
    locks = ((target.with_name(f".~lock.{target.name}#"), "LibreOffice"),
             (target.with_name(f"~${target.name}"), "Excel"))
    for lock, program in locks:
        try:
            text = lock.read_text(encoding="utf-8", errors="replace") if lock.is_file() else None
        except OSError:  # there but not readable: still a sign that the file is open
            text = ""
        if text is None:
            continue
        user = _lock_owner(text) if program == "LibreOffice" else None
        who = f"by {user}" if user else "by someone"
        return (f"{target} is open in {program} {who} ({lock.name} is beside it): it is replaced all the same, "
                f"but {program} keeps showing the old report, and saving there would write the old report (and any "
                "reviews typed since) over the new one; close it without saving and open the new one, and move "
                "reviews typed in the old one across")
    return None


def _lock_owner(text: str) -> str | None:
    """The user a LibreOffice lock file names (`,Jane Doe,host,28.11.2026 09:12,...;`), if any."""
    fields = text.split(",")
    owner = fields[1].strip() if len(fields) > 1 else ""
    return owner[:80] or None


def _shortened(text: str, keep: int = 120) -> str:
    """A long path in a message: its start and its end."""
    return text if len(text) <= 2 * keep else f"{text[:keep]}...{text[-keep:]}"


def _is_input(target: Path, given: Path) -> bool:
    resolved = target.resolve()
    source = given.resolve()
    if source.is_file():
        return resolved == source
    return source.is_dir() and resolved.is_relative_to(source) and resolved.suffix.lower() in INPUT_SUFFIXES


def check_templates(folder: str | Path | None) -> None:
    """The templates of an override folder exist and compile; the message names file and line."""
    if folder is None:
        return
    root = Path(folder)
    if not root.is_dir():
        raise UsageError(f"--templates {root}: no such folder; check the path")
    from jinja2 import TemplateSyntaxError

    from qareport.templating import template_environment, unsafe_reaches

    environment = template_environment(str(root))
    for path in sorted(p for p in root.rglob("*") if p.suffix in TEMPLATE_SUFFIXES and p.is_file()):
        name = path.relative_to(root).as_posix()
        try:
            source = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise UsageError(f"{path}: not UTF-8 text (byte {error.start}); save the template as UTF-8") from None
        except OSError as error:
            raise UsageError(f"{path}: cannot read the template ({error.strerror})") from None
        try:
            tree = environment.parse(source, name, str(path))
        except TemplateSyntaxError as error:
            raise UsageError(f"{path}:{error.lineno}: template syntax error: {error.message}") from None
        for line, what in unsafe_reaches(tree):
            raise UsageError(f"{path}:{line}: the template reaches for {what}, which a template may not use "
                             "(it sees only the values qareport renders it with); remove it")
        if _includes_itself(source, name):
            raise UsageError(f"{path}: the template includes itself; remove the include")
        _check_variables(path, name, source)


def _includes_itself(source: str, name: str) -> bool:
    from jinja2 import nodes

    from qareport.templating import template_environment

    tree = template_environment(None).parse(source)
    return any(isinstance(template := getattr(node, "template", None), nodes.Const) and template.value == name
               for node in tree.find_all((nodes.Include, nodes.Extends, nodes.Import, nodes.FromImport)))


def _check_variables(path: Path, name: str, source: str) -> None:
    """An override may use only what qareport gives the template it replaces (rendering is strict:
    an unknown name would fail the run at the end)."""
    from jinja2 import TemplateNotFound, meta

    from qareport.templating import packaged_templates_dir, template_environment

    environment = template_environment(None)
    try:
        packaged = (packaged_templates_dir() / name).read_text(encoding="utf-8")
    except (OSError, TemplateNotFound):
        return  # not a template qareport renders: it is never used
    given = meta.find_undeclared_variables(environment.parse(packaged))
    used = meta.find_undeclared_variables(environment.parse(source))
    for unknown in sorted(used - given - set(environment.globals)):
        line = next((number for number, text in enumerate(source.splitlines(), start=1) if unknown in text), None)
        where = f"{path}:{line}" if line else str(path)
        raise UsageError(f"{where}: the template uses '{unknown}', which qareport does not provide to {name} "
                         f"(it provides: {', '.join(sorted(given)) or 'nothing'})")


_HEADER_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")  # a tab may stay
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def header_text_problem(value: str) -> str | None:
    """What is wrong with `value` as a mail header's text, or None: a line break would split the
    header in two (and could add a recipient); another control character has no place in it."""
    found = _HEADER_CONTROL.search(value)
    if found is None:
        return None
    what = "a line break" if found.group() in _LINE_BREAKS else f"a control character ({found.group()!r})"
    return f"{value!r} holds {what}; give it on one line"


def check_header_text(option: str, values: Iterable[str | None]) -> None:
    """A subject or an address with a line break would split a mail header (or add a recipient)."""
    for value in values:
        problem = header_text_problem(value) if value is not None else None
        if problem is not None:
            raise UsageError(f"{option}: {problem}")


def remove_stale_temporaries(folder: str | Path, *, now: float) -> list[Path]:
    """Remove what a killed run of ours left in `folder` (temporary files older than an hour)."""
    removed: list[Path] = []
    try:
        candidates = list(Path(folder).glob(f"{TEMPORARY_PREFIX}*.tmp"))
    except OSError:
        return removed
    for path in candidates:
        try:
            if now - path.stat().st_mtime > STALE_AFTER_SECONDS:
                path.unlink()
                removed.append(path)
        except OSError:
            continue
    return removed
