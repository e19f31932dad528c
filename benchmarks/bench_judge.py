"""How fast the judge is against a server that takes 300 ms per request.

    python benchmarks/bench_judge.py [--cases 200] [--latency 0.3] [--concurrency 8]

Judges answer correctness and answer relevance of 200 answers with the stub OpenAI server
(tests/openai_stub.py), then judges them again with the same cache. Target: under 20 s for the
first run; the rerun makes no request.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from openai_stub import serve_stub

from qareport.judge import Judge, JudgeSettings


def make_results(count: int) -> list[dict]:
    return [
        {
            "question_id": f"q{n}",
            "question_text": f"Which transformers are in substation {n}?",
            "status": "success",
            "reference_answer": f"T{n}-1; T{n}-2; T{n}-3",
            "actual_answer": f"T{n}-1; T{n}-3; T{n}-9",
        }
        for n in range(count)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    metrics = ("answer_correctness", "answer_relevance")
    with tempfile.TemporaryDirectory() as folder, serve_stub(latency=args.latency) as server:
        settings = JudgeSettings(base_url=server.url, api_key="bench", concurrency=args.concurrency,
                                 cache_path=str(Path(folder) / "judge.sqlite3"), metrics=metrics)
        timings = []
        for run in ("first run", "rerun (cache)"):
            results = make_results(args.cases)
            requests_before = server.calls
            started = time.perf_counter()
            with Judge(settings) as judge:
                run_result = judge.judge_results(results)
            elapsed = time.perf_counter() - started
            timings.append(elapsed)
            usage = run_result.usage
            judged = sum(1 for r in run_result.results if "answer_f1" in r and "answer_relevance" in r)
            print(
                f"{run:14} {elapsed:6.2f} s  {args.cases} cases, {judged} fully judged, "
                f"{server.calls - requests_before} HTTP requests ({server.chat_calls} chat + "
                f"{server.embedding_calls} embeddings so far), {usage.calls} API calls, "
                f"{usage.cached_calls} cached, max in flight {server.max_in_flight}"
            )
        ideal = 2 * args.cases * args.latency / args.concurrency  # chat calls only, perfectly parallel
        print(f"first run / ideal ({ideal:.2f} s: {2 * args.cases} chat calls x {args.latency} s / "
              f"{args.concurrency} workers) = {timings[0] / ideal:.2f}; rerun / first run = "
              f"{timings[1] / timings[0]:.3f}")
        print(f"target < 20 s for the first run: {'met' if timings[0] < 20 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
