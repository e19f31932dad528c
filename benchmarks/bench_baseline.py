"""What does `--baseline` cost a run? The same week's run with and without last week's workbook.

    python benchmarks/bench_baseline.py [--cases 50000] [--seed 7] [--repeat 1] [--outdir DIR]

Generates a conversation suite and two weeks of responses (`bench_workbook`), writes last week's
workbook with `qareport run`, then times this week's `qareport run` (a new process each, as a
scheduler starts it) without a baseline and with `--baseline` last week's workbook, and prints each
one's CPU and wall seconds, peak memory, and the ratio with / without (target: at most 1.1). CPU
seconds are the figure to quote on a shared machine. An older checkout is measured side by side with
`PYTHONPATH=/path/to/checkout python benchmarks/bench_baseline.py`.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_workbook


def timed_run(arguments: list[str]) -> tuple[float, float, float]:
    """CPU seconds, wall seconds and peak memory (MB) of one `qareport run` in a new process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "qareport", "run", *arguments, "--no-cache", "-q"],
                          capture_output=True, text=True, env=os.environ.copy())
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: a gate failed, the report written
        raise SystemExit(f"qareport run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, after.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=50_000, help="test cases to generate (default 50000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each kind; the least CPU is shown")
    parser.add_argument("--outdir", type=Path, help="keep the inputs and workbooks here (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qareport-baseline-") as scratch:
        folder = args.outdir or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        suite, responses = bench_workbook.generate(args.cases, args.seed)
        old_cases, old_answers = bench_workbook.write_inputs(folder / "last-week", suite,
                                                             bench_workbook.last_week(suite, responses, args.seed))
        cases, answers = bench_workbook.write_inputs(folder / "this-week", suite, responses)
        del suite, responses
        baseline = folder / "last-week.xlsx"
        timed_run([str(old_cases), "--responses", str(old_answers), "-o", str(baseline)])
        this_week = [str(cases), "--responses", str(answers)]
        plain = min(timed_run([*this_week, "-o", str(folder / "plain.xlsx")]) for _ in range(args.repeat))
        compared = min(timed_run([*this_week, "-o", str(folder / "compared.xlsx"), "--baseline", str(baseline)])
                       for _ in range(args.repeat))
        print(f"{args.cases:,} cases; peak MB is the largest run so far (getrusage keeps the maximum)")
        print(f"{'run':<22} {'cpu s':>7} {'wall s':>7} {'peak MB':>8}")
        for label, (cpu, wall, peak) in (("without a baseline", plain), ("with --baseline", compared)):
            print(f"{label:<22} {cpu:>7.2f} {wall:>7.2f} {peak:>8.0f}")
        print(f"{'with / without':<22} {compared[0] / plain[0]:>6.2f}× {compared[1] / plain[1]:>6.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
