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
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml
from dateutil import parser as date_parser

SPARQL = "application/sparql-results+json"
JSON = "application/json"
XSD = "http://www.w3.org/2001/XMLSchema#"
QUESTIONS_PER_TEMPLATE = 6
NAMES = "ARENDAL BLAFALLI STAVANGER KVILLDAL SANDEFJORD HALDEN OSLO ASKER SKIEN TRETTEN".split()
KINDS = ("sparql", "sparql_other_name", "json", "retrieval", "retrieval_empty", "text", "lookup",
         "time_series", "data_points", "iri")
ANCHOR = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


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
