"""Time qareport's `run_evaluation` against graphrag-eval 5.2.0's on the same synthetic suite,
and check that both give the same steps scores and step aggregates.

    python benchmarks/bench_vs_graphrag_eval.py [--questions 2000] [--seed 7] [--widths ordinary wide]

Both kinds of input are measured side by side in one run: "ordinary" questions (SPARQL results of
one or two required columns and a few rows, the common case) and "wide" ones (two to five columns,
tens of rows, where graphrag-eval's search over column permutations costs most).

graphrag-eval is imported from its wheel in this process: `/tmp/gre/graphrag_eval-5.2.0-...whl` if
present, else the wheel `pip download` fetches into ~/.cache/qareport-bench (it is pure Python;
its metadata asks for Python 3.12, so the download names that version). No LLM is called:
  * OPENAI_API_KEY is unset, and the copies of the responses given to graphrag-eval have no
    `actual_answer`, so it does not try answer relevance or correctness;
  * a stand-in `langevals_ragas` module tree answers its retrieval metrics with a result whose
    status is not "processed" (graphrag-eval then records an error string, which no aggregate
    reads);
  * on Python < 3.12, graphrag-eval's aggregation module gets Python 3.12's `sum()` (compensated
    float summation; graphrag-eval requires Python 3.12), as qareport's aggregates use it.

Timings are wall-clock times of `run_evaluation` alone (graphrag-eval mutates its inputs, so it
gets deep copies made beforehand); peak memory is measured in a second run of each under
tracemalloc, so that tracing does not slow the timed runs.
"""

from __future__ import annotations

import argparse
import copy
import glob
import os
import subprocess
import sys
import time
import tracemalloc
import types
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_suite import generate_suite  # noqa: E402

from qareport.aggregates import compute_aggregates, sum_as_python312  # noqa: E402
from qareport.qa import run_evaluation  # noqa: E402

WHEEL_GLOB = "graphrag_eval-5.2.0-py3-none-any.whl"
LOCAL_WHEEL_DIRS = [Path("/tmp/gre")]
CACHE_DIR = Path.home() / ".cache" / "qareport-bench"


def find_or_download_wheel() -> Path:
    for directory in [*LOCAL_WHEEL_DIRS, CACHE_DIR]:
        found = sorted(glob.glob(str(directory / WHEEL_GLOB)))
        if found:
            return Path(found[0])
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--python-version", "3.12",
         "--only-binary=:all:", "--dest", str(CACHE_DIR), "graphrag-eval==5.2.0"],
        check=True,
    )
    return Path(sorted(glob.glob(str(CACHE_DIR / WHEEL_GLOB)))[0])


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


def import_graphrag_eval() -> types.ModuleType:
    os.environ.pop("OPENAI_API_KEY", None)
    sys.path.insert(0, str(find_or_download_wheel()))
    install_langevals_stand_in()
    import graphrag_eval
    import graphrag_eval.aggregation

    if sys.version_info < (3, 12):
        graphrag_eval.aggregation.sum = sum_as_python312  # the builtin it would have on 3.12
    return graphrag_eval


def graphrag_inputs(reference_qas: list[dict], responses: list[dict]) -> tuple[list[dict], dict]:
    """Deep copies in graphrag-eval's shape: responses keyed by question id, without answers."""
    keyed = {}
    for record in copy.deepcopy(responses):
        record.pop("actual_answer", None)
        keyed[record["question_id"]] = record
    return copy.deepcopy(reference_qas), keyed


def timed(function: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = function()
    return value, time.perf_counter() - start


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-memory", action="store_true", help="skip the (slow) traced runs")
    parser.add_argument("--widths", nargs="+", default=["ordinary", "wide"], choices=("ordinary", "wide"),
                        help="the kinds of input to measure (default both)")
    args = parser.parse_args(argv)

    graphrag_eval = import_graphrag_eval()
    status = 0
    for widths in args.widths:
        status |= measure(graphrag_eval, args, widths)
    return status


def measure(graphrag_eval: types.ModuleType, args: argparse.Namespace, widths: str) -> int:
    reference_qas, responses = generate_suite(args.questions, args.seed, widths=widths)
    print(f"\n{widths} input: {args.questions} questions, seed {args.seed}; Python {sys.version.split()[0]}")

    ours, our_seconds = timed(lambda: run_evaluation(reference_qas, responses))
    their_inputs = graphrag_inputs(reference_qas, responses)
    theirs, their_seconds = timed(lambda: graphrag_eval.run_evaluation(*their_inputs))
    problems = compare(ours, theirs, compute_aggregates(ours), graphrag_eval.compute_aggregates(theirs))

    if args.skip_memory:
        our_memory = their_memory = ""
    else:
        our_peak = peak_memory(lambda: run_evaluation(reference_qas, responses))
        their_inputs = graphrag_inputs(reference_qas, responses)
        their_peak = peak_memory(lambda: graphrag_eval.run_evaluation(*their_inputs))
        our_memory = f"   peak {our_peak / 2**20:8.1f} MiB"
        their_memory = f"   peak {their_peak / 2**20:8.1f} MiB"

    print(f"qareport      run_evaluation: {our_seconds:9.3f} s{our_memory}")
    print(f"graphrag-eval run_evaluation: {their_seconds:9.3f} s{their_memory}")
    print(f"speed-up: {their_seconds / our_seconds:.1f}x")
    scored = sum(1 for result in ours if "steps_score" in result)
    if problems:
        print(f"DIFFERENCES ({len(problems)}):")
        for problem in problems[:20]:
            print("  " + problem)
        return 1
    print(f"identical: steps_score of all {len(ours)} questions ({scored} scored) and the aggregates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
