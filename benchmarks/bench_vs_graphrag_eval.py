"""Time qareport's steps evaluation against graphrag-eval's on the same synthetic suites, and check
that both give the same steps scores and aggregates: graphrag-eval 5.2.0 against qareport's default
(5.x) rules, and graphrag-eval 6.6.1 against qareport's `semantics=6`.

    python benchmarks/bench_vs_graphrag_eval.py [--questions 2000] [--seed 7] [--widths ordinary seed wide]
                                                [--versions 5.2.0 6.6.1] [--repeat 3]

The kinds of input, measured side by side in one run:

* "ordinary": SPARQL results of one or two required columns and a few rows (the common question);
* "seed": shaped like the seed README's examples, two required columns, answers of two to four
  columns (extra ones included) and 1 to 16 rows;
* "wide": two to five columns and tens of rows, where graphrag-eval's search over column
  permutations costs most.

graphrag-eval is imported from its wheels (`graphrag_eval_wheels.py`: ~/.cache/qareport/wheels,
downloaded when absent). No LLM is called: OPENAI_API_KEY is unset, the responses given to
graphrag-eval have no `actual_answer`, 6.6.1 gets no configuration, and a stand-in `langevals_ragas`
module tree answers 5.2.0's retrieval metrics with "not evaluated" (it records an error string,
which no aggregate reads). On Python < 3.12 both aggregate with Python 3.12's `sum()`.

Beside each pair, the floor: the time orjson takes to parse, once each, the outputs the scoring
must read (the last reference group's outputs and the successful calls of the same names), and
so the most any implementation that parses them could gain over graphrag-eval on that input.

Each timing is the best CPU time of `--repeat` runs of `run_evaluation` alone, qareport's and
graphrag-eval's taken in turn (graphrag-eval mutates its inputs, so every run gets deep copies made beforehand; qareport's caches of parsed outputs and
converted values are emptied before each of its runs); peak memory is measured in one more run of each under
tracemalloc, so that tracing does not slow the timed runs.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import logging
import os
import sys
import time
import tracemalloc
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ge6_suite import ge6_inputs
from graphrag_eval_wheels import import_graphrag_eval
from synthetic_suite import WIDTHS, generate_suite

from qareport.aggregates import compute_aggregates
from qareport.kinds.steps import sparql_cells
from qareport.qa import run_evaluation

VERSIONS = ("5.2.0", "6.6.1")


def install_langevals_stand_in() -> None:
    """Modules graphrag-eval imports for its retrieval metrics, answering "not evaluated"."""

    class Result:
        status = "skipped"
        details = "not evaluated in this benchmark"
        score = None
        cost = None

    class Evaluator:
        def __init__(self, settings: Any = None) -> None:
            self.settings = settings

        def evaluate(self, entry: Any) -> Result:
            return Result()

    class Entry:
        def __init__(self, **fields: Any) -> None:
            self.__dict__.update(fields)

    package = types.ModuleType("langevals_ragas")
    package.__path__ = []
    sys.modules["langevals_ragas"] = package
    for module_name, prefix in {
        "response_context_recall": "RagasResponseContextRecall",
        "response_context_precision": "RagasResponseContextPrecision",
        "context_recall": "RagasContextRecall",
        "context_precision": "RagasContextPrecision",
        "response_relevancy": "RagasResponseRelevancy",
    }.items():
        module = types.ModuleType(f"langevals_ragas.{module_name}")
        setattr(module, prefix + "Entry", Entry)
        setattr(module, prefix + "Evaluator", Evaluator)
        sys.modules[module.__name__] = module
        setattr(package, module_name, module)


def import_versions(versions: list[str]) -> dict[str, types.ModuleType]:
    os.environ.pop("OPENAI_API_KEY", None)
    install_langevals_stand_in()
    imported = {}
    for version in versions:
        module = import_graphrag_eval(version, download=True, plain_name=version.startswith("5"))
        assert module is not None
        logging.getLogger(module.__name__).disabled = True
        for name in ("steps.evaluation", "aggregation"):
            logging.getLogger(f"{module.__name__}.{name}").disabled = True  # 6.6.1 logs unparsable outputs
        imported[version] = module
    return imported


def graphrag_inputs(reference_qas: list[dict], responses: list[dict]) -> tuple[list[dict], dict]:
    """Deep copies in graphrag-eval's shape: responses keyed by question id, without answers."""
    keyed = {}
    for record in copy.deepcopy(responses):
        record.pop("actual_answer", None)
        keyed[record["question_id"]] = record
    return copy.deepcopy(reference_qas), keyed


def empty_caches() -> None:
    """Forget the typed SPARQL values converted (the only thing qareport keeps between questions)."""
    sparql_cells._typed_keys.clear()


def peak_memory(function: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def compare(ours: list[dict], theirs: list[dict], our_aggregates: dict, their_aggregates: dict) -> list[str]:
    problems = []
    if len(ours) != len(theirs):
        problems.append(f"{len(ours)} results against {len(theirs)}")
    for mine, other in zip(ours, theirs):
        if mine["question_id"] != other["question_id"]:
            problems.append(f"question order differs at {mine['question_id']}")
        elif mine.get("steps_score") != other.get("steps_score") or mine["status"] != other["status"]:
            problems.append(
                f"question {mine['question_id']}: steps_score {mine.get('steps_score')!r} "
                f"against {other.get('steps_score')!r}"
            )
    for template_id, theirs_summary in their_aggregates["per_template"].items():
        mine_summary = our_aggregates["per_template"].get(template_id, {})
        for key in ("steps_score", "steps", "number_of_error_samples", "number_of_success_samples"):
            if mine_summary.get(key) != theirs_summary.get(key):
                problems.append(f"template {template_id}: {key} differs")
    for level in ("micro", "macro"):
        if our_aggregates[level].get("steps_score") != their_aggregates[level].get("steps_score"):
            problems.append(f"{level} steps_score differs")
    if our_aggregates != their_aggregates:
        problems.append("the aggregates differ (beyond the keys above)")
    return problems


def compared_outputs(reference_qas: list[dict], responses: list[dict]) -> list[str]:
    """The output texts 5.x scoring reads: the last group's reference outputs, and the outputs of
    the successful calls that share a name with one of its steps (error responses are not scored)."""
    by_id = {record["question_id"]: record for record in responses}
    texts = []
    for template in reference_qas:
        for question in template["questions"]:
            groups = question.get("reference_steps") or []
            response = by_id.get(question["id"])
            if not groups or response is None or "error" in response:
                continue
            names = {step["name"] for step in groups[-1]}
            texts += [step["output"] for step in groups[-1] if isinstance(step.get("output"), str)]
            texts += [step["output"] for step in response.get("actual_steps") or []
                      if step.get("name") in names and step.get("status") == "success"
                      and isinstance(step.get("output"), str)]
    return texts


def parse_alone(texts: list[str]) -> None:
    for text in texts:
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError:
            pass  # a Turtle result: read as text


def best_time(function: Callable[[], Any], prepare: Callable[[], Any], repeat: int) -> tuple[Any, float]:
    """The value of the last run and the best time of `repeat` runs, each after `prepare()`: CPU time
    of this process (`time.process_time`), as the machine is shared and wall time counts the others'
    work; every run here is single-threaded computation."""
    ((value, best),) = best_times([(function, prepare)], repeat)
    return value, best


def best_times(runs: list[tuple[Callable[[Any], Any], Callable[[], Any]]], repeat: int) -> list[tuple[Any, float]]:
    """`best_time` of each (function, prepare) of `runs`, taken in turn: one run of each, `repeat`
    times over, so that a change of load on the shared machine falls on all of them alike. Each run
    takes freshly prepared inputs, as a caller's freshly read ones, and ends with a collection of the
    collector's young generation, timed: the collector's work on what a run made counts whether it
    happened during the run or was left for later (qareport pauses the automatic collector while it
    scores, `qareport.collector`)."""
    best = [float("inf")] * len(runs)
    values: list[Any] = [None] * len(runs)
    for _ in range(repeat):
        for index, (function, prepare) in enumerate(runs):
            argument = prepare()
            values[index] = None
            start = time.process_time()
            values[index] = function(argument)
            gc.collect(0)
            best[index] = min(best[index], time.process_time() - start)
    return list(zip(values, best))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each; the best counts (default 3)")
    parser.add_argument("--skip-memory", action="store_true", help="skip the (slow) traced runs")
    parser.add_argument("--widths", nargs="+", default=["ordinary", "seed", "wide"], choices=tuple(WIDTHS),
                        help="the kinds of input to measure (default all)")
    parser.add_argument("--versions", nargs="+", default=list(VERSIONS), choices=VERSIONS,
                        help="the graphrag-eval versions to compare with (default both)")
    args = parser.parse_args(argv)

    modules = import_versions(args.versions)
    status = 0
    summary = []
    for widths in args.widths:
        reference_qas, responses = generate_suite(args.questions, args.seed, widths=widths)
        print(f"\n{widths} input: {args.questions} questions, seed {args.seed}; Python {sys.version.split()[0]}")
        texts = compared_outputs(reference_qas, responses)
        _, floor = best_time(parse_alone, lambda texts=texts: texts, args.repeat)
        print(f"  parsing the {len(texts)} outputs compared, once each (orjson): {floor:.4f} s")
        for version, module in modules.items():
            problems, ours, theirs = measure(module, version, reference_qas, responses, args)
            summary.append((widths, version, ours, theirs, floor, not problems))
            status |= bool(problems)
    print("\nsteps evaluation, best of", args.repeat, "runs (seconds); 'at most': graphrag-eval's time over the "
          "parse alone, the most any implementation that parses the outputs could gain:")
    print(f"{'input':10} {'vs':8} {'qareport':>9} {'graphrag-eval':>14} {'speed-up':>9} {'at most':>8}  scores")
    for widths, version, ours, theirs, floor, same in summary:
        print(f"{widths:10} {version:8} {ours:9.3f} {theirs:14.3f} {theirs / ours:8.2f}x {theirs / floor:7.1f}x  "
              f"{'identical' if same else 'DIFFERENT'}")
    return status


def measure(module: types.ModuleType, version: str, reference_qas: list[dict], responses: list[dict],
            args: argparse.Namespace) -> tuple[list[str], float, float]:
    semantics = 6 if version.startswith("6") else 5
    if semantics == 6:
        def theirs_run(inputs: Any) -> Any:
            return asyncio.run(module.run_evaluation(*inputs))

        def their_inputs() -> Any:
            return ge6_inputs(*graphrag_inputs(reference_qas, responses))
    else:
        def theirs_run(inputs: Any) -> Any:
            return module.run_evaluation(*inputs)

        def their_inputs() -> Any:
            return graphrag_inputs(reference_qas, responses)

    def ours_run(_: Any) -> Any:
        return run_evaluation(reference_qas, responses, semantics=semantics)

    (ours, our_seconds), (theirs, their_seconds) = best_times([(ours_run, empty_caches), (theirs_run, their_inputs)],
                                                              args.repeat)
    problems = compare(ours, theirs, compute_aggregates(ours, semantics=semantics), module.compute_aggregates(theirs))

    if args.skip_memory:
        our_memory = their_memory = ""
    else:
        empty_caches()
        our_peak = peak_memory(lambda: ours_run(None))
        prepared = their_inputs()
        their_peak = peak_memory(lambda: theirs_run(prepared))
        our_memory = f"   peak {our_peak / 2**20:8.1f} MiB"
        their_memory = f"   peak {their_peak / 2**20:8.1f} MiB"

    rules = "6.x rules" if semantics == 6 else "5.x rules"
    print(f"  qareport ({rules})       run_evaluation: {our_seconds:9.3f} s{our_memory}")
    print(f"  graphrag-eval {version:8} run_evaluation: {their_seconds:9.3f} s{their_memory}")
    print(f"  speed-up: {their_seconds / our_seconds:.1f}x")
    scored = sum(1 for result in ours if "steps_score" in result)
    if problems:
        print(f"  DIFFERENCES ({len(problems)}):")
        for problem in problems[:20]:
            print("    " + problem)
    else:
        print(f"  identical: steps_score of all {len(ours)} questions ({scored} scored) and the aggregates")
    return problems, our_seconds, their_seconds


if __name__ == "__main__":
    sys.exit(main())
