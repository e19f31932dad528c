"""Test cases from YAML files into `TestCase` records: the two schemas (a conversation case with
targets on its user messages, a Q&A template of questions), each kind reading its part of a target,
the rows of cases too broken to evaluate, and the test-case files read in order, the first of
each id kept."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from qareport import kinds
from qareport.describing import describe_value
from qareport.errors import ShapeError
from qareport.input_files import InputDigest, decoded_text, expand_paths, read_input_bytes, yaml_file_documents
from qareport.input_problems import ProblemCollector, shape_problems
from qareport.input_shapes import as_id as _as_id
from qareport.input_shapes import optional_text
from qareport.input_shapes import require_str as _require_str
from qareport.input_shapes import written as _written
from qareport.kinds import RunKinds, catalogue
from qareport.records import InputSummary, Location, Problem, Target, TestCase, Turn, Unloaded
from qareport.yaml_values import LineList, line_of, written_text

TESTCASE_SUFFIXES = (".yaml", ".yml")

QUESTION_HASH_KEYS = {"reference_answer": "a", "reference_steps": "s"}
"""The keys a Q&A question's definition hash first held its reference answer and steps under: kept,
so that the hashes of stored runs stay valid (another kind's part is held under its name)."""

ParsedItem = TestCase | Problem | Unloaded
"""What reading a test-case file gives, in file order: its cases, each after the problems found before it."""


def _item_id(container: Any, key: Any) -> str | None:
    """An id or a name in a mapping or list, as written and normalised; None when absent or not
    text (for problems and rows of cases too broken to parse)."""
    if isinstance(container, dict):
        return _as_id(_written(container, key))
    return None if container[key] is None else _as_id(written_text(container, key) or container[key])


def _require_list(container: Any, key: str, what: str) -> list[Any]:
    value = container.get(key)
    if not isinstance(value, list):
        raise ShapeError(
            f"{what}: '{key}' must be a list (got {describe_value(value)})",
            line_of(container, key),
        )
    return value


def _target_kinds(known: kinds.RunKinds) -> list[kinds.Kind]:
    return [kind for kind in known if kind.reads_target]


def _parse_target(target: Any, *, line: int | None, known: kinds.RunKinds) -> Target:
    if not isinstance(target, dict):
        raise ShapeError(f"'target' must be a mapping (got {describe_value(target)})", line)
    readers = _target_kinds(known)
    names = {kind.name for kind in readers}
    if not names & set(target):
        raise ShapeError(f"'target' has none of {', '.join(sorted(names))}", line_of(target))
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


def _parse_conversation_case(raw: dict[str, Any], path: str, known: kinds.RunKinds) -> TestCase:
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
        target = _parse_target(message["target"], line=line_of(message, "target"), known=known)
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


def _parse_question(raw: dict[str, Any], template_id: str, path: str, known: kinds.RunKinds) -> TestCase:
    question_id = _require_str(raw, "id", f"a question of template '{template_id}'")
    assert question_id is not None
    text = _require_str(raw, "question_text", f"question '{question_id}'", identifier=False) or ""
    readers = [kind for kind in _target_kinds(known) if kind.in_questions]
    target = _target_of(raw, readers)
    return TestCase(
        id=question_id,
        kind="qa",
        name=text,
        groups=(template_id,),
        turns=(Turn(1, text, target),),
        location=Location(path, line_of(raw)),
        definition_hash=definition_hash(
            {"q": text, **{QUESTION_HASH_KEYS.get(kind.name, kind.name): raw.get(kind.name) for kind in readers}}
        ),
        cluster=template_id,
    )


def _cases_in_document(document: Any, path: str, problems: ProblemCollector,
                       known: kinds.RunKinds) -> Iterator[TestCase]:
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
            yield from _questions_of_template(item, path, problems, known)
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
            case = _parse_conversation_case(item, path, known)
        except ShapeError as error:
            case_id = _item_id(item, "id")
            for where, message in shape_problems(error, line):
                problems.add(path, where, message, case_id or None)
            if case_id is not None:
                yield _invalid_case(item, path, str(error), line, known)
            continue
        _count_unknown_target_keys(item, case.id, problems, known)
        yield case


def _count_unknown_target_keys(item: dict[str, Any], case_id: str, problems: ProblemCollector,
                               known: kinds.RunKinds) -> None:
    """Keys of a case's targets that no kind reads (statgpt's fuller ground truth has several)."""
    names = {kind.name for kind in _target_kinds(known)}
    for message in item.get("conversation") or []:
        target = message.get("target") if isinstance(message, dict) else None
        if isinstance(target, dict):
            for key in target:
                if key not in names:
                    problems.unknown_key("target", key, line_of(target, key) or line_of(target), case_id)


def _invalid_case(item: dict[str, Any], path: str, reason: str, line: int | None, known: kinds.RunKinds) -> TestCase:
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
        declared_targets=_declared_targets(item, known),
    )


def _declared_targets(item: dict[str, Any], known: kinds.RunKinds) -> tuple[str, ...]:
    """The kinds of target a case that could not be read declares: the keys of its messages'
    targets (a question's parts of the kinds questions carry), so that Statistics and the
    Summary count it among the cases that could have had those metrics."""
    readers = _target_kinds(known)
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


def _questions_of_template(template: dict[str, Any], path: str, problems: ProblemCollector,
                           known: kinds.RunKinds) -> Iterator[TestCase]:
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
            yield _parse_question(question, template_id, path, known)
        except ShapeError as error:
            question_id = _item_id(question, "id")
            problems.add(path, error.line or line_of(question), str(error), question_id)
            if question_id is not None:
                yield replace(
                    _invalid_case(question, path, str(error), line_of(question), known),
                    kind="qa",
                    name=str(question.get("question_text") or question_id),
                    groups=(template_id,),
                )


def load_test_cases(
    paths: Iterable[str | Path], problems: ProblemCollector, *, kinds: RunKinds | None = None,
) -> tuple[list[TestCase], list[InputSummary]]:
    """The test cases of `paths`, in order, the first of each id kept, their targets read by
    `kinds` (the run's; None: the catalogue's)."""
    known = kinds if kinds is not None else catalogue()
    cases: list[TestCase] = []
    summaries = []
    first_seen: dict[str, TestCase] = {}
    for given, files in expand_paths(paths, TESTCASE_SUFFIXES, problems, role="test case"):
        count = 0
        digest = InputDigest()
        for file in files:
            parsed = _parsed_file(file, problems, digest, known)
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


def _parsed_file(file: Path, problems: ProblemCollector, digest: InputDigest,
                 known: RunKinds) -> Iterable[ParsedItem] | None:
    """What a test-case file holds, in order (see `ParsedItem`); None when the file cannot be read
    at all (a problem says why)."""
    data = read_input_bytes(file, problems, digest)
    text = None if data is None else decoded_text(file, data, problems)
    if data is None or text is None:
        if problems.problems and problems.problems[-1].location.path == str(file) \
                and "is empty" not in problems.problems[-1].message:
            problems.unloaded.append(Unloaded(str(file), problems.problems[-1].location.line, whole_file=True))
        return None
    return _parse_file(file, text, known)


def _parse_file(file: Path, text: str, known: RunKinds) -> Iterator[ParsedItem]:
    """The test cases of a file, each after the problems found before it."""
    found = ProblemCollector(known=known)
    for document in yaml_file_documents(file, text, found, testcases=True):
        for case in _cases_in_document(document, str(file), found, known):
            yield from _drained(found)
            yield case
    found.name_unknown_keys(str(file))
    yield from _drained(found)


def _drained(found: ProblemCollector) -> Iterator[Problem | Unloaded]:
    yield from found.problems
    yield from found.unloaded
    found.problems.clear()
    found.unloaded.clear()
