"""How does a run scale with the number of indicator-selection cases, stage by stage?

    python benchmarks/bench_scaling.py [--sizes 1000,10000,50000] [--seed 7] [--outdir DIR]

For each size it generates a conversation suite with `bench_workbook.generate` (2-5 dimensions,
one case in five with two turns, misses, extras, label mismatches, 3 % error responses), then runs,
each in a new process (cold: nothing cached, peak memory per run):

- a bare `yaml.load(..., Loader=yaml.CSafeLoader)` of the same test-case file and a bare JSON parse
  of the responses: the unit the run is measured in, since nothing can read the inputs faster;
- qareport end to end, timing load → evaluate → report model → workbook.

It prints one table: per size, each stage's wall time, the run's peak RSS, and the end-to-end time
as a multiple of the bare parse. The same script measures an older checkout side by side:
`PYTHONPATH=/path/to/checkout python benchmarks/bench_scaling.py` (stages an old checkout lacks are
timed together).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_workbook
from measuring import peak_rss_mb, pipeline_scope


def child_parse(testcases: Path, responses: Path) -> dict:
    import yaml

    started = time.perf_counter()
    with open(testcases, encoding="utf-8") as handle:
        yaml.load(handle, Loader=yaml.CSafeLoader)
    parsed_yaml = time.perf_counter()
    with open(responses, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                json.loads(line)
    return {"yaml": parsed_yaml - started, "json": time.perf_counter() - parsed_yaml, "rss": peak_rss_mb()}


def child_run(testcases: Path, responses: Path, output: Path) -> dict:
    from qareport.evaluation import evaluate_suite
    from qareport.loading import load_suite
    from qareport.records import RunInfo
    from qareport.workbook import write_workbook

    times = {}
    started = time.perf_counter()
    suite = load_suite([str(testcases)], [str(responses)])
    times["load"] = time.perf_counter() - started
    mark = time.perf_counter()
    evaluation = evaluate_suite(suite)
    times["evaluate"] = time.perf_counter() - mark
    mark = time.perf_counter()
    run = RunInfo(created="2026-11-24T06:00:00+00:00", qareport_version="bench", inputs=suite.inputs)
    problems = (*suite.problems, *evaluation.problems)
    try:
        from qareport.report import build_report
    except ImportError:  # a checkout from before the report model: statistics, then the workbook
        from qareport.statistics import summarize

        statistics = summarize(evaluation.results)
        times["report"] = time.perf_counter() - mark
        mark = time.perf_counter()
        write_workbook(evaluation.results, statistics, problems, run, output)
    else:
        report = build_report(evaluation.results, problems, run)
        times["report"] = time.perf_counter() - mark
        mark = time.perf_counter()
        write_workbook(report, output)
    times["write"] = time.perf_counter() - mark
    times["total"] = time.perf_counter() - started
    times["rss"] = peak_rss_mb()
    times["cases"] = len(suite.cases)
    times["workbook_mb"] = output.stat().st_size / 1e6
    return times


def in_child(mode: str, *paths: Path) -> dict:
    command = [sys.executable, __file__, f"--child-{mode}", *map(str, paths)]
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child-parse":
        print(json.dumps(child_parse(Path(argv[1]), Path(argv[2]))))
        return 0
    if argv and argv[0] == "--child-run":
        with pipeline_scope():
            figures = child_run(Path(argv[1]), Path(argv[2]), Path(argv[3]))
        print(json.dumps(figures))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,50000", help="case counts, comma-separated")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--outdir", type=Path, help="keep inputs and workbooks here (default: a temporary folder)")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    folder = args.outdir or Path(tempfile.mkdtemp(prefix="qareport-scaling-"))
    folder.mkdir(parents=True, exist_ok=True)

    header = (f"{'cases':>7} {'yaml':>7} {'json':>6} {'load':>7} {'eval':>6} {'report':>7} {'write':>7} "
              f"{'total':>7} {'×parse':>7} {'peak MB':>8} {'xlsx MB':>8}")
    print(header)
    for size in sizes:
        suite, responses = bench_workbook.generate(size, seed=args.seed)
        testcases_path, responses_path = bench_workbook.write_inputs(folder / f"suite-{size}", suite, responses)
        del suite, responses  # the children measure their own memory; keep this process small anyway
        parse = in_child("parse", testcases_path, responses_path)
        run = in_child("run", testcases_path, responses_path, folder / f"report-{size}.xlsx")
        ratio = run["total"] / parse["yaml"]
        print(f"{size:>7} {parse['yaml']:>6.2f}s {parse['json']:>5.2f}s {run['load']:>6.2f}s {run['evaluate']:>5.2f}s "
              f"{run['report']:>6.2f}s {run['write']:>6.2f}s {run['total']:>6.2f}s {ratio:>6.2f}× "
              f"{run['rss']:>8.0f} {run['workbook_mb']:>8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
