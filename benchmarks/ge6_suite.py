"""Generate Q&A suites that exercise graphrag-eval 6.x's steps rules, deterministic from a seed.

    python benchmarks/ge6_suite.py OUTDIR --questions 300 --seed 11

writes OUTDIR/testcases/qa.yaml (a reference Q&A dataset) and OUTDIR/responses/responses.json (a
mapping from question id to response, as graphrag-eval 6.x takes them).

Each question has one to three groups of reference steps drawn from every kind 6.6 knows:
SPARQL results (`sparql_query`, and the same media type under another name, which 6.x compares
as text), JSON outputs, retrieval (also with an empty reference output), plain text, lookups,
`retrieve_time_series`, `retrieve_data_points` and `iri_discovery`. The responses call them in
order, out of order, under other names, with failed calls first, with near misses and with the
traps of the new kinds: a time 61-120 s off a relative reference time (outside the ±60 s
tolerance), equivalent and non-equivalent granularity spellings (`1h` = `1hours`, `60m` is not),
relative against relative and absolute times, ids as a string or a list in any order, and the IRI
in a `uri` binding, in a literal binding, in a SPARQL output or nowhere. About 8% are error
responses (half of them still carrying steps) and 3% have no `actual_steps`.

Every input is one graphrag-eval 6.6 accepts, once `ge6_inputs` has turned the ISO 8601
`execution_timestamp` strings into datetimes (6.6 reads it as a datetime, which a YAML parser
makes of an unquoted timestamp; qareport reads the string).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml
from dateutil import parser as date_parser

SPARQL = "application/sparql-results+json"
JSON = "application/json"
XSD = "http://www.w3.org/2001/XMLSchema#"
QUESTIONS_PER_TEMPLATE = 6
NAMES = ["ARENDAL", "BLAFALLI", "STAVANGER", "KVILLDAL", "SANDEFJORD", "HALDEN", "OSLO", "ASKER", "SKIEN", "TRETTEN"]
KINDS = ("sparql", "sparql_other_name", "json", "retrieval", "retrieval_empty", "text", "lookup",
         "time_series", "data_points", "iri")
ANCHOR = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def generate_ge6_suite(questions: int, seed: int) -> tuple[list[dict], dict[str, dict]]:
    """(reference Q&A dataset, responses keyed by question id)."""
    rng = random.Random(seed)
    templates: list[dict] = []
    responses: dict[str, dict] = {}
    for number in range(questions):
        if number % QUESTIONS_PER_TEMPLATE == 0:
            templates.append({"template_id": f"ge6_template_{len(templates):03d}", "questions": []})
        question_id = f"q{number:05d}_{rng.getrandbits(32):08x}"
        groups = [[_reference_step(rng, rng.choice(KINDS)) for _ in range(rng.choice([1, 1, 2, 3]))]
                  for _ in range(rng.choice([1, 2, 2, 3]))]
        question = {
            "id": question_id,
            "question_text": f"Question {number} about {rng.choice(NAMES)}",
            "reference_answer": ", ".join(sorted(set(rng.sample(NAMES, 2)))),
            "reference_steps": [[step for step, _ in group] for group in groups],
        }
        templates[-1]["questions"].append(question)
        responses[question_id] = _response(rng, question_id, groups)
    return templates, responses


def ge6_inputs(reference_qas: list[dict], responses: dict[str, dict]) -> tuple[list[dict], dict[str, dict]]:
    """Deep copies for graphrag-eval 6.6: `execution_timestamp` as a datetime."""
    copied = copy.deepcopy(responses)
    for response in copied.values():
        for step in response.get("actual_steps", []):
            if isinstance(step.get("execution_timestamp"), str):
                step["execution_timestamp"] = date_parser.isoparse(step["execution_timestamp"])
    return copy.deepcopy(reference_qas), copied


def write_suite(outdir: Path, questions: int, seed: int) -> tuple[Path, Path]:
    templates, responses = generate_ge6_suite(questions, seed)
    testcases = outdir / "testcases" / "qa.yaml"
    responses_path = outdir / "responses" / "responses.json"
    testcases.parent.mkdir(parents=True, exist_ok=True)
    responses_path.parent.mkdir(parents=True, exist_ok=True)
    testcases.write_text(yaml.safe_dump(templates, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
    responses_path.write_text(json.dumps(responses, ensure_ascii=False, indent=1), encoding="utf-8")
    return testcases, responses_path


# --- reference steps -------------------------------------------------------------------------------


def _table(rng: random.Random, variables: list[str], rows: int) -> dict:
    bindings = []
    for _ in range(rows):
        row = {}
        for variable in variables:
            if variable == "count":
                row[variable] = {"type": "literal", "datatype": XSD + "integer", "value": str(rng.randint(0, 9))}
            elif variable == "iri":
                row[variable] = {"type": "uri", "value": f"urn:uuid:{rng.getrandbits(40):010x}"}
            else:
                row[variable] = {"type": "literal", "value": f"{rng.choice(NAMES)} T{rng.randint(1, 4)}"}
        bindings.append(row)
    return {"head": {"vars": variables}, "results": {"bindings": bindings}}


def _docs(rng: random.Random, count: int) -> list[dict]:
    return [{"id": f"http://example.com/doc/{rng.randint(1, 60)}", "text": f"About {rng.choice(NAMES)}."}
            for _ in range(count)]


def _reference_step(rng: random.Random, kind: str) -> tuple[dict, dict]:
    plan: dict[str, Any] = {"kind": kind}
    if kind in ("sparql", "sparql_other_name"):
        required = rng.sample(["iri", "name", "count"], rng.randint(1, 2))
        table = _table(rng, required + rng.sample(["extra"], rng.randint(0, 1)), rng.randint(1, 4))
        step = {"name": "sparql_query" if kind == "sparql" else "sparql", "args": {"query": "SELECT ..."},
                "output": json.dumps(table), "output_media_type": SPARQL, "required_columns": required}
        if rng.random() < 0.2:
            step["ordered"] = True
        plan.update(table=table, required=required)
    elif kind == "json":
        value = {"unit": rng.choice(["kV", "MW"]), "limit": rng.randint(1, 50)}
        step = {"name": "get_settings", "args": {}, "output": json.dumps(value), "output_media_type": JSON}
        plan["value"] = value
    elif kind == "retrieval":
        documents = _docs(rng, rng.randint(1, 4))
        step = {"name": "retrieval", "args": {"query": "q", "k": len(documents)}, "output": json.dumps(documents)}
        plan["documents"] = documents
    elif kind == "retrieval_empty":
        step = {"name": "retrieval", "args": {"query": "q", "k": 3}, "output": ""}
    elif kind == "text":
        step = {"name": "now", "args": {}, "output": f"2024-05-{rng.randint(10, 28)}T10:00:00"}
    elif kind == "lookup":
        table = _table(rng, ["iri", "name"], rng.randint(1, 2))
        step = {"name": "autocomplete_search", "args": {"query": rng.choice(NAMES)}, "output": json.dumps(table),
                "output_media_type": SPARQL, "required_columns": ["iri"]}
    elif kind == "time_series":
        mrid = rng.choice([None, f"mrid-{rng.randint(1, 9)}", [f"mrid-{rng.randint(1, 9)}", f"mrid-{rng.randint(10, 19)}"]])
        args: dict[str, Any] = {}
        if mrid is not None:
            args["mrid"] = mrid
        if rng.random() < 0.6:
            args["limit"] = rng.choice([10, 100])
        step = {"name": "retrieve_time_series", "args": args, "output": "series"}
    elif kind == "data_points":
        args = {
            "external_id": rng.choice([f"ts-{rng.randint(1, 9)}", [f"ts-{rng.randint(1, 9)}", f"ts-{rng.randint(10, 19)}"]]),
            "granularity": rng.choice(["1h", "1hour", "15m", "1d", None]),
            "aggregates": rng.choice([None, "average", ["min", "max"]]),
            "start": rng.choice(["3d-ago", "24h-ago", "90m-ago", "now", "2025-02-27T12:00:00Z", "1w-ago"]),
            "end": rng.choice([None, "now", "2025-03-01T12:00:00+00:00", "30s-ahead"]),
        }
        if rng.random() < 0.4:
            args["limit"] = rng.choice([100, 1000])
        step = {"name": "retrieve_data_points", "args": {k: v for k, v in args.items() if v is not None},
                "output": "points"}
    else:  # iri
        iri = f"urn:uuid:{rng.getrandbits(40):010x}"
        step = {"name": "iri_discovery", "args": {"query": rng.choice(NAMES)}, "output": iri}
        plan["iri"] = iri
    plan["step"] = step
    return step, plan


# --- responses -------------------------------------------------------------------------------------


def _response(rng: random.Random, question_id: str, groups: list[list[tuple[dict, dict]]]) -> dict:
    calls: list[dict] = []

    def call(name: str, output: Any, *, args: dict | None = None, failed: bool = False, **extra: Any) -> None:
        step: dict[str, Any] = {"name": name, "args": args if args is not None else {},
                                "id": f"call_{len(calls)}_{rng.getrandbits(24):06x}"}
        if failed:
            step.update(status="error", error=rng.choice(["Error: 429 Too Many Requests", "Error: timeout"]))
        else:
            step.update(status="success", output=output)
        step.update(extra)
        calls.append(step)

    postponed: list[tuple[dict, dict]] = []
    for group in groups:
        order = list(group)
        rng.shuffle(order)
        for step, plan in order:
            fate = rng.random()
            if fate < 0.1:
                continue  # not called
            if fate < 0.15:
                postponed.append((step, plan))  # called, but after the later groups: out of order
                continue
            if rng.random() < 0.15:
                call(step["name"], None, args=step.get("args"), failed=True)
            _actual_calls(rng, call, step, plan)
        if rng.random() < 0.2:
            call("now", "2024-05-21T10:00:00")
    for step, plan in postponed:
        _actual_calls(rng, call, step, plan)
    response: dict[str, Any] = {
        "question_id": question_id,
        "input_tokens": rng.randint(1000, 9000),
        "output_tokens": rng.randint(10, 900),
        "total_tokens": 0,
        "elapsed_sec": round(rng.uniform(1, 30), 3),
        "actual_answer": "An answer.",
        "actual_steps": calls,
    }
    response["total_tokens"] = response["input_tokens"] + response["output_tokens"]
    fate = rng.random()
    if fate < 0.04:
        response = {"question_id": question_id, "status": "error", "error": "Error: the agent gave up"}
    elif fate < 0.08:
        response.update(status="error", error="Error: the agent stopped after its steps")
        del response["actual_answer"]
    elif fate < 0.11:
        del response["actual_steps"]
    return response


def _actual_calls(rng: random.Random, call: Any, step: dict, plan: dict) -> None:
    kind = plan["kind"]
    if kind in ("sparql", "sparql_other_name"):
        table = copy.deepcopy(plan["table"])
        roll = rng.random()
        if roll < 0.15:
            table["results"]["bindings"][0][plan["required"][0]] = {"type": "literal", "value": "WRONG"}
        elif roll < 0.25:
            call(step["name"], "@prefix ex: <http://example.com/> .\nex:a ex:b ex:c .", args=step["args"])
            return
        if rng.random() < 0.5:
            rng.shuffle(table["head"]["vars"])
            if not step.get("ordered"):
                rng.shuffle(table["results"]["bindings"])
        if kind == "sparql_other_name" and rng.random() < 0.5:
            call("sparql", step["output"], args=step["args"])  # the same text: equal under 6.x
            return
        call(step["name"], json.dumps(table, indent=rng.choice([None, 2])), args=step["args"])
    elif kind == "json":
        value = dict(plan["value"])
        if rng.random() < 0.25:
            value["limit"] += 1
        name = step["name"] if rng.random() < 0.7 else "read_settings"
        if rng.random() < 0.3:
            call(name, step["output"])  # the reference text itself: also equal as text
        else:
            call(name, json.dumps(dict(reversed(list(value.items()))), indent=2))
    elif kind == "retrieval":
        documents = [d for d in plan["documents"] if rng.random() < 0.75] + _docs(rng, rng.randint(0, 2))
        rng.shuffle(documents)
        call("retrieval", json.dumps(documents), args={"query": "q", "k": max(len(documents), 1)})
    elif kind == "retrieval_empty":
        output = "[]" if rng.random() < 0.4 else json.dumps(_docs(rng, 2))  # never equal to ""
        call("retrieval", output, args={"query": "q", "k": 2})
    elif kind == "text":
        name = "now" if rng.random() < 0.8 else "clock"
        call(name, step["output"] if rng.random() < 0.7 else "2024-01-01T00:00:00")
    elif kind == "lookup":
        call("autocomplete_search", step["output"] if rng.random() < 0.8 else json.dumps(_table(rng, ["iri", "name"], 1)),
             args=step["args"])
    elif kind == "time_series":
        call("retrieve_time_series", "series data", args=_time_series_args(rng, step["args"]))
    elif kind == "data_points":
        anchor = ANCHOR + timedelta(seconds=rng.randint(0, 86400))
        stamp = anchor.isoformat().replace("+00:00", rng.choice(["Z", "+00:00"]))
        call("retrieve_data_points", "data points", args=_data_points_args(rng, step["args"], anchor),
             execution_timestamp=stamp)
    else:
        _iri_calls(rng, call, plan["iri"])


def _time_series_args(rng: random.Random, args: dict) -> dict:
    got = copy.deepcopy(args)
    roll = rng.random()
    mrid = got.get("mrid")
    if roll < 0.2 and isinstance(mrid, list):
        got["mrid"] = list(reversed(mrid))  # any order
    elif roll < 0.35 and isinstance(mrid, str):
        got["mrid"] = [mrid]  # a one-element list is the string
    elif roll < 0.5:
        got["mrid"] = "mrid-99"
    elif roll < 0.6 and "limit" in got:
        got["limit"] = got["limit"] + 1
    elif roll < 0.7 and "limit" not in got:
        got["limit"] = 10
    return got


GRANULARITY_SPELLINGS = {"1h": ["1h", "1hours", "1hour", "1H", "60m"], "1hour": ["1h", "1hours", "2h"],
                         "15m": ["15m", "15minutes", "15min"], "1d": ["1d", "1days", "24h"]}


def _data_points_args(rng: random.Random, args: dict, anchor: datetime) -> dict:
    got = copy.deepcopy(args)
    if isinstance(got["external_id"], str) and rng.random() < 0.3:
        got["external_id"] = [got["external_id"]]
    elif isinstance(got["external_id"], list) and rng.random() < 0.3:
        got["external_id"] = list(reversed(got["external_id"]))
    if "granularity" in got and rng.random() < 0.6:
        got["granularity"] = rng.choice(GRANULARITY_SPELLINGS[got["granularity"]])
    if isinstance(got.get("aggregates"), list) and rng.random() < 0.5:
        got["aggregates"] = list(reversed(got["aggregates"]))
    for key in ("start", "end"):
        if key in got and rng.random() < 0.8:
            got[key] = _actual_time(rng, got[key], anchor)
    if rng.random() < 0.1:
        got["limit"] = 5
    return got


RELATIVE_SECONDS = {"3d-ago": -3 * 86400, "24h-ago": -86400, "90m-ago": -5400, "now": 0, "1w-ago": -7 * 86400,
                    "30s-ahead": 30}
EQUIVALENT_RELATIVE = {"3d-ago": "72h-ago", "24h-ago": "1d-ago", "90m-ago": "5400s-ago", "now": "0s-ago",
                       "1w-ago": "7d-ago", "30s-ahead": "30s-ahead"}


def _actual_time(rng: random.Random, reference: str, anchor: datetime) -> str:
    if reference in RELATIVE_SECONDS:
        roll = rng.random()
        if roll < 0.25:
            return EQUIVALENT_RELATIVE[reference]  # relative against relative: the same instant
        offset = rng.choice([0, 15, -59, 60, -60, 61, -75, 120]) if roll < 0.85 else rng.choice([3600, -86400])
        moment = anchor + timedelta(seconds=RELATIVE_SECONDS[reference] + offset)
        return moment.isoformat().replace("+00:00", rng.choice(["Z", "+00:00"]))
    if rng.random() < 0.3:
        return "now"  # an absolute reference time never equals a relative actual time
    moment = date_parser.isoparse(reference) + timedelta(seconds=rng.choice([0, 0, 30]))
    return moment.astimezone(timezone(timedelta(hours=rng.choice([0, 1])))).isoformat()


def _iri_calls(rng: random.Random, call: Any, iri: str) -> None:
    roll = rng.random()
    other = f"urn:uuid:{rng.getrandbits(40):010x}"
    if roll < 0.35:
        value = {"type": "uri", "value": iri}  # found
    elif roll < 0.55:
        value = {"type": "literal", "value": iri}  # the wrong binding: a literal
    elif roll < 0.7:
        call("sparql_query", json.dumps({"head": {"vars": ["s"]}, "results": {"bindings": [
            {"s": {"type": "uri", "value": iri}}]}}), args={"query": f"SELECT ?s WHERE {{ BIND(<{iri}> AS ?s) }}"})
        return
    elif roll < 0.8:
        call("lookup_entity", json.dumps({"iri": iri}))  # another tool: cannot discover
        return
    else:
        value = {"type": "uri", "value": other}  # not found
    result = {"head": {"vars": ["iri", "name"]}, "results": {"bindings": [
        {"iri": value, "name": {"type": "literal", "value": rng.choice(NAMES)}}]}}
    call("autocomplete_search", json.dumps(result), args={"query": "x"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    testcases, responses = write_suite(args.outdir, args.questions, args.seed)
    print(f"wrote {testcases} and {responses}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


# --- the traps, one question each -------------------------------------------------------------------

STAMP = "2025-03-01T12:00:00Z"  # the execution_timestamp of every traps' data-points call


def _points(start: Any = "3d-ago", end: Any = None, granularity: str = "1h", **extra: Any) -> dict:
    args = {"external_id": "ts-1", "granularity": granularity, "aggregates": ["min", "max"], "start": start}
    if end is not None:
        args["end"] = end
    return {**args, **extra}


def _sparql_output(value: str) -> str:
    return json.dumps({"head": {"vars": ["s"]}, "results": {"bindings": [{"s": {"type": "uri", "value": value}}]}})


def trap_suite() -> tuple[list[dict], dict[str, dict]]:
    """Hand-made questions, one per rule of 6.6 that is easy to get wrong; the id says which, the
    text what 6.6 scores (the tests assert those scores and compare them with 6.6 itself)."""
    iri = "urn:uuid:0000000000-iri"
    table = {"head": {"vars": ["s", "n"]}, "results": {"bindings": [
        {"s": {"type": "uri", "value": "urn:a"}, "n": {"type": "literal", "value": "A"}}]}}
    reformatted = json.dumps(table, indent=2)
    points = {"name": "retrieve_data_points", "output": "points"}
    cases: list[tuple[str, str, list[list[dict]], dict]] = []

    def case(question_id: str, text: str, groups: list[list[dict]], *steps: dict, **response: Any) -> None:
        record = {"question_id": question_id, "input_tokens": 10, "output_tokens": 2, "total_tokens": 12,
                  "elapsed_sec": 1.5, "actual_answer": "An answer.", "actual_steps": list(steps), **response}
        # each question its own step objects (graphrag-eval writes `matches` into them)
        cases.append((question_id, text, copy.deepcopy(groups), {k: v for k, v in record.items() if v is not None}))

    def call(name: str, output: Any, call_id: str, **extra: Any) -> dict:
        return {"name": name, "args": extra.pop("args", {}), "id": call_id, "status": "success", "output": output,
                **extra}

    def points_call(call_id: str, **args: Any) -> dict:
        return call("retrieve_data_points", "data", call_id, args=_points(**args), execution_timestamp=STAMP)

    reference_points = [[{**points, "args": _points()}]]
    case("dp_near_miss", "61 s after 3d-ago: outside the ±60 s tolerance, 0.0", reference_points,
         points_call("c1", start="2025-02-26T12:01:01Z"))
    case("dp_within_tolerance", "60 s after 3d-ago: within the tolerance, 1.0", reference_points,
         points_call("c1", start="2025-02-26T12:01:00+00:00"))
    case("dp_granularity_spelling", "1hours is 1h, 1.0", reference_points,
         points_call("c1", start="2025-02-26T12:00:00Z", granularity="1hours"))
    case("dp_granularity_60m", "60m is not 1h, 0.0", reference_points,
         points_call("c1", start="2025-02-26T12:00:00Z", granularity="60m"))
    case("dp_relative_both", "72h-ago is 3d-ago, 1.0", reference_points, points_call("c1", start="72h-ago"))
    case("dp_absolute_vs_relative", "an absolute reference time never equals a relative one, 0.0",
         [[{**points, "args": _points(start="2025-02-26T12:00:00Z")}]], points_call("c1", start="3d-ago"))
    case("dp_now_end", "now is the execution time; 30 s off is within the tolerance, 1.0",
         [[{**points, "args": _points(end="now")}]],
         points_call("c1", start="2025-02-26T12:00:00Z", end="2025-03-01T12:00:30Z"))
    case("ts_mrid_string_vs_list", "an id and a one-id list are the same, 1.0",
         [[{"name": "retrieve_time_series", "args": {"mrid": "m1", "limit": 10}, "output": "s"}]],
         call("retrieve_time_series", "series", "c1", args={"mrid": ["m1"], "limit": 10}))
    case("ts_limit_differs", "another limit, 0.0",
         [[{"name": "retrieve_time_series", "args": {"mrid": ["m1", "m2"], "limit": 10}, "output": "s"}]],
         call("retrieve_time_series", "series", "c1", args={"mrid": ["m2", "m1"], "limit": 20}))
    iri_step = [[{"name": "iri_discovery", "args": {"query": "OSLO"}, "output": iri}]]
    case("iri_uri_binding", "the IRI in a uri binding of autocomplete_search, 1.0", iri_step,
         call("autocomplete_search", _sparql_output(iri), "c1"))
    case("iri_literal_binding", "the IRI in a literal binding: the wrong binding, 0.0", iri_step,
         call("autocomplete_search", json.dumps({"head": {"vars": ["s"]}, "results": {"bindings": [
             {"s": {"type": "literal", "value": iri}}]}}), "c1"))
    case("iri_in_sparql_output", "the IRI anywhere in a sparql_query output, 1.0", iri_step,
         call("sparql_query", f"SELECT ... <{iri}> ...", "c1"))
    case("iri_other_tool", "another tool cannot discover it, 0.0", iri_step, call("lookup", iri, "c1"))
    now_step = [[{"name": "now", "output": "noon"}]]
    case("error_with_steps", "an error response is scored on the steps it carries, 1.0", now_step,
         call("now", "noon", "c1"), status="error", error="Error: stopped")
    case("error_without_steps", "an error response without steps scores 0.0", now_step,
         status="error", error="Error: stopped", actual_steps=None)
    case("no_actual_steps", "a response without actual_steps scores 0.0", now_step, actual_steps=None)
    sparql_other = [[{"name": "sparql", "output": json.dumps(table), "output_media_type": SPARQL,
                      "required_columns": ["s"]}]]
    case("sparql_other_name_reformatted", "not named sparql_query: compared as text, 0.0", sparql_other,
         call("sparql", reformatted, "c1"))
    case("sparql_other_name_same_text", "not named sparql_query: the same text, 1.0", sparql_other,
         call("sparql", json.dumps(table), "c1"))
    json_step = [[{"name": "get_settings", "output": '{"a": 1, "b": 2}', "output_media_type": JSON}]]
    case("json_same_name", "the same name: compared as JSON, 1.0", json_step, call("get_settings", '{"b": 2, "a": 1.0}', "c1"))
    case("json_other_name", "another name: compared as text, 0.0", json_step, call("read_settings", '{"b": 2, "a": 1}', "c1"))
    case("retrieval_empty_reference", "an empty reference output is not a retrieval comparison, 0.0",
         [[{"name": "retrieval", "output": ""}]], call("retrieval", "[]", "c1", args={"k": 3}))
    a, b, c = ({"name": name, "output": name.upper()} for name in ("lookup", "search", "answer"))
    case("multi_group_stop", "group 2 unmatched: group 1 is not tried, (0 + 0 + 1) / 3", [[a], [b], [c]],
         call("lookup", "LOOKUP", "c1"), call("search", "wrong", "c2"), call("answer", "ANSWER", "c3"))
    case("multi_group_order", "group 1 called after group 2's match: not matched, (0 + 1) / 2", [[a], [b]],
         call("search", "SEARCH", "c1"), call("lookup", "LOOKUP", "c2"))
    case("cross_name_exact", "6.x compares calls of any name: the same text matches, 1.0", now_step,
         call("clock", "noon", "c1"))
    qa_dataset = [{"template_id": "traps", "questions": [
        {"id": question_id, "question_text": text, "reference_steps": groups}
        for question_id, text, groups, _ in cases]}]
    return qa_dataset, {question_id: response for question_id, _, _, response in cases}


# --- recording and comparing results --------------------------------------------------------------


def with_custom_outputs(results: list[dict], seed: int) -> list[dict]:
    """The results with custom metric outputs (numbers, booleans, text, nulls, errors), as a judge
    might have given them for `CUSTOM_CONFIG`'s evaluations."""
    rng = random.Random(seed)
    samples = []
    for result in results:
        sample = dict(result)
        roll = rng.random()
        if roll < 0.1:
            sample.update(sparql_recall=None, sparql_reason=None, sparql_check_error="Expected 2 values, got: x")
        else:
            sample.update(sparql_recall=rng.choice([0, 1, 0.5, round(rng.random(), 3), True]),
                          sparql_reason=rng.choice(["fine", "misses a row"]))
        if roll > 0.05:
            sample["tone_score"] = rng.choice([round(rng.random(), 2), "n/a", 1])
        samples.append(sample)
    return samples


CUSTOM_CONFIG = """\
llm:
  generation: {provider: openai, model: gpt-4o-mini, temperature: 0.0}
custom_evaluations:
  - name: sparql_check
    inputs: [question, reference_answer, actual_steps]
    steps_name: sparql_query
    steps_keys: [output]
    instructions: Compare the SPARQL results with the reference answer.
    outputs:
      sparql_recall: a fraction from 0 to 1
      sparql_reason: why
  - name: tone
    inputs: [actual_answer]
    instructions: Rate the tone.
    outputs:
      tone_score: a fraction from 0 to 1
"""


def compact_result(result: dict) -> dict:
    """A result as the recorded file keeps it: every key in order, the reference steps reduced to
    their `matches` and the actual steps (the input's, unchanged without an LLM) to their count."""
    compact = {}
    for key, value in result.items():
        if key == "reference_steps" and isinstance(value, list):
            value = [[step.get("matches") for step in group] for group in value]
        elif key == "actual_steps" and isinstance(value, list):
            value = len(value)
        compact[key] = value
    return compact


def inputs_digest(qa_dataset: list[dict], responses: dict) -> str:
    """A fingerprint of a dataset, to tell a recording from a changed generator."""
    import hashlib

    text = json.dumps([qa_dataset, responses], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
