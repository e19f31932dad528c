"""Test cases and responses from files into records: the only module that reads input files.

Nothing here raises on bad input. Every problem becomes a `Problem` (file, line where known, what
is wrong and how to fix it), and whatever is still valid is kept, so one bad file or record never
loses the rest of a run.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from qareport import kinds
from qareport.collector import collector_paused
from qareport.describing import describe_value
from qareport.errors import ShapeError
from qareport.id_text import normalise_id
from qareport.input_shapes import ShapeErrors, optional_text, plain
from qareport.input_shapes import as_id as _as_id
from qareport.input_shapes import keys_as_written as _keys_as_written
from qareport.input_shapes import require_str as _require_str
from qareport.input_shapes import written as _written
from qareport.json_input import UNREADABLE, id_lines, parse_json, stream_json, stream_json_lines
from qareport.parse_cache import ParseCache, ParsedItem
from qareport.records import (
    USAGE_FIELDS,
    InputSummary,
    Location,
    Problem,
    Response,
    Suite,
    Target,
    TestCase,
    Turn,
    TurnOutput,
    Unloaded,
)
from qareport.yaml_guards import YamlProblem
from qareport.yaml_input import yaml_documents
from qareport.yaml_values import LineDict, LineList, line_of, written_text

TESTCASE_SUFFIXES = (".yaml", ".yml")
RESPONSE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".yaml", ".yml")
RESPONSE_ID_KEYS = ("question_id", "test_case_id", "id")
RESPONSE_KEYS = (*RESPONSE_ID_KEYS, "turns", *USAGE_FIELDS, "status", "error", "attempt")
"""The keys a response record is read by, besides the kinds' output keys (`_turn_keys`); any other
is named as a problem ("unknown key: not evaluated"), never dropped in silence."""
STATGPT_ONLY = "a key of statgpt's fuller ground-truth schema, which qareport does not score"
KEY_ADVICE = dict.fromkeys(("is_out_of_scope", "tool_calls", "query_normalization", "datasets_selection"),
                           STATGPT_ONLY)
"""What to say of unknown keys whose meaning is known (another tool's key; the kinds add their
keys' other names, `Kind.key_advice`); any other gets "check its spelling if it was meant to be
scored"."""


def _key_advice() -> dict[str, str]:
    return {**KEY_ADVICE, **{key: advice for kind in kinds.REGISTRY for key, advice in kind.key_advice}}


# --- reading files -----------------------------------------------------------------------------


@dataclass
class _Collector:
    """Problems found so far, in the order found."""

    problems: list[Problem] = field(default_factory=list)
    unloaded: list[Unloaded] = field(default_factory=list)  # test cases that could not be read
    # unknown keys of one file, each named once: (in what, key) -> [line, case id, how many times]
    unknown: dict[tuple[str, str], list[Any]] = field(default_factory=dict)

    def add(self, path: str, line: int | None, message: str, case_id: str | None = None) -> None:
        self.problems.append(Problem(Location(path, line), message, case_id))

    def unknown_key(self, in_what: str, key: Any, line: int | None, case_id: str | None) -> None:
        """`key` of a target or a response (`in_what`) is read by nothing: counted, and named once per
        file by `name_unknown_keys`."""
        seen = self.unknown.setdefault((in_what, str(key)), [line, case_id, 0])
        seen[2] += 1

    def name_unknown_keys(self, path: str) -> None:
        """One problem per unknown key counted since the last call, at its first place."""
        for (in_what, key), (line, case_id, count) in self.unknown.items():
            where = (f"the {in_what} of case '{case_id}'" if in_what == "target" else
                     f"the response for '{case_id}'" if case_id is not None else f"a {in_what}")
            more = count - 1
            also = f" (also in {more} more {in_what}{'s' if more > 1 else ''} of this file)" if more else ""
            advice = _key_advice().get(key, "check its spelling if it was meant to be scored")
            shown = key if len(key) <= 80 else key[:79] + "…"
            self.add(path, line, f"unknown key '{shown}' in {where}{also}: not evaluated; {advice}", case_id)
        self.unknown.clear()


def expand_paths(
    paths: Iterable[str | Path], suffixes: Sequence[str], problems: _Collector, *, role: str
) -> list[tuple[str, list[Path]]]:
    """Each given path with the files it stands for (folders searched recursively, sorted).

    Nothing is skipped silently: a named pipe, a dangling link, a link that loops back into its own
    folder and a folder that cannot be read are each a problem.
    """
    expanded = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files = _files_in(path, suffixes, problems)
            if not files and not any(p.location.path.startswith(str(path)) for p in problems.problems):
                problems.add(
                    str(path), None, f"no {role} files ({', '.join(suffixes)}) in this directory"
                )
        elif path.is_file():
            files = [path]
        elif _is_fifo(path):
            problems.add(str(path), None, "a named pipe (FIFO), not a file; give a regular file")
            files = []
        elif path.is_symlink():
            problems.add(str(path), None, "a link to something that does not exist; fix or remove the link")
            files = []
        else:
            problems.add(str(path), None, f"no such file or directory (given as {role})")
            files = []
        expanded.append((str(given), files))
    return expanded


def _is_fifo(path: Path) -> bool:
    try:
        return stat.S_ISFIFO(path.stat().st_mode)
    except OSError:
        return False


def _files_in(folder: Path, suffixes: Sequence[str], problems: _Collector) -> list[Path]:
    """The files with one of `suffixes` below `folder`, following links to folders once each."""
    files: list[Path] = []
    seen: set[tuple[int, int]] = set()

    def unreadable(error: OSError) -> None:
        problems.add(str(error.filename or folder), None,
                     f"cannot read this folder ({error.strerror or error}); its files are not loaded")

    for root, folders, names in os.walk(folder, onerror=unreadable, followlinks=True):
        here = Path(root)
        try:
            identity = here.stat()
            seen.add((identity.st_dev, identity.st_ino))
        except OSError:
            continue
        for name in list(folders):
            child = here / name
            try:
                status = child.stat()
            except OSError:
                continue
            if (status.st_dev, status.st_ino) in seen:
                folders.remove(name)
                problems.add(str(child), None, "a link back into a folder already searched (a loop); it is skipped")
        for name in names:
            candidate = here / name
            if candidate.suffix.lower() not in suffixes:
                continue
            if candidate.is_file():
                files.append(candidate)
            elif _is_fifo(candidate):
                problems.add(str(candidate), None, "a named pipe (FIFO), not a file; it is not read")
            elif candidate.is_symlink():
                problems.add(str(candidate), None, "a link to something that does not exist; fix or remove the link")
    return sorted(files)


class _InputDigest:
    """The sha256 of the files a given path stands for, in order, fed as each file is read (once)."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()

    def update(self, data: bytes, /) -> None:
        self.hash.update(data)

    def hexdigest(self) -> str:
        return self.hash.hexdigest()


def _read_text(path: Path, problems: _Collector, digest: _InputDigest) -> str | None:
    """The text of a file, read once: its bytes also go to `digest` (the inputs' sha256)."""
    data = _read_bytes(path, problems, digest)
    return None if data is None else _decoded(path, data, problems)


def _read_bytes(path: Path, problems: _Collector, digest: _InputDigest) -> bytes | None:
    try:
        data = path.read_bytes()
    except OSError as error:
        problems.add(str(path), None, f"cannot read the file: {error.strerror or error}")
        return None
    digest.update(data)
    return data


def _decoded(path: Path, data: bytes, problems: _Collector) -> str | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        problems.add(
            str(path),
            line,
            f"the file is not UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start}); "
            "save it as UTF-8",
        )
        return None
    if not text.strip():
        problems.add(str(path), None, "the file is empty")
        return None
    return text


def _yaml_documents(path: Path, text: str, problems: _Collector, *, testcases: bool = False) -> Iterator[Any]:
    """The documents of a YAML file (for a top-level sequence, one per item: see `yaml_input`), one
    at a time, so that only one item's raw data is alive; a syntax error costs only its item."""
    found = reported = 0
    for part in yaml_documents(text):
        if isinstance(part, YamlProblem):
            problems.add(str(path), part.line, part.message, part.item_id)
            reported += 1
            if part.lost and testcases:
                problems.unloaded.append(Unloaded(str(path), part.line, part.item_id, whole_file=part.item_id is None))
        else:
            found += 1
            yield part
    if not found and not reported:
        problems.add(str(path), None, "the file holds no data (only comments, or null); add to it or remove it")


# --- shapes ------------------------------------------------------------------------------------


def _item_id(container: Any, key: Any) -> str | None:
    """An id or a name in a mapping or list, as written and normalised; None when absent or not
    text (for problems and rows of cases too broken to parse)."""
    if isinstance(container, dict):
        return _as_id(_written(container, key))
    return None if container[key] is None else _as_id(written_text(container, key) or container[key])


def _key_texts(mapping: dict[str, Any]) -> dict[Any, str]:
    """The key of a YAML mapping as written, for keys YAML read as something else than a string
    (an id-keyed response file: `010:`). Keys keep the order of their text in `key_lines`."""
    if isinstance(mapping, LineDict) and len(mapping.key_lines) == len(mapping):
        return {key: text for key, text in zip(mapping, mapping.key_lines) if not isinstance(key, str)}
    return {}


def _require_list(container: Any, key: str, what: str) -> list[Any]:
    value = container.get(key)
    if not isinstance(value, list):
        raise ShapeError(
            f"{what}: '{key}' must be a list (got {describe_value(value)})",
            line_of(container, key),
        )
    return value


def _shape_problems(error: ShapeError, line: int | None) -> list[tuple[int | None, str]]:
    """(line, message) for each problem a ShapeError stands for: one, or every value without id
    and name of a selection."""
    if isinstance(error, ShapeErrors):
        return [(where or error.line or line, message) for where, message in error.each]
    return [(error.line or line, str(error))]


def _target_kinds() -> list[kinds.Kind]:
    return [kind for kind in kinds.REGISTRY if kind.reads_target]


def _turn_keys() -> tuple[str, ...]:
    """The keys of a response turn (or record) that the kinds read."""
    return tuple(key for kind in kinds.REGISTRY if (key := kind.output_key) is not None)


def _parse_target(target: Any, *, line: int | None) -> Target:
    if not isinstance(target, dict):
        raise ShapeError(f"'target' must be a mapping (got {describe_value(target)})", line)
    readers = _target_kinds()
    known = {kind.name for kind in readers}
    if not known & set(target):
        raise ShapeError(f"'target' has none of {', '.join(sorted(known))}", line_of(target))
    return _target_of(target, readers)


def _target_of(mapping: dict[str, Any], readers: Sequence[kinds.Kind]) -> Target:
    """Each kind's part of a target (or of a Q&A question), with the line it is written at."""
    parts: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for kind in readers:
        part = kind.read_target(mapping, line=line_of(mapping, kind.name))
        if part is not None:
            parts[kind.name] = part
            where = line_of(mapping, kind.name)
            if where is not None:
                lines[kind.name] = where
    return Target(parts=parts, lines=lines)


def definition_hash(case_payload: Any) -> str:
    """A short hash of what a case expects, to tell an edited test from a changed result."""
    # json writes the line-tracking dicts and lists as plain ones: no copy needed
    try:
        canonical = json.dumps(case_payload, sort_keys=True, ensure_ascii=False, default=str)
    except TypeError:  # keys json cannot sort or write (`1:` beside `b:`, a date): compare them as text
        canonical = json.dumps(_keys_as_text(case_payload), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _keys_as_text(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _keys_as_text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_keys_as_text(item) for item in value]
    return value


def _parse_conversation_case(raw: dict[str, Any], path: str) -> TestCase:
    case_id = _require_str(raw, "id", "test case")
    assert case_id is not None
    name = _require_str(raw, "name", "test case", optional=True) or case_id
    tags = _written(raw, "tags") or []
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list) or not all(isinstance(t, (str, int, float)) for t in tags):
        raise ShapeError(f"'tags' must be a list of strings (got {describe_value(tags)})", line_of(raw, "tags"))
    tags = [_item_id(tags, index) or "" for index in range(len(tags))]
    cluster = _require_str(raw, "cluster", f"case '{case_id}'", optional=True)
    conversation = _require_list(raw, "conversation", f"case '{case_id}'")
    turns: list[Turn] = []
    for index, message in enumerate(conversation):
        if not isinstance(message, dict):
            raise ShapeError(
                f"message {index + 1} must be a mapping {{role, content}} (got {describe_value(message)})",
                line_of(conversation, index),
            )
        role = str(message.get("role", "user"))
        if "target" not in message:
            continue
        if role != "user":
            raise ShapeError(
                f"message {index + 1} has a target but role '{role}'; only user messages carry targets",
                line_of(message, "target"),
            )
        target = _parse_target(message["target"], line=line_of(message, "target"))
        content = optional_text(message, "content") or ""
        turns.append(Turn(len(turns) + 1, content, target))
    if not turns:
        raise ShapeError(
            f"case '{case_id}' has no user message with a 'target'; nothing can be evaluated",
            line_of(raw, "conversation"),
        )
    return TestCase(
        id=case_id,
        kind="conversation",
        name=name,
        groups=tuple(str(t) for t in tags),
        turns=tuple(turns),
        location=Location(path, line_of(raw)),
        comments=str(raw.get("comments") or ""),
        definition_hash=definition_hash([m.get("target") for m in conversation if isinstance(m, dict)]),
        cluster=cluster or None,
    )


def _parse_question(raw: dict[str, Any], template_id: str, path: str) -> TestCase:
    question_id = _require_str(raw, "id", f"a question of template '{template_id}'")
    assert question_id is not None
    text = _require_str(raw, "question_text", f"question '{question_id}'", identifier=False) or ""
    readers = [kind for kind in _target_kinds() if kind.in_questions]
    target = _target_of(raw, readers)
    return TestCase(
        id=question_id,
        kind="qa",
        name=text,
        groups=(template_id,),
        turns=(Turn(1, text, target),),
        location=Location(path, line_of(raw)),
        definition_hash=definition_hash(
            {"q": text, **{kind.question_hash_key or kind.name: raw.get(kind.name) for kind in readers}}
        ),
        cluster=template_id,
    )


def _cases_in_document(document: Any, path: str, problems: _Collector) -> Iterator[TestCase]:
    """Every test case of one YAML document: a case, a template, or a list of either."""
    items = document if isinstance(document, list) else [document]
    for index, item in enumerate(items):
        line = line_of(items, index) if isinstance(items, LineList) else line_of(item)
        if not isinstance(item, dict):
            problems.add(
                path, line, f"expected a test case or a Q&A template mapping (got {describe_value(item)})"
            )
            continue
        if "template_id" in item or "questions" in item:
            yield from _questions_of_template(item, path, problems)
            continue
        if "conversation" not in item:
            problems.add(
                path,
                line,
                "a test case needs 'conversation' (a list of messages), or 'template_id' and "
                "'questions' for a Q&A template",
                _item_id(item, "id"),
            )
            continue
        try:
            case = _parse_conversation_case(item, path)
        except ShapeError as error:
            case_id = _item_id(item, "id")
            for where, message in _shape_problems(error, line):
                problems.add(path, where, message, case_id or None)
            if case_id is not None:
                yield _invalid_case(item, path, str(error), line)
            continue
        _count_unknown_target_keys(item, case.id, problems)
        yield case


def _count_unknown_target_keys(item: dict[str, Any], case_id: str, problems: _Collector) -> None:
    """Keys of a case's targets that no kind reads (statgpt's fuller ground truth has several)."""
    known = {kind.name for kind in _target_kinds()}
    for message in item.get("conversation") or []:
        target = message.get("target") if isinstance(message, dict) else None
        if isinstance(target, dict):
            for key in target:
                if key not in known:
                    problems.unknown_key("target", key, line_of(target, key) or line_of(target), case_id)


def _count_unknown_response_keys(record: dict[str, Any], case_id: str, line: int | None, problems: _Collector) -> None:
    """Keys of a response record (or of one of its turns) that nothing reads."""
    turn_keys = _turn_keys()
    raw_turns = record.get("turns")
    turns: list[Any] = raw_turns if isinstance(raw_turns, list) else []
    for part, known in ((record, (*RESPONSE_KEYS, *turn_keys)), *((turn, turn_keys) for turn in turns)):
        if isinstance(part, dict):
            for key in part:
                if key not in known:
                    problems.unknown_key("response", key, line, case_id)


def _invalid_case(item: dict[str, Any], path: str, reason: str, line: int | None) -> TestCase:
    """A case too broken to evaluate still gets its row, so it is never silently dropped."""
    raw_tags = item.get("tags")
    tags = raw_tags if isinstance(raw_tags, list) else []
    case_id = _item_id(item, "id")
    return TestCase(
        id=str(case_id),
        kind="conversation",
        name=_item_id(item, "name") or str(case_id),
        groups=tuple(_item_id(tags, index) or "" for index in range(len(tags))),
        turns=(),
        location=Location(path, line),
        comments=f"invalid test case: {reason}",
        declared_targets=_declared_targets(item),
    )


def _declared_targets(item: dict[str, Any]) -> tuple[str, ...]:
    """The kinds of target a case that could not be read declares: the keys of its messages'
    targets (a question's parts of the kinds questions carry), so that Statistics and the
    Summary count it among the cases that could have had those metrics."""
    readers = _target_kinds()
    found: dict[str, None] = {}
    conversation = item.get("conversation")
    if isinstance(conversation, list):
        for message in conversation:
            target = message.get("target") if isinstance(message, dict) else None
            if isinstance(target, dict):
                order = {key: index for index, key in enumerate(target)}
                declared = sorted((kind for kind in readers if kind.declared_in(target)), key=lambda k: order[k.name])
                found.update((kind.name, None) for kind in declared)
    else:
        found.update((kind.name, None) for kind in readers if kind.in_questions and kind.declared_in(item))
    return tuple(found)


def _questions_of_template(template: dict[str, Any], path: str, problems: _Collector) -> Iterator[TestCase]:
    try:
        template_id = _require_str(template, "template_id", "Q&A template")
        questions = _require_list(template, "questions", f"template '{template_id}'")
    except ShapeError as error:
        problems.add(path, error.line or line_of(template), str(error))
        return
    assert template_id is not None
    for index, question in enumerate(questions):
        if not isinstance(question, dict):
            problems.add(
                path,
                line_of(questions, index),
                f"template '{template_id}': question {index + 1} must be a mapping "
                f"(got {describe_value(question)})",
            )
            continue
        try:
            yield _parse_question(question, template_id, path)
        except ShapeError as error:
            question_id = _item_id(question, "id")
            problems.add(path, error.line or line_of(question), str(error), question_id)
            if question_id is not None:
                yield replace(
                    _invalid_case(question, path, str(error), line_of(question)),
                    kind="qa",
                    name=str(question.get("question_text") or question_id),
                    groups=(template_id,),
                )


def load_test_cases(
    paths: Iterable[str | Path], problems: _Collector, *, cache: ParseCache | None = None
) -> tuple[list[TestCase], list[InputSummary]]:
    """The test cases of `paths`, in order, the first of each id kept. A file `cache` holds is
    read back instead of parsed, with the problems parsing it found."""
    cases: list[TestCase] = []
    summaries = []
    first_seen: dict[str, TestCase] = {}
    for given, files in expand_paths(paths, TESTCASE_SUFFIXES, problems, role="test case"):
        count = 0
        digest = _InputDigest()
        for file in files:
            parsed = _parsed_file(file, problems, digest, cache)
            if parsed is None:
                continue
            for item in parsed:
                if isinstance(item, Problem):
                    problems.problems.append(item)
                elif isinstance(item, Unloaded):
                    problems.unloaded.append(item)
                elif item.id in first_seen:
                    problems.add(
                        item.location.path,
                        item.location.line,
                        f"duplicate test case id '{item.id}' (first defined at "
                        f"{first_seen[item.id].location}); this one is ignored, give it a unique id",
                        item.id,
                    )
                else:
                    first_seen[item.id] = item
                    cases.append(item)
                    count += 1
        summaries.append(InputSummary(given, "testcases", len(files), count, digest.hexdigest()))
    return cases, summaries


def _parsed_file(file: Path, problems: _Collector, digest: _InputDigest,
                 cache: ParseCache | None) -> Iterable[ParsedItem] | None:
    """What a test-case file holds, in order (see `ParsedItem`), from `cache` when it has the file;
    None when the file cannot be read at all (a problem says why)."""
    data = _read_bytes(file, problems, digest)
    text = None if data is None else _decoded(file, data, problems)
    if data is None or text is None:
        if problems.problems and problems.problems[-1].location.path == str(file) \
                and "is empty" not in problems.problems[-1].message:
            problems.unloaded.append(Unloaded(str(file), problems.problems[-1].location.line, whole_file=True))
        return None
    key = cache.key(str(file), data) if cache is not None else None
    if cache is None or key is None:
        return _parse_file(file, text)
    kept = cache.get(key)
    if kept is None:
        kept = list(_parse_file(file, text))
        cache.put(key, kept)
    return kept


def _parse_file(file: Path, text: str) -> Iterator[ParsedItem]:
    """The test cases of a file, each after the problems found before it."""
    found = _Collector()
    for document in _yaml_documents(file, text, found, testcases=True):
        for case in _cases_in_document(document, str(file), found):
            yield from _drained(found)
            yield case
    found.name_unknown_keys(str(file))
    yield from _drained(found)


def _drained(found: _Collector) -> Iterator[Problem | Unloaded]:
    yield from found.problems
    yield from found.unloaded
    found.problems.clear()
    found.unloaded.clear()


# --- responses ---------------------------------------------------------------------------------


def _record_id(record: dict[str, Any]) -> str | None:
    """The case a record names, as written (see `_written`), normalised."""
    for key in RESPONSE_ID_KEYS:
        found = _as_id(_written(record, key))
        if found is not None:
            return found
    return None


def _records_in_json_value(value: Any) -> list[tuple[dict[str, Any] | Any, str | None]]:
    """(record, id from a mapping key) pairs of a list, an id-keyed mapping, or one record."""
    if isinstance(value, list):
        return [(item, None) for item in value]
    if isinstance(value, dict):
        if _record_id(value) is not None or any(key in value for key in ("turns", *_turn_keys())):
            return [(value, None)]
        written = _key_texts(value)
        return [(item, normalise_id(written.get(key, str(key)))) for key, item in value.items()]
    return [(value, None)]


def _ids_as_written(record: Any) -> None:
    """Put back, in a YAML response record, the ids and names YAML 1.1 read as something else
    (see `_written`): the record's id fields and those its kinds' outputs hold (its turns'
    too), before the record loses what YAML remembered."""
    if not isinstance(record, LineDict):
        return
    _keys_as_written(record, RESPONSE_ID_KEYS)
    turns = record.get("turns")
    for turn in [record, *(turns if isinstance(turns, list) else ())]:
        if isinstance(turn, dict):
            for kind in kinds.REGISTRY:
                kind.output_as_written(turn)


def _raw_response_records(
    path: Path, problems: _Collector, digest: _InputDigest
) -> Iterator[tuple[Any, str | None, int | None]]:
    """(record, key id, line) for each record of a responses file, one at a time.

    JSON and JSON Lines are read in chunks, record by record (`json_input`), so that a large file's
    text is never held whole. A file that is not well-formed is then read whole, which tells its
    problems and their lines as they have always been told.
    """
    suffix = path.suffix.lower()
    json_lines = suffix in (".jsonl", ".ndjson")
    if json_lines or suffix == ".json":
        attempt = digest.hash.copy()
        try:
            streamed = stream_json_lines(path, attempt) if json_lines else stream_json(path, attempt)
        except OSError:
            streamed = None  # reading it whole says why
        if streamed is not None:
            digest.hash = attempt
            if isinstance(streamed, list):
                for parsed in streamed:
                    for line, message in parsed.problems:
                        problems.add(str(path), line, message)
                    if parsed.value is not UNREADABLE:
                        yield parsed.value, None, parsed.number
            else:
                yield from _json_records(streamed.value, streamed.id_lines)
            return
    text = _read_text(path, problems, digest)
    if text is None:
        return
    if json_lines:
        for number, line_text in enumerate(text.splitlines(), start=1):
            if not line_text.strip():
                continue
            value = _json_value(line_text, path, problems, line=number)
            if value is not UNREADABLE:
                yield value, None, number
        return
    if suffix == ".json":
        value = _json_value(text, path, problems, line=None)
        if value is not UNREADABLE:
            yield from _json_records(value, id_lines(text))
        return
    for document in _yaml_documents(path, text, problems):
        key_lines = getattr(document, "key_lines", None) or {}
        lines = {normalise_id(text): line for text, line in key_lines.items()}
        for record, key in _records_in_json_value(document):
            where = lines.get(key, line_of(document)) if key is not None else line_of(record)
            _ids_as_written(record)
            yield plain(record) if isinstance(record, (dict, list)) else record, key, where


def _json_records(value: Any, lines: dict[str, int]) -> Iterator[tuple[Any, str | None, int | None]]:
    """The records of a JSON file's value, each with the line of the first id field naming it."""
    for record, key in _records_in_json_value(value):
        record_id = (_record_id(record) if isinstance(record, dict) else None) or key
        yield record, key, lines.get(record_id) if record_id else None


def _json_value(text: str, path: Path, problems: _Collector, *, line: int | None) -> Any:
    """One JSON text; `UNREADABLE` (with a problem) when it is not JSON or nests too deeply."""
    value, found = parse_json(text, line=line)
    for where, message in found:
        problems.add(str(path), where, message)
    return value


MAX_COUNT = 2**53  # a token count or a number of seconds beyond this is not a measurement


def _number(record: dict[str, Any], key: str, notes: list[str]) -> int | float | None:
    """A token count or a time; one too large for a number (or not finite) is left out, with a note,
    and stays in the record as text."""
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ShapeError(f"'{key}' must be a number (got {describe_value(value)})", None) from None
    if isinstance(value, float) and type(value) is not float:
        value = float(value)  # a number kept with its text (json_input.WrittenFloat): sums as a float
    if not -MAX_COUNT <= value <= MAX_COUNT:  # False for NaN too
        shown = str(record.get(key))
        notes.append(f"'{key}' is not a usable number ({shown[:20]}{'…' if len(shown) > 20 else ''}, "
                     f"{len(shown):,} characters); it is left out of the sums")
        return None
    return value


def _turn_output(raw: dict[str, Any], *, line: int | None) -> TurnOutput:
    """Each kind's part of a response turn."""
    return TurnOutput(parts={kind.name: part for kind in kinds.REGISTRY
                             if (part := kind.parse_output(raw, line=line)) is not None})


def parse_response(record: Any, *, key_id: str | None, location: Location,
                   notes: list[str] | None = None) -> Response:
    """One response record; raises ShapeError when it is not usable. What is wrong but does not
    make it unusable goes into `notes`."""
    notes = [] if notes is None else notes
    if not isinstance(record, dict):
        raise ShapeError(f"a response must be a mapping (got {describe_value(record)})", location.line)
    case_id = _record_id(record) or key_id
    if case_id is None:
        raise ShapeError(
            "the response names no case; add 'question_id', 'test_case_id' or 'id'", location.line
        )
    attempt = _attempt(record, location.line)
    tokens = {key: _number(record, key, notes) for key in USAGE_FIELDS}
    unusable = {key: str(record[key]) for key in USAGE_FIELDS if record.get(key) is not None and tokens[key] is None}
    read = (*RESPONSE_KEYS, *_turn_keys())
    extra = {k: v for k, v in record.items() if k not in read}
    extra.update(unusable)  # kept as text
    if record.get("status") == "error" or "error" in record:
        try:  # graphrag-eval 6.x scores the steps an error response still carries
            kept = (_turn_output(record, line=location.line),) if any(
                record.get(key) is not None for kind in kinds.REGISTRY
                if kind.kept_on_error and (key := kind.output_key) is not None) else ()
        except ShapeError:
            kept = ()
        return Response(
            case_id=case_id,
            location=location,
            status="error",
            error=str(record.get("error") or "the system reported an error without a message"),
            turns=kept,
            extra=extra,
            attempt=attempt,
            **tokens,
        )
    if "turns" in record:
        raw_turns = record["turns"]
        if not isinstance(raw_turns, list):
            raise ShapeError(f"'turns' must be a list (got {describe_value(raw_turns)})", location.line)
        turns = []
        for index, raw_turn in enumerate(raw_turns):
            if not isinstance(raw_turn, dict):
                raise ShapeError(
                    f"turn {index + 1} must be a mapping (got {describe_value(raw_turn)})", location.line
                )
            turns.append(_turn_output(raw_turn, line=location.line))
    else:
        turns = [_turn_output(record, line=location.line)]
    return Response(case_id=case_id, location=location, turns=tuple(turns), extra=extra, attempt=attempt,
                    **tokens)  # type: ignore[arg-type]


def _attempt(record: dict[str, Any], line: int | None) -> int | None:
    """A record's `attempt`: a positive integer, or None when it gives none (or null). Anything else
    makes the record unusable (ShapeError): which attempt it is cannot be told, and guessing could
    make it double another attempt."""
    value = record.get("attempt")
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 2.0 is attempt 2
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ShapeError(f"'attempt' must be a positive whole number, 1 for the first attempt, 2 for the "
                         f"second, ... (got {describe_value(value)}); write the attempt's number, or leave "
                         "'attempt' out when the case was run once", line)
    return value


def _attempt_of_unusable(record: Any) -> int | None:
    """The attempt an unusable record names, when that much can be read (None otherwise)."""
    if not isinstance(record, dict):
        return None
    try:
        return _attempt(record, None)
    except ShapeError:
        return None


def _key_disagreement(record: Any, key_id: str | None) -> str | None:
    """What is wrong when a record of an id-keyed mapping names another case in its id field
    (`"a": {"question_id": "b"}`): which one was meant cannot be told, so it is given to neither."""
    if key_id is None or not isinstance(record, dict):
        return None
    for field_name in RESPONSE_ID_KEYS:
        named = _as_id(_written(record, field_name))
        if named is not None:
            if named == key_id:
                return None
            return (f"the response under key '{key_id}' names case '{named}' in its '{field_name}' field; "
                    f"it is used for neither case: make the key and '{field_name}' the same")
    return None


def load_responses(
    paths: Iterable[str | Path], problems: _Collector, attempt_sets: dict[str, tuple[Response, ...]] | None = None,
) -> tuple[dict[str, Response], list[InputSummary]]:
    """Every response by case id (the lowest-numbered attempt of a case answered several times);
    `attempt_sets`, when given, receives every attempt of the cases that have two or more."""
    attempt_sets = {} if attempt_sets is None else attempt_sets
    responses: dict[str, Response] = {}
    # each case's responses by attempt number (a record without `attempt` is attempt 1)
    numbered: dict[str, dict[int, Response]] = {}
    summaries = []
    for given, files in expand_paths(paths, RESPONSE_SUFFIXES, problems, role="responses"):
        count = 0
        digest = _InputDigest()
        for file in files:
            for record, key_id, line in _raw_response_records(file, problems, digest):
                disagreement = _key_disagreement(record, key_id)
                if disagreement is not None:
                    problems.add(str(file), line, disagreement, key_id)
                    continue
                location = Location(str(file), line)
                notes: list[str] = []
                try:
                    response = parse_response(record, key_id=key_id, location=location, notes=notes)
                except ShapeError as error:
                    record_id = (_record_id(record) if isinstance(record, dict) else None) or key_id
                    for where, message in _shape_problems(error, line):
                        problems.add(str(file), where, message, record_id)
                    attempt = _attempt_of_unusable(record)
                    if record_id is not None and (attempt or 1) not in numbered.get(record_id, {}):
                        placeholder = Response(record_id, location, status="invalid",
                                               error=f"unusable response: {error}", attempt=attempt)
                        numbered.setdefault(record_id, {})[attempt or 1] = placeholder
                        responses.setdefault(record_id, placeholder)
                    continue
                for note in notes:
                    problems.add(str(file), line, note, response.case_id)
                _count_unknown_response_keys(record, response.case_id, line, problems)
                attempts = numbered.setdefault(response.case_id, {})
                first = attempts.get(response.attempt or 1)
                if first is not None:
                    problems.add(str(file), line, _duplicate(response, first), response.case_id)
                    continue
                attempts[response.attempt or 1] = response
                responses.setdefault(response.case_id, response)
                count += 1
            problems.name_unknown_keys(str(file))
        summaries.append(InputSummary(given, "responses", len(files), count, digest.hexdigest()))
    for case_id, attempts in numbered.items():
        if len(attempts) > 1:
            by_number = tuple(attempts[number] for number in sorted(attempts))
            responses[case_id] = by_number[0]
            attempt_sets[case_id] = by_number
    return responses, summaries


def _duplicate(response: Response, first: Response) -> str:
    """What to say of a second record for the same case and attempt."""
    if response.attempt is None and first.attempt is None:
        return f"a second response for '{response.case_id}' (first at {first.location}); this one is ignored"
    number = response.attempt or 1
    unnumbered = " (a record without 'attempt' is attempt 1)" if None in (response.attempt, first.attempt) else ""
    return (f"a second response for '{response.case_id}', attempt {number}{unnumbered} (first at "
            f"{first.location}); this one is ignored: give each attempt its own number")


def load_suite(
    testcase_paths: Iterable[str | Path], response_paths: Iterable[str | Path], *,
    cache: ParseCache | None = None,
) -> Suite:
    """Test cases and responses, cross-checked: unknown ids and missing responses are problems.
    Without any response path the test cases are checked alone (`qareport validate TESTCASES`).
    `cache` keeps large test-case files parsed between runs (see `parse_cache`)."""
    response_paths = list(response_paths)
    problems = _Collector()
    with collector_paused():  # everything loaded lives on: see `collector`
        cases, case_inputs = load_test_cases(testcase_paths, problems, cache=cache)
        attempts: dict[str, tuple[Response, ...]] = {}
        responses, response_inputs = load_responses(response_paths, problems, attempts)
    known = {case.id for case in cases}
    lost_ids = {u.case_id: u for u in problems.unloaded if u.case_id}
    lost_files = [u for u in problems.unloaded if u.case_id is None]
    for case_id, response in responses.items():
        if case_id in known:
            continue
        if case_id in lost_ids:
            message = (f"response for case id '{case_id}', whose test case is in the part of "
                       f"{lost_ids[case_id].path} that could not be read (line {lost_ids[case_id].line}); "
                       "fix that file")
        elif lost_files:
            message = (f"response for case id '{case_id}', which no loaded test case has; its test case may be in "
                       f"{', '.join(sorted({u.path for u in lost_files}))}, which could not be read")
        else:
            message = f"response for unknown case id '{case_id}'; check the id or add the test case"
        problems.add(response.location.path, response.location.line, message, case_id)
    for case in cases:
        if response_paths and case.id not in responses and case.turns:
            problems.add(
                case.location.path,
                case.location.line,
                f"case '{case.id}' has no response; it is reported as missing",
                case.id,
            )
    return Suite(
        cases=tuple(cases),
        responses={k: v for k, v in responses.items() if k in known},
        problems=tuple(problems.problems),
        inputs=(*case_inputs, *response_inputs),
        unloaded=tuple(problems.unloaded),
        attempts={k: v for k, v in attempts.items() if k in known},
    )
