"""Reading inputs in pieces gives what reading them whole gives: the same records, the same problems
at the same lines, the same input hashes. JSON and JSON Lines responses are read a chunk at a time
(here chunks of a few bytes, so that every value is cut somewhere); a YAML file split into its
items reads as PyYAML reads it whole. Every input is generated here."""

from __future__ import annotations

import hashlib
import json
import math
import re

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from qareport import json_input
from qareport.loading import load_suite
from qareport.yaml_guards import YamlProblem
from qareport.yaml_input import split_root_sequence, yaml_documents
from qareport.yaml_values import LineDict, LineList, LineLoader

CASE = """\
- id: {id}
  name: case {id}
  conversation:
  - role: user
    content: GDP of Mexico
    target:
      indicator_selection:
      - dataset_id: WEO
        dimensions:
        - dimension_name: COUNTRY
          values: [{{id: MEX, name: Mexico}}]
"""


def response(case_id: str, key: str = "id", **extra) -> dict:
    return {key: case_id, "indicator_selection": [{"dataset_id": "WEO", "dimensions": [
        {"dimension_name": "COUNTRY", "values": [{"id": "MEX", "name": "Mexico"}]}]}], **extra}


PRETTY = json.dumps([response("a"), response("b", "question_id", input_tokens=3), response("zzz")], indent=2)
RESPONSE_FILES = {
    "list.json": json.dumps([response("a"), response("b")]),
    "pretty.json": PRETTY,
    "pretty-crlf.json": PRETTY.replace("\n", "\r\n"),
    "with-bom.json": "\ufeff" + PRETTY,
    "mapping.json": json.dumps({"a": response("a"), "b": {"actual_answer": "keyed by its id"}}, indent=1),
    "mapping-twice.json": '{"a": {"actual_answer": "1"},\n "b": {"actual_answer": "2"},\n "a": {"actual_answer": "3"}}',
    "one-record.json": json.dumps(response("a"), indent=2),
    "second-response.json": json.dumps([response("a"), response("b"), response("a", actual_answer="again")], indent=2),
    "id-seen-before.json": json.dumps([
        {"id": "a", "actual_steps": [{"name": "s", "id": "b", "status": "success"}]}, response("b")], indent=2),
    "escaped-ids.json": '[{"id": "a\\"b", "actual_answer": "x"},\n {"id": "\\u00e9t\\u00e9"},\n {"id": 17}]',
    "odd-records.json": json.dumps([1, "x", None, [2], {"actual_answer": "names no case"},
                                    {"id": "a", "turns": "not a list"}, {"id": "b", "input_tokens": "many"}]),
    "nan.json": '[{"id": "a", "input_tokens": NaN, "output_tokens": Infinity, "actual_answer": "x"}]',
    "empty-list.json": "[]",
    "empty-mapping.json": " { } ",
    "long-text.json": json.dumps([response("a", actual_answer="x" * 5000), response("b", actual_answer="é" * 3000)]),
    # not well-formed: read whole, and told as before
    "invalid-item.json": "[\n" + json.dumps(response("a")) + ',\n{"id": "b", oops}\n]',
    "trailing-data.json": json.dumps([response("a")]) + " more",
    "truncated.json": json.dumps([response("a"), response("b")])[:-3],
    "trailing-comma.json": "[" + json.dumps(response("a")) + ",]",
    "huge-number.json": '[{"id": "a", "input_tokens": ' + "7" * 5000 + '}, {"id": "b"}]',
    "deep.json": "[" + json.dumps(response("a")) + ", " + "[" * 5000 + "]" * 5000 + "]",
    "scalar.json": "5",
    "empty.json": "",
    "blank.json": " \n\t ",
    "not-utf8.json": "[{\"id\": \"a\", \"actual_answer\": \"M\u00e9xico\"}]".encode("latin-1"),
    # JSON Lines
    "lines.jsonl": json.dumps(response("a")) + "\n\n" + json.dumps(response("b")) + "\n{not json\n" + json.dumps(response("a")) + "\n",
    "lines-crlf.jsonl": json.dumps(response("a")) + "\r\n" + json.dumps(response("b")) + "\r\n",
    "lines-cr.jsonl": '{"id": "a"}\r{"id": "b"}\r\r\n{"id": "zzz"}',
    "lines-separator.jsonl": '{"id": "a", "actual_answer": "x\u2028y"}\n{"id": "b"}\n',
    "lines-huge-number.jsonl": '{"id": "a", "input_tokens": ' + "7" * 5000 + '}\n{"id": "b"}\n',
    "lines-deep.jsonl": json.dumps(response("a")) + "\n" + "[" * 5000 + "]" * 5000 + "\n",
    "lines-blank.jsonl": "\n \n",
    "lines-not-utf8.jsonl": '{"id": "a"}\n{"id": "b", "actual_answer": "M\u00e9xico"}\n'.encode("latin-1"),
    "lines.ndjson": '{"id": "a"}\n{"id": "b"}',
    # YAML responses are read whole, as before
    "list.yaml": "- id: a\n  actual_answer: x\n- id: b\n  input_tokens: 3\n",
    "mapping.yaml": "a:\n  actual_answer: x\nb:\n  actual_answer: y\n",
}
WELL_FORMED = {name for name in RESPONSE_FILES if name.endswith(".json")} - {
    "invalid-item.json", "trailing-data.json", "truncated.json", "trailing-comma.json", "huge-number.json",
    "deep.json", "scalar.json", "empty.json", "blank.json", "not-utf8.json"}


def write_inputs(tmp_path, name: str) -> tuple:
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASE.format(id="a") + CASE.format(id="b"), encoding="utf-8")
    responses = tmp_path / name
    content = RESPONSE_FILES[name]
    responses.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return cases, responses


def everything(suite) -> tuple:
    return (suite.cases, sorted(suite.responses.items()), [repr(p) for p in suite.problems], suite.inputs,
            suite.unloaded)


def read_whole(monkeypatch) -> None:
    """The reading before chunks: every JSON and JSON Lines file read whole."""
    monkeypatch.setattr("qareport.response_loading.stream_json", lambda path, digest: None)
    monkeypatch.setattr("qareport.response_loading.stream_json_lines", lambda path, digest: None)


def same(a, b) -> bool:
    return repr(a) == repr(b)  # NaN is not equal to itself, but prints the same


@pytest.mark.parametrize("name", sorted(RESPONSE_FILES))
@pytest.mark.parametrize("chunk_bytes", [1, 7, 1 << 20])
def test_responses_read_in_chunks_give_the_records_problems_and_lines_of_the_whole_reading(
        tmp_path, monkeypatch, name, chunk_bytes):
    cases, responses = write_inputs(tmp_path, name)
    with monkeypatch.context() as whole:
        read_whole(whole)
        exp = everything(load_suite([cases], [responses]))
    monkeypatch.setattr(json_input, "CHUNK_BYTES", chunk_bytes)
    got = everything(load_suite([cases], [responses]))
    assert same(got, exp)


@pytest.mark.parametrize("name", sorted(WELL_FORMED))
def test_a_well_formed_json_file_is_read_in_chunks_with_the_value_of_json_loads(tmp_path, monkeypatch, name):
    _, responses = write_inputs(tmp_path, name)
    monkeypatch.setattr(json_input, "CHUNK_BYTES", 5)
    digest = hashlib.sha256()
    got = json_input.stream_json(responses, digest)
    text = responses.read_bytes().decode("utf-8-sig")
    assert got is not None
    assert same(got.value, json.loads(text))
    assert got.id_lines == json_input.id_lines(text)
    assert digest.hexdigest() == hashlib.sha256(responses.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", ["invalid-item.json", "trailing-data.json", "truncated.json", "trailing-comma.json",
                                  "huge-number.json", "deep.json", "scalar.json", "empty.json", "blank.json",
                                  "not-utf8.json"])
def test_a_json_file_that_is_not_well_formed_is_left_to_the_whole_reading(tmp_path, name):
    _, responses = write_inputs(tmp_path, name)
    assert json_input.stream_json(responses, hashlib.sha256()) is None


def id_lines_by_regex(text: str) -> dict[str, int]:
    """The line of the first id field holding each value, by one regex search over the whole text
    (how qareport found them before reading in chunks)."""
    lines: dict[str, int] = {}
    for match in re.finditer(r'"(?:question_id|test_case_id|id)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)', text):
        try:
            value = json.loads(match.group(1))
        except json.JSONDecodeError:
            continue
        lines.setdefault(str(value), text.count("\n", 0, match.start()) + 1)
    return lines


@pytest.mark.parametrize("name", sorted(name for name in RESPONSE_FILES if ".json" in name))
def test_id_lines_are_those_a_regex_search_over_the_whole_text_finds(tmp_path, name):
    _, responses = write_inputs(tmp_path, name)
    text = responses.read_bytes().decode("utf-8", errors="replace")
    assert json_input.id_lines(text) == id_lines_by_regex(text)


@given(st.lists(st.sampled_from(['"id"', '"question_id"', '"test_case_id"', '"xid"', 'id"', ':', ' ', '\n', ',',
                                 '"a"', '"a\\"b"', '"\\u00e9"', '"\u00e9"', '12', '-3', '007', '{', '}', '"'])))
@example(['"id"', ':', '007'])  # found by Hypothesis: a leading zero is not JSON, so it is no id
@example(['"id"', ':', '-3', '007'])
def test_id_lines_of_any_text_are_those_of_the_regex_search(pieces):
    text = "".join(pieces)
    assert json_input.id_lines(text) == id_lines_by_regex(text)


@pytest.mark.parametrize(("name", "text", "line", "where"), [
    ("leading-zero.json", '[\n {"id": "a"},\n {"id": 007}\n]\n', 3, " (column 9)"),
    ("leading-zero.jsonl", '{"id": "a"}\n{"id": -007}\n', 2, ""),
])
def test_an_id_written_with_a_leading_zero_is_reported_at_its_line_with_what_to_write(tmp_path, name, text, line,
                                                                                       where):
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASE.format(id="a"), encoding="utf-8")
    responses = tmp_path / name
    responses.write_text(text, encoding="utf-8")
    suite = load_suite([cases], [responses])
    (problem,) = [p for p in suite.problems if "JSON" in p.message]
    number = "-007" if name.endswith("l") else "007"
    assert problem.location.line == line
    assert problem.message.endswith(f"the number {number} starts with 0, which JSON does not allow; write it in "
                                    f'quotes ("{number}") to keep it as written, or without the leading zeros{where}')
    assert json_input.id_lines(text) == {"a": 1 if name.endswith("l") else 2}


def test_problems_of_a_pretty_printed_file_name_the_line_of_each_record_id(tmp_path, monkeypatch):
    cases, responses = write_inputs(tmp_path, "second-response.json")
    monkeypatch.setattr(json_input, "CHUNK_BYTES", 3)
    suite = load_suite([cases], [responses])
    (problem,) = [p for p in suite.problems if "a second response" in p.message]
    # the first line holding the id, as always (the whole-text reading gives the same)
    assert problem.location.line == 3
    lines = [p.location.line for p in load_suite([cases], [write_inputs(tmp_path, "pretty.json")[1]]).problems]
    assert lines == [PRETTY.splitlines().index('    "id": "zzz",') + 1]


def test_the_input_hash_is_that_of_the_files_bytes_read_once(tmp_path):
    cases, responses = write_inputs(tmp_path, "pretty.json")
    (tmp_path / "more.jsonl").write_text('{"id": "b"}\n', encoding="utf-8")
    suite = load_suite([cases], [responses, tmp_path / "more.jsonl"])
    hashes = {summary.path: summary.sha256 for summary in suite.inputs}
    assert hashes[str(cases)] == hashlib.sha256(cases.read_bytes()).hexdigest()
    assert hashes[str(responses)] == hashlib.sha256(responses.read_bytes()).hexdigest()


def test_a_json_lines_line_longer_than_a_chunk_is_read_whole(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"id": "a", "actual_answer": "x" * 10_000}) + "\n" + '{"id": "b"}', encoding="utf-8")
    monkeypatch.setattr(json_input, "CHUNK_BYTES", 100)
    streamed = json_input.stream_json_lines(path, hashlib.sha256())
    assert streamed is not None
    got = list(streamed)
    assert [(line.number, line.value["id"]) for line in got] == [(1, "a"), (2, "b")]
    assert len(got[0].value["actual_answer"]) == 10_000


# --- YAML: values, lines and problems as PyYAML builds them ----------------------------------------------------

YAML_TEXTS = {
    "plain": "a: 1\nb: [x, 'y', \"z\"]\nc:\n  d: {e: 2.5, f: null}\n  g: ~\n",
    "scalars": "- yes\n- no\n- 0x1F\n- 0o17\n- 1_000\n- .inf\n- -.NaN\n- 1e3\n- 2024-01-02\n- 2001-12-14t21:59:43.10-05:00\n",
    "tagged": "a: !!str 12\nb: !!float 3\nc: !!binary aGVsbG8=\n",
    "keys": "1: one\n01: again\n\"1\": text\nnull: nothing\n? 2024-01-02\n: a date\n",
    "empty": "a: ''\nb: []\nc: {}\nd:\n",
    "merge": "base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\n",
    "inline merge": "use:\n  <<: {x: 1}\n  y: 2\n",
    "set": "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\np: !!pairs [{a: 1}, {a: 2}]\n",
    "complex key": "? [a, b]\n: c\n",
    "value key": "a:\n  =: c\n",
    "custom tag": "a: !custom 1\n",
    "twice": "a: 1\nb: 2\na: 3\n",
    "huge int": "a: " + "9" * 5000 + "\n",
    "deep": "a: " + "[" * 1500 + "]" * 1500 + "\n",
    "long": "- " + "\n- ".join(f"{{id: c{i}, text: 'line {i}'}}" for i in range(300)) + "\n",
}


def constructed(text: str, *, offset: int = 10) -> tuple:
    loader = LineLoader(text, offset)
    try:
        node = loader.get_single_node()
        value = loader.construct_document(node)
        return value, [(p.line, p.message) for p in loader.problems]
    except yaml.YAMLError as error:
        return type(error).__name__, str(error)
    finally:
        loader.dispose()


def lines_of(value) -> list:
    """The value, with the lines each mapping and sequence remembers, as a flat list (a walk with
    a stack: the deepest text nests beyond Python's recursion limit)."""
    flat: list = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, LineDict):
            flat.append(("map", item.line, item.key_lines, list(item)))
            stack.extend(reversed(item.values()))
        elif isinstance(item, LineList):
            flat.append(("seq", item.line, item.item_lines, len(item)))
            stack.extend(reversed(item))
        elif isinstance(item, float) and math.isnan(item):
            flat.append("nan")
        else:
            flat.append((type(item).__name__, repr(item)))
    return flat


@pytest.mark.parametrize("name", sorted(set(YAML_TEXTS) - {"deep"}))
def test_the_reading_gives_the_values_lines_and_problems_pyyaml_builds(name):
    text = YAML_TEXTS[name]
    exp, exp_problems = constructed(text, offset=0)
    got = list(yaml_documents(text))
    if exp in ("ConstructorError", "ScannerError", "ParserError"):  # PyYAML refuses it: a lost text, told
        assert [(p.lost, p.message.startswith("invalid YAML")) for p in got] == [(True, True)]
        return
    assert [(p.line, p.message) for p in got if isinstance(p, YamlProblem)] == exp_problems
    documents = [d for d in got if not isinstance(d, YamlProblem)]
    if split_root_sequence(text) is None:
        assert [lines_of(d) for d in documents] == [lines_of(exp)]
    else:  # one single-item list per item: their items are the whole's, at the whole's lines
        assert lines_of(LineList([item for d in documents for item in d]))[1:] == lines_of(exp)[1:]


def test_a_yaml_text_nested_too_deep_in_brackets_is_refused_at_its_line():
    (problem,) = list(yaml_documents("x: 1\n" + YAML_TEXTS["deep"].replace("a:", "b:")))
    assert problem.lost and problem.line == 2 and "nested more than 100 levels" in problem.message


def test_block_collections_nested_too_deep_without_brackets_are_refused_at_the_first_too_deep():
    text = "a:\n" + "".join(f"{'  ' * level}- k{level}:\n" for level in range(60)) + "  " * 60 + "- end\n"
    (problem,) = list(yaml_documents(text))
    assert problem.lost and "nested more than 100 levels" in problem.message
    assert problem.line == 51  # the 101st collection: the list under key k49
    assert not any(isinstance(d, YamlProblem) for d in yaml_documents("a:\n" + text.split("\n", 1)[1][:2000]))


def _nested(style: str, depth: int) -> str:
    """Collections nested `depth` levels deep in the block style that takes the fewest columns."""
    if style == "mappings":  # a column a level
        return "".join(f"{' ' * level}k{level}:\n" for level in range(depth - 1)) + " " * (depth - 1) + "k: v\n"
    if style == "sequences in mappings":  # a list at its key's column, its items on the next line, one further
        pairs = depth // 2
        text = "".join(f"{' ' * level}k{level}:\n{' ' * level}-\n" for level in range(pairs))
        return text + " " * pairs + ("k: v\n" if depth % 2 else "v\n")
    if style == "compact sequences":  # `- - - v` on one line
        return "- " * depth + "v\n"
    return "[" * depth + "]" * depth + "\n"  # flow


@pytest.mark.parametrize("style", ["mappings", "sequences in mappings", "compact sequences", "flow"])
def test_nesting_past_the_limit_is_refused_in_every_block_style_and_up_to_it_is_read(style):
    deep, limit = list(yaml_documents(_nested(style, 101))), list(yaml_documents(_nested(style, 100)))
    assert len(deep) == 1 and isinstance(deep[0], YamlProblem) and "nested more than 100 levels" in deep[0].message
    assert limit and not any(isinstance(d, YamlProblem) for d in limit)


def test_a_test_case_file_is_read_item_by_item_with_lines_of_the_whole_file():
    text = "# cases\n" + CASE.format(id="a") + "# between\n" + CASE.format(id="b")
    documents = list(yaml_documents(text))
    assert [d[0]["id"] for d in documents] == ["a", "b"]
    assert [d.line for d in documents] == [2, 14]
    assert documents[1][0].key_lines["conversation"] == 16


QUOTED_BRACKETS = json.dumps({"head": {"vars": ["a"]}, "results": {"bindings": [{"a": {"value": str(i)}} for i in range(60)]}})


def template(number: int, questions: int) -> str:
    lines = [f"- template_id: t{number}", "  questions:"]
    for index in range(questions):
        lines += [f"  - id: t{number}q{index}", f"    question_text: question {index}",
                  "    reference_steps:", "    - - name: sparql_query",
                  f"        output: '{QUOTED_BRACKETS}'", "        required_columns: [a]"]
    return "\n".join(lines) + "\n"


def test_a_template_with_thousands_of_quoted_brackets_reads_as_pyyaml_reads_it():
    text = template(1, 40) + template(2, 3) + template(3, 40)
    exp = constructed(text, offset=0)[0]
    got = list(yaml_documents(text))  # one document per template
    assert text.count("{") > 4000 * 2  # each big template is checked for depth
    assert [document.line for document in got] == exp.item_lines
    assert lines_of(LineList([item for document in got for item in document]))[1:] == lines_of(exp)[1:]


def test_an_item_nested_too_deep_among_quoted_brackets_is_refused_at_the_same_line():
    deep = "  - id: deep\n    x: " + "[" * 150 + "]" * 150 + "\n"
    text = template(1, 40) + template(2, 40).replace("  questions:\n", "  questions:\n" + deep, 1)
    got = list(yaml_documents(text))
    assert [d[0]["template_id"] for d in got if not isinstance(d, YamlProblem)] == ["t1"]
    (problem,) = [d for d in got if isinstance(d, YamlProblem)]
    assert problem.line == text.splitlines().index(deep.splitlines()[1]) + 1 and problem.lost
    assert "nested more than 100 levels" in problem.message


def test_a_json_lines_file_is_parsed_as_its_records_are_asked_for(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{n}"}) + "\n" for n in range(3)), encoding="utf-8")
    digest = hashlib.sha256()
    streamed = json_input.stream_json_lines(path, digest)
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()  # checked and hashed first
    assert streamed is not None
    assert next(streamed).value == {"id": "q0"}  # a line at a time: the records are never all held at once
    assert [line.value["id"] for line in streamed] == ["q1", "q2"]


@pytest.mark.parametrize("text", [b"", b"  \n\t\n", b'{"id": "a"}\n\xff\n'])
def test_a_json_lines_file_blank_or_not_utf8_is_left_to_the_whole_reading_before_any_line_is_given(tmp_path, text):
    path = tmp_path / "r.jsonl"
    path.write_bytes(text)
    assert json_input.stream_json_lines(path, hashlib.sha256()) is None


def test_a_json_lines_file_changed_between_the_check_and_the_parse_is_told_not_raised(tmp_path, monkeypatch):
    monkeypatch.setattr(json_input, "CHUNK_BYTES", 12)  # a line a chunk: the first is read before the change shows
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}\n', encoding="utf-8")
    streamed = json_input.stream_json_lines(path, hashlib.sha256())
    assert streamed is not None
    path.write_bytes(b'{"id": "a"}\n\xff\xfe not text\n')  # rewritten in place after the check
    got = list(streamed)
    assert got[0].value == {"id": "a"}
    assert got[-1].value is json_input.UNREADABLE and "changed while it was read" in got[-1].problems[0][1]


def _conflicted(ours: str, theirs: str) -> str:
    return "<<<<<<< HEAD\n" + ours + "=======\n" + theirs + ">>>>>>> feature\n"


def test_a_merge_conflict_between_items_loses_only_the_items_inside_it(tmp_path):
    text = CASE.format(id="a") + _conflicted(CASE.format(id="b"), CASE.format(id="b2")) + CASE.format(id="c")
    (tmp_path / "cases.yaml").write_text(text)
    suite = load_suite([tmp_path / "cases.yaml"], [])
    assert [case.id for case in suite.cases] == ["a", "c"]
    assert suite.cases[1].location.line == text.splitlines().index("- id: c") + 1
    marker_line = text.splitlines().index("<<<<<<< HEAD") + 1
    conflicts = [p for p in suite.problems if "merge-conflict marker" in p.message]
    assert [(p.location.path, p.location.line) for p in conflicts] == [(str(tmp_path / "cases.yaml"), marker_line)] * 2
    assert sorted(u.case_id or "" for u in suite.unloaded) == ["b", "b2"]


def test_a_merge_conflict_inside_an_item_loses_that_item_alone_and_says_so():
    item = CASE.format(id="b").replace("  name: case b\n", _conflicted("  name: ours\n", "  name: theirs\n"))
    text = CASE.format(id="a") + item + CASE.format(id="c")
    got = list(yaml_documents(text))
    assert [d[0]["id"] for d in got if not isinstance(d, YamlProblem)] == ["a", "c"]
    (problem,) = [d for d in got if isinstance(d, YamlProblem)]
    assert problem.lost and problem.item_id == "b" and problem.line == text.splitlines().index("<<<<<<< HEAD") + 1
    assert problem.message.startswith("merge-conflict marker '<<<<<<<'")


def test_a_stray_line_between_items_loses_only_the_item_it_follows():
    text = CASE.format(id="a") + "oops this is not yaml\n" + CASE.format(id="b") + CASE.format(id="c")
    got = list(yaml_documents(text))
    assert [d[0]["id"] for d in got if not isinstance(d, YamlProblem)] == ["b", "c"]
    (problem,) = [d for d in got if isinstance(d, YamlProblem)]
    assert problem.lost and problem.item_id == "a" and "merge-conflict" not in problem.message


def test_a_merge_conflict_in_a_single_case_file_loses_the_file_and_names_the_marker():
    text = "id: a\n" + _conflicted("name: ours\n", "name: theirs\n")
    (problem,) = list(yaml_documents(text))
    assert problem.lost and problem.line == 2 and "merge-conflict marker" in problem.message


def _document(case_id: str) -> str:
    return f"id: {case_id}\nname: case {case_id}\n"


def test_a_merge_conflict_in_one_of_several_documents_loses_that_document_alone_and_says_so():
    conflicted = "id: b\n" + _conflicted("name: ours\n", "name: theirs\n")
    text = "---\n".join([_document("a"), conflicted, _document("c")])
    got = list(yaml_documents(text))
    assert [d["id"] for d in got if not isinstance(d, YamlProblem)] == ["a", "c"]
    (problem,) = [d for d in got if isinstance(d, YamlProblem)]
    assert problem.lost and problem.item_id == "b" and problem.line == text.splitlines().index("<<<<<<< HEAD") + 1
    assert problem.message.startswith("merge-conflict marker '<<<<<<<'")
    assert [d.line for d in got if not isinstance(d, YamlProblem)][-1] == text.splitlines().index("id: c") + 1


def test_a_syntax_error_in_one_of_several_documents_loses_that_document_alone():
    text = "---\n".join([_document("a"), _document("b") + "name: [unclosed\n", _document("c")])
    got = list(yaml_documents(text))
    assert [d["id"] for d in got if not isinstance(d, YamlProblem)] == ["a", "c"]
    (problem,) = [d for d in got if isinstance(d, YamlProblem)]
    assert problem.lost and problem.item_id == "b" and "merge-conflict" not in problem.message


def test_a_file_without_a_conflict_or_a_syntax_error_is_read_as_before():
    text = CASE.format(id="a") + "---\n" + CASE.format(id="b")  # two documents: read whole, both kept
    got = list(yaml_documents(text))
    assert not any(isinstance(d, YamlProblem) for d in got) and len(got) == 2


def test_a_broken_top_level_mapping_is_never_read_as_its_own_items():
    text = "id: a\nconversation:\n- role: user\n  content: x\noops: [\n"
    got = list(yaml_documents(text))
    assert len(got) == 1 and isinstance(got[0], YamlProblem) and got[0].lost and got[0].item_id is None
