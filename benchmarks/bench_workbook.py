"""How big and how slow is the workbook of a large run? Is it still fit for an email attachment?

    python benchmarks/bench_workbook.py [--cases 10000] [--seed 7] [--outdir DIR]

Generates a conversation suite (indicator selection in 2-4 dimensions with 1-4 terms each from
codelists of 400 terms, one in five cases with two turns, a ~400-character answer per turn, 3%
error responses) and last week's responses (5% of the cases answered differently, 1% more
errors), runs both through qareport (this week with last week as baseline and history, so every
sheet is written), and prints the time of each phase, how much memory it needed and the size of
each workbook. Only the library's steps (`load_suite` ... `build_report`, `write_workbook`) are
called, so the same script measures an older checkout side by side:
`PYTHONPATH=/path/to/that/checkout python benchmarks/bench_workbook.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

DIMENSIONS = ("INDICATOR", "COUNTRY", "FREQ", "UNIT", "SECTOR")
WORDS = ["gross", "domestic", "product", "current", "prices", "constant", "prices", "per", "capita", "inflation", "consumer", "price", "index", "unemployment", "rate", "current", "account", "balance", "general", "government", "debt", "exchange", "rate", "population"]


def term(rng: random.Random, dimension: str, number: int) -> dict:
    """A term of a fixed codelist: the same id always has the same label, as in real codelists."""
    label = random.Random(f"{dimension}-{number}")
    return {"id": f"{dimension[:3]}_{number:04d}", "name": " ".join(label.choices(WORDS, k=label.randint(2, 6))).capitalize()}


MAX_TERMS = 4  # per dimension; --max-terms


def selection(rng: random.Random, max_terms: int) -> list[dict]:
    dimensions = []
    for dimension in rng.sample(DIMENSIONS, rng.randint(2, 4)):
        dimensions.append({"dimension_name": dimension,
                           "values": [term(rng, dimension, rng.randint(0, 300)) for _ in range(rng.randint(1, max_terms))]})
    return [{"dataset_id": f"IMF.RES:{rng.choice(['WEO', 'IFS', 'BOP'])}", "dimensions": dimensions}]


def perturb(rng: random.Random, target: list[dict]) -> list[dict]:
    """What a system selected: mostly right, a term dropped here, a wrong one added there."""
    selected = json.loads(json.dumps(target))
    for dimension in selected[0]["dimensions"]:
        if rng.random() < 0.3 and len(dimension["values"]) > 1:
            dimension["values"].pop(rng.randrange(len(dimension["values"])))
        if rng.random() < 0.3:
            dimension["values"].append(term(rng, dimension["dimension_name"], rng.randint(301, 400)))
    return selected


def generate(cases: int, seed: int, max_terms: int = MAX_TERMS) -> tuple[list[dict], list[dict]]:
    """(test cases, this week's responses)."""
    rng = random.Random(seed)
    suite, responses = [], []
    for number in range(cases):
        turns = 2 if number % 5 == 0 else 1
        case_id = f"case-{number:05d}"
        conversation, outputs = [], []
        for turn in range(turns):
            target = selection(rng, max_terms)
            conversation.append({"role": "user", "content": f"Question {number}.{turn}: what is the "
                                 f"{' '.join(rng.choices(WORDS, k=8))} of country {rng.randint(1, 190)}?",
                                 "target": {"indicator_selection": target}})
            conversation.append({"role": "assistant", "content": "..."})
            outputs.append({"indicator_selection": perturb(rng, target),
                            "actual_answer": " ".join(rng.choices(WORDS, k=60))})
        suite.append({"id": case_id, "name": f"synthetic case {number}",
                      "tags": rng.sample(["imf", "weo", "ifs", "gdp", "prices", "labour"], 2), "conversation": conversation})
        if rng.random() < 0.03:
            responses.append({"test_case_id": case_id, "status": "error", "error": "upstream timeout"})
        else:
            responses.append({"test_case_id": case_id, "turns": outputs, "input_tokens": rng.randint(3000, 9000),
                              "output_tokens": rng.randint(80, 400), "total_tokens": 0, "elapsed_sec": rng.uniform(1, 9)})
    return suite, responses


def last_week(suite: list[dict], responses: list[dict], seed: int) -> list[dict]:
    """The same system a week earlier: 5% of the cases answered differently, 1% more errors."""
    rng = random.Random(seed + 1)
    earlier = []
    for case, response in zip(suite, responses):
        if rng.random() < 0.01:
            earlier.append({"test_case_id": case["id"], "status": "error", "error": "upstream timeout"})
        elif rng.random() < 0.05 and "turns" in response:
            targets = [m["target"]["indicator_selection"] for m in case["conversation"] if "target" in m]
            earlier.append({**response, "turns": [{**output, "indicator_selection": perturb(rng, target)}
                                                  for output, target in zip(response["turns"], targets)]})
        else:
            earlier.append(response)
    return earlier


def write_inputs(folder: Path, suite: list[dict], responses: list[dict]) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    testcases, answers = folder / "testcases.yaml", folder / "responses.jsonl"
    testcases.write_text(yaml.safe_dump(suite, sort_keys=False, width=1000))
    answers.write_text("".join(json.dumps(r) + "\n" for r in responses))
    return testcases, answers


def rss_mb() -> float | None:
    """The process's resident memory now (Linux), or None where /proc is not there."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return None


def timed(label: str, function, *args, **kwargs):
    """Run one phase; print its time and how far it raised resident memory above where it started
    (sampled every 10 ms: the phase's own peak, which the process's peak hides once a larger
    phase, such as loading, has run)."""
    start_rss, peak, done = rss_mb(), [0.0], threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], rss_mb() or 0.0)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    try:
        result = function(*args, **kwargs)
    finally:
        elapsed = time.perf_counter() - start
        done.set()
        sampler.join()
    memory = "" if start_rss is None else f"   memory +{max(0.0, peak[0] - start_rss):6.0f} MB over {start_rss:5.0f} MB"
    print(f"  {label:<34} {elapsed:7.2f} s{memory}", flush=True)
    return result


def run_once(testcases: Path, responses: Path, output: Path, *, baseline: Path | None = None) -> None:
    import inspect

    from qareport.evaluation import evaluate_suite
    from qareport.loading import load_suite
    from qareport.records import RunInfo
    from qareport.report import build_report
    from qareport.run_reading import read_run
    from qareport.statistics import summarize
    from qareport.workbook import write_workbook

    suite = timed("load", load_suite, [str(testcases)], [str(responses)])
    evaluation = timed("evaluate", evaluate_suite, suite)
    statistics = timed("summarize", summarize, evaluation.results)
    earlier = timed("read the baseline workbook", read_run, baseline) if baseline else None
    run = RunInfo(created="2024-05-08T10:00:00+00:00", qareport_version="bench", inputs=suite.inputs)
    # the report model: everything the writers lay out, computed once (with the Overview and Details values
    # where the checkout computes them there: it then takes the templates folder)
    extra = {"templates_dir": None} if "templates_dir" in inspect.signature(build_report).parameters else {}
    report = timed("build the report model", build_report, evaluation.results, suite.problems, run,
                   statistics=statistics, baseline=earlier, history=[earlier] if earlier else (), **extra)
    # one phase: the sheets are streamed to disk as they are built, so building and saving overlap
    written = timed("write the workbook (lay out + save)", write_workbook, report, output)
    rows = written.rows
    sheets = f": {rows['Overview'] - 1:,} Overview rows, {rows['Details'] - 1:,} Details rows; sheets {', '.join(rows)}"
    print(f"  {'workbook size':<34} {output.stat().st_size / 1e6:7.2f} MB  ({output.name}{sheets})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="test cases to generate (default 10000)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    parser.add_argument("--outdir", type=Path, help="keep the inputs and workbooks here (default: a temporary folder)")
    parser.add_argument("--max-terms", type=int, default=MAX_TERMS,
                        help=f"most terms per target dimension (default {MAX_TERMS}; IMF-like suites have 1-2)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qareport-bench-") as scratch:
        folder = args.outdir or Path(scratch)
        print(f"{args.cases:,} conversation cases, up to {args.max_terms} terms per dimension, seed {args.seed}")
        suite, responses = generate(args.cases, args.seed, args.max_terms)
        old_cases, old_responses = write_inputs(folder / "last-week", suite, last_week(suite, responses, args.seed))
        testcases, answers = write_inputs(folder / "this-week", suite, responses)
        print("last week (no baseline):")
        run_once(old_cases, old_responses, folder / "last-week.xlsx")
        print("this week (--baseline and --history last week):")
        run_once(testcases, answers, folder / "this-week.xlsx", baseline=folder / "last-week.xlsx")
    return 0


if __name__ == "__main__":
    sys.exit(main())
