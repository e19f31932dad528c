"""End-to-end benchmark: load → evaluate → aggregate → workbook on a generated Q&A suite.

    python benchmarks/bench_pipeline.py [--questions 10000] [--seed 0] [--suite DIR]
                                        [--compare CHECKOUT] [--repeat 1]

Generates a suite with `synthetic_suite.py` (10,000 questions: a 104 MB YAML dataset and a 163 MB
JSON array of responses), then runs qareport on it in a new process (cold: nothing cached, the
process's own peak memory), printing each stage's wall time and the peak resident memory (VmHWM)
after it. No LLM judge runs here (the judge has its own benchmark, bench_judge.py).

Targets (2-core machine): 10,000 questions end to end in at most half the first edition's time and
with a peak under 500 MB. `--compare CHECKOUT` runs an older checkout (e.g. a worktree of the first
edition, commit 70c7d4d) on the same suite, alternating with this one, `--repeat` times, and prints
the ratios of each pair of runs: on a shared machine only figures taken side by side compare.
Each run's CPU time is printed beside its wall time, with the ratio of both: on a shared machine
the CPU time varies less.
`--suite DIR` keeps the generated suite in DIR (and reuses it when it is there).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from measuring import cpu_seconds, peak_rss_mb, pipeline_scope  # noqa: E402


def child_run(folder: Path) -> dict:
    """Run the stages in this process (a new one per run) and return their figures."""
    from qareport.evaluation import evaluate_suite
    from qareport.loading import load_suite
    from qareport.records import RunInfo
    from qareport.workbook import write_workbook

    try:
        from qareport.report import build_report
    except ImportError:  # a checkout from before the report model: statistics, then the workbook
        build_report = None

    stages: list[tuple[str, float, float]] = []

    def stage(name, function, *args):
        begin = time.perf_counter()
        value = function(*args)
        stages.append((name, time.perf_counter() - begin, peak_rss_mb()))
        return value

    output = folder / f"report-{os.getpid()}.xlsx"
    started, cpu_started = time.perf_counter(), cpu_seconds()
    suite = stage("load", load_suite, [folder / "testcases"], [folder / "responses"])
    evaluation = stage("evaluate", evaluate_suite, suite)
    run = RunInfo(created="2026-01-01T00:00:00+00:00", qareport_version="bench", inputs=suite.inputs)
    problems = (*suite.problems, *evaluation.problems)
    if build_report is not None:
        report = stage("aggregate", build_report, evaluation.results, problems, run)
        stage("workbook", write_workbook, report, output)
    else:
        from qareport.statistics import summarize

        statistics = stage("aggregate", summarize, evaluation.results)
        stage("workbook", write_workbook, evaluation.results, statistics, problems, run, output)
    total = time.perf_counter() - started
    figures = {"stages": stages, "total": total, "cpu": cpu_seconds() - cpu_started, "rss": peak_rss_mb(),
               "workbook_mb": output.stat().st_size / 1e6, "cases": len(evaluation.results), "problems": len(problems)}
    output.unlink()
    return figures


def run_in_child(folder: Path, checkout: Path) -> dict:
    environment = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, __file__, "--child", str(folder)], capture_output=True,
                          text=True, env=environment)
    if done.returncode != 0:
        raise SystemExit(f"the run with {checkout} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def show(label: str, figures: dict) -> None:
    stages = "  ".join(f"{name} {seconds:5.2f} s" for name, seconds, _ in figures["stages"])
    print(f"{label:>14}: total {figures['total']:6.2f} s, CPU {figures['cpu']:6.2f} s  ({stages})  "
          f"peak RSS {figures['rss']:5.0f} MB  "
          f"workbook {figures['workbook_mb']:.1f} MB, {figures['cases']} cases, {figures['problems']} problems",
          flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        with pipeline_scope():
            figures = child_run(Path(argv[1]))
        print(json.dumps(figures))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--suite", type=Path, help="keep (or reuse) the generated suite in this folder")
    parser.add_argument("--compare", type=Path, help="an older checkout to run side by side (its root folder)")
    parser.add_argument("--repeat", type=int, default=1, help="pairs of runs (with --compare) or runs")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as temporary:
        folder = args.suite or Path(temporary)
        if not (folder / "responses" / "responses.json").exists():
            # generated in a child process, so that no run's memory includes the generator's
            subprocess.run([sys.executable, str(HERE / "synthetic_suite.py"), str(folder),
                            "--questions", str(args.questions), "--seed", str(args.seed)],
                           check=True, stdout=subprocess.DEVNULL)
        sizes = sum(p.stat().st_size for p in (folder / "testcases").rglob("*") if p.is_file()) + \
            sum(p.stat().st_size for p in (folder / "responses").rglob("*") if p.is_file())
        print(f"suite: {folder} ({sizes / 1e6:.1f} MB of input)")
        this = HERE.parent
        for number in range(1, args.repeat + 1):
            pair = [("this", this)] + ([("compared", args.compare)] if args.compare else [])
            if number % 2 == 0:
                pair.reverse()  # alternate which runs first
            figures = {label: run_in_child(folder, checkout) for label, checkout in pair}
            for label in figures:
                show(f"{label} #{number}", figures[label])
            if args.compare:
                other = figures["compared"]
                for label in (label for label in figures if label != "compared"):
                    mine = figures[label]
                    print(f"{'ratio #' + str(number):>14}: {label}: time {mine['total'] / other['total']:.2f}, "
                          f"CPU time {mine['cpu'] / other['cpu']:.2f}, "
                          f"peak RSS {mine['rss'] / other['rss']:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
