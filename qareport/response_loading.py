"""Responses from JSON, JSON Lines and YAML files into `Response` records: the records of a file
(streamed in chunks where it is well-formed), the case each names, each kind's part of a turn, the
token counts and times, the attempt, and every attempt of a case kept by its number."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from qareport import kinds
from qareport.describing import describe_value
from qareport.errors import ShapeError
from qareport.id_text import normalise_id
from qareport.input_files import InputDigest, expand_paths, read_input_text, yaml_file_documents
from qareport.input_problems import ProblemCollector, shape_problems
from qareport.input_shapes import as_id as _as_id
from qareport.input_shapes import keys_as_written as _keys_as_written
from qareport.input_shapes import plain
from qareport.input_shapes import written as _written
from qareport.json_input import UNREADABLE, StreamedJson, id_lines, parse_json, stream_json, stream_json_lines
from qareport.lone_surrogates import may_hold_surrogates, replace_lone_surrogates
from qareport.records import USAGE_FIELDS, InputSummary, Location, Response, TurnOutput
from qareport.yaml_values import LineDict, line_of

RESPONSE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".yaml", ".yml")
RESPONSE_ID_KEYS = ("question_id", "test_case_id", "id")
MAX_ATTEMPT = 2**53 - 1
"""The largest attempt number: the largest whole number a workbook (a double) holds exactly."""
RESPONSE_KEYS = (*RESPONSE_ID_KEYS, "turns", *USAGE_FIELDS, "status", "error", "attempt")
"""The keys a response record is read by, besides the kinds' output keys (`_turn_keys`); any other
is named as a problem ("unknown key: not evaluated"), never dropped in silence."""


def _key_texts(mapping: dict[str, Any]) -> dict[Any, str]:
    """The key of a YAML mapping as written, for keys YAML read as something else than a string
    (an id-keyed response file: `010:`). Keys keep the order of their text in `key_lines`."""
    if isinstance(mapping, LineDict) and len(mapping.key_lines) == len(mapping):
        return {key: text for key, text in zip(mapping, mapping.key_lines) if not isinstance(key, str)}
    return {}


def _turn_keys(known: kinds.RunKinds) -> tuple[str, ...]:
    """The keys of a response turn (or record) that the kinds read."""
    return tuple(key for kind in known if (key := kind.output_key) is not None)


def _count_unknown_response_keys(record: dict[str, Any], case_id: str, line: int | None,
                                 problems: ProblemCollector) -> None:
    """Keys of a response record (or of one of its turns) that nothing reads."""
    turn_keys = _turn_keys(problems.known)
    raw_turns = record.get("turns")
    turns: list[Any] = raw_turns if isinstance(raw_turns, list) else []
    for part, known in ((record, (*RESPONSE_KEYS, *turn_keys)), *((turn, turn_keys) for turn in turns)):
        if isinstance(part, dict):
            for key in part:
                if key not in known:
                    problems.unknown_key("response", key, line, case_id)


def _record_id(record: dict[str, Any]) -> str | None:
    """The case a record names, as written (see `_written`), normalised."""
    for key in RESPONSE_ID_KEYS:
        found = _as_id(_written(record, key))
        if found is not None:
            return found
    return None


def _records_in_json_value(value: Any, known: kinds.RunKinds) -> list[tuple[dict[str, Any] | Any, str | None]]:
    """(record, id from a mapping key) pairs of a list, an id-keyed mapping, or one record."""
    if isinstance(value, list):
        return [(item, None) for item in value]
    if isinstance(value, dict):
        if _record_id(value) is not None or any(key in value for key in ("turns", *_turn_keys(known))):
            return [(value, None)]
        written = _key_texts(value)
        return [(item, normalise_id(written.get(key, str(key)))) for key, item in value.items()]
    return [(value, None)]


def _ids_as_written(record: Any, known: kinds.RunKinds) -> None:
    """Put back, in a YAML response record, the ids and names YAML 1.1 read as something else
    (see `_written`): the record's id fields and those its kinds' outputs hold (its turns'
    too), before the record loses what YAML remembered."""
    if not isinstance(record, LineDict):
        return
    _keys_as_written(record, RESPONSE_ID_KEYS)
    turns = record.get("turns")
    for turn in [record, *(turns if isinstance(turns, list) else ())]:
        if isinstance(turn, dict):
            for kind in known:
                kind.output_as_written(turn)


def _raw_response_records(
    path: Path, problems: ProblemCollector, digest: InputDigest
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
            if not isinstance(streamed, StreamedJson):
                for parsed in streamed:
                    for line, message in parsed.problems:
                        problems.add(str(path), line, message)
                    if parsed.value is not UNREADABLE:
                        yield parsed.value, None, parsed.number
            else:
                yield from _json_records(streamed.value, streamed.id_lines, problems.known)
            return
    text = read_input_text(path, problems, digest)
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
            yield from _json_records(value, id_lines(text), problems.known)
        return
    for document in yaml_file_documents(path, text, problems):
        key_lines = getattr(document, "key_lines", None) or {}
        lines = {normalise_id(text): line for text, line in key_lines.items()}
        for record, key in _records_in_json_value(document, problems.known):
            where = lines.get(key, line_of(document)) if key is not None else line_of(record)
            _ids_as_written(record, problems.known)
            yield plain(record) if isinstance(record, (dict, list)) else record, key, where


def _json_records(value: Any, lines: dict[str, int],
                  known: kinds.RunKinds) -> Iterator[tuple[Any, str | None, int | None]]:
    """The records of a JSON file's value, each with the line of the first id field naming it."""
    for record, key in _records_in_json_value(value, known):
        record_id = (_record_id(record) if isinstance(record, dict) else None) or key
        yield record, key, lines.get(record_id) if record_id else None


def _json_value(text: str, path: Path, problems: ProblemCollector, *, line: int | None) -> Any:
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


def _turn_output(raw: dict[str, Any], *, line: int | None, known: kinds.RunKinds) -> TurnOutput:
    """Each kind's part of a response turn."""
    return TurnOutput(parts={kind.name: part for kind in known
                             if (part := kind.parse_output(raw, line=line)) is not None})


def parse_response(record: Any, *, key_id: str | None, location: Location,
                   notes: list[str] | None = None, known: kinds.RunKinds | None = None) -> Response:
    """One response record, read by the kinds `known` (the run's; None: the catalogue's); raises
    ShapeError when it is not usable. What is wrong but does not make it unusable goes into `notes`."""
    known = known if known is not None else kinds.catalogue()
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
    read = (*RESPONSE_KEYS, *_turn_keys(known))
    extra = {k: v for k, v in record.items() if k not in read}
    extra.update(unusable)  # kept as text
    if record.get("status") == "error" or "error" in record:
        try:  # what an error response still carries is kept; a kind may score it (graphrag-eval 6.x: the steps)
            carried = _turn_output(record, line=location.line, known=known)
            kept = (carried,) if carried.parts else ()
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
            turns.append(_turn_output(raw_turn, line=location.line, known=known))
    else:
        turns = [_turn_output(record, line=location.line, known=known)]
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
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ATTEMPT:
        shown = describe_value(value) if not isinstance(value, int) or value < 1 else _digits(value)
        raise ShapeError(f"'attempt' must be a positive whole number, 1 for the first attempt, 2 for the "
                         f"second, ... up to {MAX_ATTEMPT:,} (got {shown}); write the attempt's number, or leave "
                         "'attempt' out when the case was run once", line)
    return value


def _digits(value: int) -> str:
    """"a 400-digit number" (never the number itself, which may fill a screen)."""
    try:
        return f"a {len(str(value))}-digit number"
    except ValueError:  # past Python's limit on converting an integer to text
        return "a number of thousands of digits"


def _attempt_of_unusable(record: Any) -> int | bool | None:
    """The attempt an unusable record names (None: it names none); False when its `attempt` itself
    cannot be read, so that the record may stand for no attempt in particular."""
    if not isinstance(record, dict):
        return None
    try:
        return _attempt(record, None)
    except ShapeError:
        return False


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
    paths: Iterable[str | Path], problems: ProblemCollector,
    attempt_sets: dict[str, tuple[Response, ...]] | None = None,
) -> tuple[dict[str, Response], list[InputSummary]]:
    """Every response by case id (the lowest-numbered attempt of a case answered several times),
    read by the run's kinds (`problems.known`); `attempt_sets`, when given, receives every attempt
    of the cases that have two or more."""
    attempt_sets = {} if attempt_sets is None else attempt_sets
    responses: dict[str, Response] = {}
    # each case's responses by attempt number (a record without `attempt` is attempt 1)
    numbered: dict[str, dict[int, Response]] = {}
    unnumbered: dict[str, Response] = {}  # unusable records whose attempt cannot be read, by case
    summaries = []
    for given, files in expand_paths(paths, RESPONSE_SUFFIXES, problems, role="responses"):
        count = 0
        digest = InputDigest()
        for file in files:
            halves = may_hold_surrogates(file)
            for record, key_id, line in _raw_response_records(file, problems, digest):
                if halves:
                    record, replaced = replace_lone_surrogates(record)
                    if replaced:
                        problems.add(str(file), line, f"{replaced} lone surrogate(s) (an escape such as \\ud800 that "
                                     "is half of a character) replaced by U+FFFD; write the whole character or "
                                     "both halves of its pair",
                                     key_id or (_record_id(record) if isinstance(record, dict) else None))
                disagreement = _key_disagreement(record, key_id)
                if disagreement is not None:
                    problems.add(str(file), line, disagreement, key_id)
                    continue
                location = Location(str(file), line)
                notes: list[str] = []
                try:
                    response = parse_response(record, key_id=key_id, location=location, notes=notes,
                                              known=problems.known)
                except ShapeError as error:
                    record_id = (_record_id(record) if isinstance(record, dict) else None) or key_id
                    for where, message in shape_problems(error, line):
                        problems.add(str(file), where, message, record_id)
                    attempt = _attempt_of_unusable(record)
                    if record_id is None:
                        continue
                    placeholder = Response(record_id, location, status="invalid",
                                           error=f"unusable response: {error}", attempt=attempt or None)
                    if attempt is False:  # an attempt of no number: the case's error only if nothing else answers it
                        unnumbered.setdefault(record_id, placeholder)
                    elif (attempt or 1) not in numbered.get(record_id, {}):
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
    for case_id, placeholder in unnumbered.items():
        responses.setdefault(case_id, placeholder)
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
