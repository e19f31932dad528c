"""End-to-end benchmark: load → evaluate → aggregate → workbook on a generated Q&A suite.

    python benchmarks/bench_pipeline.py [--questions 10000] [--seed 0]

Prints wall time and the process's peak resident memory after each stage. Targets (2-core
machine): 10,000 questions end to end in at most half the first edition's time (17-22 s) and
with peak memory under 500 MB. No LLM judge runs here (the judge has its own benchmark,
bench_judge.py). The same script measures an older checkout side by side, on the same suite:
`PYTHONPATH=/path/to/checkout python benchmarks/bench_pipeline.py` (before the report model, the
aggregate stage is `summarize` and the workbook is written from the results).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from qareport.evaluation import evaluate_suite
from qareport.loading import load_suite
from qareport.records import RunInfo
from qareport.statistics import summarize
from qareport.workbook import write_workbook

try:
    from qareport.report import build_report
except ImportError:  # a checkout from before the report model
    build_report = None


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as folder:
        # generated in a child process, so the peak memory below is qareport's alone
        subprocess.run([sys.executable, str(Path(__file__).parent / "synthetic_suite.py"), folder,
                        "--questions", str(args.questions), "--seed", str(args.seed)],
                       check=True, stdout=subprocess.DEVNULL)
        testcases, responses = Path(folder) / "testcases", Path(folder) / "responses"
        sizes = sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())
        print(f"suite: {args.questions} questions, {sizes / 1e6:.1f} MB of input")
        output = Path(folder) / "report.xlsx"
        timings = []
        started = time.perf_counter()

        def stage(name, function, *a, **k):
            begin = time.perf_counter()
            value = function(*a, **k)
            timings.append((name, time.perf_counter() - begin, peak_rss_mb()))
            return value

        suite = stage("load", load_suite, [testcases], [responses])
        evaluation = stage("evaluate", evaluate_suite, suite)
        run = RunInfo(created="2026-01-01T00:00:00+00:00", qareport_version="bench", inputs=suite.inputs)
        problems = (*suite.problems, *evaluation.problems)
        if build_report is not None:
            report = stage("aggregate", build_report, evaluation.results, problems, run)
            stage("workbook", write_workbook, report, output)
        else:
            statistics = stage("aggregate", summarize, evaluation.results)
            stage("workbook", write_workbook, evaluation.results, statistics, problems, run, output)
        total = time.perf_counter() - started
        for name, seconds, rss in timings:
            print(f"{name:>10}: {seconds:7.2f} s   peak RSS {rss:7.0f} MB")
        print(f"{'total':>10}: {total:7.2f} s   peak RSS {peak_rss_mb():7.0f} MB   "
              f"workbook {output.stat().st_size / 1e6:.1f} MB")
        print(f"cases {len(evaluation.results)}, problems {len(suite.problems) + len(evaluation.problems)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
