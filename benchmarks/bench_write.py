"""How much CPU does writing the workbook take, apart from everything before it?

    python benchmarks/bench_write.py [--cases 10000] [--repeat 3] [--seed 7]

Generates a conversation suite (`bench_workbook.generate`), loads, evaluates and builds the report
model once, then writes the workbook `--repeat` times and prints each write's CPU and wall seconds
and the peak memory. CPU seconds are the figure to compare on a shared machine (the least of the
repeats is the least disturbed). An older checkout is measured side by side with
`PYTHONPATH=/path/to/checkout python benchmarks/bench_write.py`.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_workbook
from measuring import cpu_seconds, peak_rss_mb, pipeline_scope


def main(argv: list[str] | None = None) -> int:
    from qareport.evaluation import evaluate_suite
    from qareport.loading import load_suite
    from qareport.records import RunInfo
    from qareport.report import build_report
    from qareport.workbook import write_workbook

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qareport-write-") as scratch:
        folder = Path(scratch)
        suite, responses = bench_workbook.generate(args.cases, seed=args.seed)
        testcases, answers = bench_workbook.write_inputs(folder, suite, responses)
        del suite, responses
        with pipeline_scope():
            loaded = load_suite([str(testcases)], [str(answers)])
            evaluation = evaluate_suite(loaded)
            run = RunInfo(created="2026-11-24T06:00:00+00:00", qareport_version="bench", inputs=loaded.inputs)
            report = build_report(evaluation.results, (*loaded.problems, *evaluation.problems), run)
            cpu, wall = [], []
            for number in range(args.repeat):
                gc.collect()
                started_cpu, started = cpu_seconds(), time.perf_counter()
                write_workbook(report, folder / f"report-{number}.xlsx")
                cpu.append(cpu_seconds() - started_cpu)
                wall.append(time.perf_counter() - started)
    print(f"{args.cases:,} cases: write CPU s {' '.join(f'{t:.2f}' for t in cpu)} (least {min(cpu):.2f}); "
          f"wall s {' '.join(f'{t:.2f}' for t in wall)}; peak {peak_rss_mb():.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
