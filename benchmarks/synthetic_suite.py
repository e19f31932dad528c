"""Generate a synthetic Q&A suite in graphrag-eval 5.x's formats, deterministic from a seed.

    python benchmarks/synthetic_suite.py OUTDIR --questions 2000 --seed 7

writes

    OUTDIR/testcases/qa.yaml            reference Q&A dataset: a list of templates
    OUTDIR/responses/responses.json     a list of response records

Each question's last reference group holds some of: a SPARQL SELECT step (2-5 required columns of
URIs, names, xsd integers / doubles / booleans, tens of rows; sometimes ordered, sometimes
counting duplicates), an ASK step, a retrieval step (`k` documents) and an application/json step.
Earlier groups hold lookups that scoring ignores. Responses mix outputs that match exactly, with
permuted and renamed columns, with extra columns, shuffled rows and doubles written with more
decimals; outputs that match partially or not at all (a row missing, a cell changed); failed tool
calls before a successful one; a right answer followed by a later wrong one (scoring tries the
latest call first); noise steps; and about 5% error-form responses.

Every input is one graphrag-eval 5.2 accepts (a successful step always has an output, every
response has its token counts), so the suite can be run through both tools.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

import yaml

XSD = "http://www.w3.org/2001/XMLSchema#"
ERROR_SHARE = 0.05
QUESTIONS_PER_TEMPLATE = 10

_NAMES = ["ARENDAL", "BLAFALLI", "STAVANGER", "KVILLDAL", "SANDEFJORD", "KRISTIANSAND", "HALDEN", "KONGSBERG", "SYLLING", "OSLO", "ASKER", "SYSLE", "SKIEN", "TRETTEN", "DAGALI", "HAGAFOSS", "AURLAND", "SIMA", "BERGEN", "TRONDHEIM"]


WIDTHS = {
    # SPARQL SELECT results: (fewest, most) required columns, (fewest, most) rows
    "wide": ((2, 5), (10, 60)),  # listing questions: every column and row costs graphrag-eval dearly
    "ordinary": ((1, 2), (1, 5)),  # the common question: one or two values, a few rows
    "seed": ((2, 2), (1, 16)),  # as the seed README's examples: 2 required columns, 2-4 in the answer
}
EXTRA_COLUMNS = {"seed": (0, 1, 2)}
"""How many columns an answer adds beyond the reference's (default 0, 0, 1, 2 or 3, plus an optional
reference column); the seed's answers hold 2 to 4 columns in all."""
_widths = WIDTHS["wide"]
_extra_columns: tuple[int, ...] | None = None


def generate_suite(questions: int, seed: int, *, widths: str = "wide") -> tuple[list[dict], list[dict]]:
    """(reference Q&A dataset, response records) for `questions` questions; `widths` chooses the
    size of the SPARQL results (`WIDTHS`)."""
    global _widths, _extra_columns
    _widths = WIDTHS[widths]
    _extra_columns = EXTRA_COLUMNS.get(widths)
    rng = random.Random(seed)
    templates: list[dict] = []
    responses: list[dict] = []
    for number in range(questions):
        if number % QUESTIONS_PER_TEMPLATE == 0:
            template = {"template_id": f"synthetic_template_{len(templates):04d}", "questions": []}
            templates.append(template)
        question_id = f"{rng.getrandbits(128):032x}"
        question, steps_plan = _question(rng, question_id, number)
        template["questions"].append(question)
        responses.append(_response(rng, question_id, question, steps_plan))
    return templates, responses


def write_suite(outdir: Path, questions: int, seed: int) -> tuple[Path, Path]:
    """Write the suite under `outdir`; returns the paths of the test-case and responses files."""
    templates, responses = generate_suite(questions, seed)
    testcases = outdir / "testcases" / "qa.yaml"
    responses_path = outdir / "responses" / "responses.json"
    testcases.parent.mkdir(parents=True, exist_ok=True)
    responses_path.parent.mkdir(parents=True, exist_ok=True)
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    with testcases.open("w", encoding="utf-8") as stream:
        yaml.dump(templates, stream, Dumper=dumper, sort_keys=False, allow_unicode=True, width=120)
    with responses_path.open("w", encoding="utf-8") as stream:
        json.dump(responses, stream, ensure_ascii=False)
    return testcases, responses_path


# --- reference side ------------------------------------------------------------------------------


def _question(rng: random.Random, question_id: str, number: int) -> tuple[dict, list[dict]]:
    kinds = rng.choice(
        [["sparql"], ["sparql"], ["sparql", "retrieval"], ["retrieval"], ["sparql", "json"], ["json"],
         ["sparql", "sparql"], ["ask"], ["sparql", "retrieval", "json"]]
    )
    last_group = [_reference_step(rng, kind) for kind in kinds]
    lookup = {
        "name": "autocomplete_search",
        "args": {"query": rng.choice(_NAMES), "result_class": "cim:Substation"},
        "output": json.dumps(_table(rng, ["iri", "name"], rng.randint(1, 3))),
        "output_media_type": "application/sparql-results+json",
        "required_columns": ["iri"],
    }
    answer_names = sorted({rng.choice(_NAMES) for _ in range(3)})
    question = {
        "id": question_id,
        "question_text": f"Synthetic question {number}: list the items related to {rng.choice(_NAMES)}",
        "reference_answer": ", ".join(answer_names),
        "reference_steps": [[lookup], [step for step, _ in last_group]],
    }
    return question, [plan for _, plan in last_group]


def _reference_step(rng: random.Random, kind: str) -> tuple[dict, dict]:
    if kind == "sparql":
        (fewest_columns, most_columns), (fewest_rows, most_rows) = _widths
        required = rng.sample(["item", "name", "count", "ratio", "active", "code"],
                              rng.randint(fewest_columns, most_columns))
        optional = [f"extra{i}" for i in range(rng.randint(0, 1) if _extra_columns is None else 0)]
        variables = required + optional
        table = _table(rng, variables, rng.randint(fewest_rows, most_rows))
        step = {
            "name": "sparql_query",
            "args": {"query": "SELECT " + " ".join(f"?{v}" for v in variables) + " WHERE { ... }"},
            "output": json.dumps(table),
            "output_media_type": "application/sparql-results+json",
            "required_columns": required,
        }
        if rng.random() < 0.2:
            step["ordered"] = True
        if rng.random() < 0.15:
            step["ignore_duplicates"] = False
        return step, {"kind": kind, "table": table, "required": required, "step": step}
    if kind == "ask":
        value = rng.random() < 0.5
        step = {
            "name": "sparql_query",
            "args": {"query": "ASK { ... }"},
            "output": json.dumps({"head": {}, "boolean": value}),
            "output_media_type": "application/sparql-results+json",
            "required_columns": [],
        }
        return step, {"kind": kind, "value": value, "step": step}
    if kind == "retrieval":
        documents = [
            {
                "id": f"http://example.com/resource/doc/{rng.randint(1, 400)}",
                "text": f"Document about {rng.choice(_NAMES)}.",
            }
            for _ in range(rng.randint(2, 5))
        ]
        step = {
            "name": "retrieval",
            "args": {"query": "synthetic retrieval", "k": len(documents)},
            "output": json.dumps(documents, indent=2),
        }
        return step, {"kind": kind, "documents": documents, "step": step}
    value = {"unit": rng.choice(["kV", "MW"]), "limit": rng.randint(1, 500), "regions": rng.sample(_NAMES, 3)}
    step = {
        "name": "get_settings",
        "args": {"scope": "grid"},
        "output": json.dumps(value),
        "output_media_type": "application/json",
    }
    return step, {"kind": kind, "value": value, "step": step}


def _table(rng: random.Random, variables: list[str], rows: int) -> dict:
    bindings = []
    for _ in range(rows):
        row = {}
        for variable in variables:
            term = _term(rng, variable)
            if term is not None:
                row[variable] = term
        bindings.append(row)
    if rows > 3 and rng.random() < 0.3:
        bindings.append(dict(rng.choice(bindings)))  # a duplicate row
    return {"head": {"vars": list(variables)}, "results": {"bindings": bindings}}


def _term(rng: random.Random, variable: str) -> dict | None:
    if variable in ("item", "iri"):
        return {"type": "uri", "value": f"urn:uuid:{rng.getrandbits(64):016x}-9aeb-11e5-91da-b8763fd99c5f"}
    if variable == "name":
        return {"type": "literal", "value": f"{rng.choice(_NAMES)} T{rng.randint(1, 9)}"}
    if variable == "count":
        return {"type": "literal", "datatype": XSD + "integer", "value": str(rng.randint(0, 40))}
    if variable == "ratio":
        return {"type": "literal", "datatype": XSD + "double", "value": f"{rng.random():.6f}"}
    if variable == "active":
        return {"type": "literal", "datatype": XSD + "boolean", "value": rng.choice(["true", "false"])}
    if variable == "code":
        return None if rng.random() < 0.1 else {"type": "literal", "value": rng.choice("ABCDEFGH")}
    return {"type": "literal", "value": str(rng.randint(0, 9))}


# --- response side -------------------------------------------------------------------------------


def _response(rng: random.Random, question_id: str, question: dict, steps_plan: list[dict]) -> dict:
    if rng.random() < ERROR_SHARE:
        return {"question_id": question_id, "status": "error", "error": rng.choice(
            ["Error message", "Error: timeout after 60 s", "RateLimitError: too many requests"])}
    calls: list[dict] = []

    def call(name: str, args: dict, output: str | None, *, failed: bool = False) -> None:
        step = {"name": name, "args": args, "id": f"call_{rng.getrandbits(96):024x}"}
        if failed:
            step.update(status="error", error="Error: ValueError('The following prefixes are undefined: urn')")
        else:
            step.update(status="success", output=output)
        calls.append(step)

    lookup = question["reference_steps"][0][0]
    call(lookup["name"], lookup["args"], lookup["output"])
    for plan in steps_plan:
        step = plan["step"]
        if plan["kind"] in ("sparql", "ask") and rng.random() < 0.25:
            call(step["name"], step["args"], None, failed=True)
        output = _actual_output(rng, plan)
        if plan["kind"] == "retrieval":
            output, k = output
            call("retrieval", {"query": "synthetic retrieval", "k": k}, output)
        else:
            call(step["name"], step["args"], output)
        if rng.random() < 0.1:  # a later call of the same tool that is wrong
            call(step["name"], step["args"], _wrong_output(rng, plan))
    if rng.random() < 0.3:
        call("now", {}, "2024-05-21T10:00:00")
    input_tokens = rng.randint(20_000, 300_000)
    output_tokens = rng.randint(20, 900)
    return {
        "question_id": question_id,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
        "elapsed_sec": round(rng.uniform(1.5, 60.0), 6),
        "actual_steps": calls,
        "actual_answer": question["reference_answer"] if rng.random() < 0.7 else "I could not find them.",
    }


def _actual_output(rng: random.Random, plan: dict) -> Any:
    kind = plan["kind"]
    if kind == "ask":
        value = plan["value"] if rng.random() < 0.8 else not plan["value"]
        return json.dumps({"head": {}, "boolean": value})
    if kind == "json":
        value = dict(plan["value"])
        if rng.random() < 0.25:
            value["limit"] += 1
        items = list(value.items())
        rng.shuffle(items)  # key order does not matter to parsed equality
        return json.dumps(dict(items), indent=rng.choice([None, 2]))
    if kind == "retrieval":
        documents = list(plan["documents"])
        keep = rng.randint(0, len(documents))
        chosen = rng.sample(documents, keep)
        noise = [{"id": f"http://example.com/resource/doc/{rng.randint(401, 800)}", "text": "Other."}
                 for _ in range(rng.randint(0, 3))]
        retrieved = chosen + noise
        rng.shuffle(retrieved)
        return json.dumps(retrieved, indent=2), max(len(retrieved), 1)
    return json.dumps(_sparql_variant(rng, plan), indent=rng.choice([None, 2]))


def _sparql_variant(rng: random.Random, plan: dict) -> dict:
    """The reference table as a system might return it: renamed, permuted, extra columns,
    shuffled rows, more decimals; or (about a third of the time) with a mistake."""
    table = plan["table"]
    step = plan["step"]
    variables = list(table["head"]["vars"])
    rows = [dict(row) for row in table["results"]["bindings"]]
    renamed = {v: (f"{v}_{rng.randint(1, 9)}" if rng.random() < 0.4 else v) for v in variables}
    extra = [f"other{i}" for i in range(rng.choice(_extra_columns or [0, 0, 1, 2, 3]))]
    for row in rows:
        for name in extra:
            row[name] = _term(rng, rng.choice(["count", "code", "name"])) or {"type": "literal", "value": "x"}
        for variable, term in list(row.items()):
            if term.get("datatype") == XSD + "double" and rng.random() < 0.5:
                row[variable] = dict(term, value=term["value"] + "3")  # truncated away: still equal
    mistake = rng.random()
    if mistake < 0.12 and len(rows) > 1:
        rows.pop(rng.randrange(len(rows)))
    elif mistake < 0.25:
        row = rng.choice(rows)
        variable = rng.choice(plan["required"])
        row[variable] = {"type": "literal", "value": "WRONG"}
    if not step.get("ordered") and rng.random() < 0.7:
        rng.shuffle(rows)
    head_vars = [renamed[v] for v in variables] + extra
    rng.shuffle(head_vars)
    bindings = [{(renamed.get(k, k)): v for k, v in row.items()} for row in rows]
    return {"head": {"vars": head_vars}, "results": {"bindings": bindings}}


def _wrong_output(rng: random.Random, plan: dict) -> str:
    kind = plan["kind"]
    if kind == "ask":
        return json.dumps({"head": {}, "boolean": not plan["value"]})
    if kind == "json":
        return json.dumps({"unit": "none"})
    if kind == "retrieval":
        return json.dumps([{"id": "http://example.com/resource/doc/999", "text": "Wrong."}])
    variables = plan["required"]
    return json.dumps(_table(rng, variables, rng.randint(1, 5)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path, help="directory to write testcases/ and responses/ into")
    parser.add_argument("--questions", type=int, default=200, help="number of questions (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    testcases, responses = write_suite(args.outdir, args.questions, args.seed)
    print(f"wrote {testcases} and {responses}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
