"""How close the direct judge comes to the concurrency bound, and its CPU time per call.

    python benchmarks/bench_judge.py [--latency 0.2] [--workers 8 16 32] [--rounds 20] [--repeat 3]
                                     [--checkout PATH ...] [--profile FILE]

A loopback OpenAI-compatible server (tests/openai_stub.py) answers every request after `--latency`
seconds, in a process of its own, so its CPU time is not the judge's. Each measurement is a fresh
process that judges answer correctness of `workers x rounds` answers with `workers` workers and
an empty cache (every judgment is one chat call, stored in the cache). It reports:

- the share of the bound reached: bound = calls x latency / workers (every worker always waiting
  on a reply), divided by the wall time of `judge_results`; 100 % is a judge that costs nothing;
- the CPU time per call: this process's CPU (user + system) during `judge_results`, over the calls.

`--profile FILE` writes a cProfile of the last measurement's judge, its runner's thread and every
worker thread merged (read it with `python -m pstats FILE`); the figures of a profiled measurement
include the profiler's cost. The output says the machine's load average at the start and the end.

`--checkout` measures other source trees (e.g. an export of an older commit) in the same run,
interleaved with this one, so that the load of a shared machine falls on both alike; each
figure is the median of `--repeat` runs, with their range. A rerun of the same cases is checked
to make no call, and every checkout's judged values must be equal. Targets (issue 21): at least
90 % of the bound at 32 workers and at most 1.5 ms of CPU per call.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TARGET_SHARE = 0.90
TARGET_CPU_MS = 1.5


def make_results(count: int) -> list[dict[str, Any]]:
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


def serve(latency: float) -> int:
    """The server process: print the URL, serve until stdin closes."""
    sys.path.insert(0, str(ROOT / "tests"))
    from openai_stub import StubOpenAI

    server = StubOpenAI(latency=latency).start()
    print(server.url, flush=True)
    sys.stdin.read()
    server.stop()
    return 0


def measure(url: str, workers: int, cases: int, profile: str | None) -> int:
    """One measurement, in this process (the checkout's qareport is first on sys.path)."""
    from measuring import cpu_seconds

    from qareport.judge import Judge, JudgeSettings

    results = make_results(cases)
    with tempfile.TemporaryDirectory() as folder:
        settings = JudgeSettings(base_url=url, api_key="bench", concurrency=workers,
                                 cache_path=str(Path(folder) / "judge.sqlite3"), metrics=("answer_correctness",))
        with Judge(settings) as judge:
            profiles = start_profiles() if profile else None
            before, cpu, started = resource.getrusage(resource.RUSAGE_SELF), cpu_seconds(), time.perf_counter()
            run = judge.judge_results(results)
            elapsed, cpu = time.perf_counter() - started, cpu_seconds() - cpu
            after = resource.getrusage(resource.RUSAGE_SELF)
            if profiles is not None:
                save_profiles(profiles, str(profile))
            rerun = judge.judge_results(results)
    values = [[r.get("answer_f1"), r.get("answer_eval_error")] for r in run.results]
    print(json.dumps({"elapsed": elapsed, "cpu": cpu, "system_cpu": after.ru_stime - before.ru_stime,
                      "switches": after.ru_nvcsw + after.ru_nivcsw - before.ru_nvcsw - before.ru_nivcsw,
                      "calls": run.usage.calls, "retries": run.usage.retries,
                      "rerun_calls": rerun.usage.calls, "rerun_cached": rerun.usage.cached_calls,
                      "values": values}))
    return 0


def start_profiles() -> list[Any]:
    """cProfile (of each thread's CPU time) in this thread and in every thread started from now on (the judge's workers: a
    profile of the runner's thread alone misses where the CPU goes)."""
    import cProfile

    profiles: list[Any] = [cProfile.Profile(time.thread_time)]

    def start_in_this_thread(frame: Any, event: str, arg: Any) -> None:
        profiler = cProfile.Profile(time.thread_time)
        profiles.append(profiler)
        profiler.enable()  # replaces this hook in the thread

    threading.setprofile(start_in_this_thread)
    profiles[0].enable()
    return profiles


def save_profiles(profiles: list[Any], path: str) -> None:
    """Stop profiling and write every thread's profile, merged, to `path` (read with pstats)."""
    import pstats

    threading.setprofile(None)  # type: ignore[arg-type]
    profiles[0].disable()
    merged = pstats.Stats(profiles[0])
    for profiler in profiles[1:]:
        merged.add(profiler)
    merged.dump_stats(path)


def run_child(checkout: Path, url: str, workers: int, cases: int, profile: str | None) -> dict[str, Any]:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), str(HERE)])}
    command = [sys.executable, str(Path(__file__).resolve()), "--measure", url, "--workers", str(workers),
               "--cases", str(cases)] + (["--profile", profile] if profile else [])
    done = subprocess.run(command, env=environ, capture_output=True, text=True, check=False, cwd=str(checkout))
    if done.returncode != 0:
        raise SystemExit(f"measuring {checkout} with {workers} workers failed:\n{done.stderr}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def spread(values: list[float], scale: float, unit: str) -> str:
    middle = statistics.median(values) * scale
    return f"{middle:5.1f}{unit} ({min(values) * scale:.1f}-{max(values) * scale:.1f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per request")
    parser.add_argument("--workers", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--rounds", type=int, default=20, help="calls per worker")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--checkout", action="append", default=[],
                        help="another source tree to measure too (an export of an older commit)")
    parser.add_argument("--profile", help="cProfile the judge of one measurement (the last), every thread, "
                                          "into this file")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--cases", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.latency)
    if args.measure:
        return measure(args.measure, args.workers[0], args.cases, args.profile)

    loads = os.getloadavg()
    checkouts = [Path(c).resolve() for c in args.checkout] + [ROOT]
    server = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve", "--latency",
                               str(args.latency)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        figures: dict[tuple[Path, int], list[dict[str, Any]]] = {}
        for repeat in range(args.repeat):
            for workers in args.workers:
                for checkout in checkouts:
                    last = repeat == args.repeat - 1 and workers == args.workers[-1] and checkout == ROOT
                    figures.setdefault((checkout, workers), []).append(
                        run_child(checkout, url, workers, workers * args.rounds, args.profile if last else None))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)

    print(f"{args.latency * 1000:g} ms server latency, {args.rounds} calls per worker, median of "
          f"{args.repeat} runs (range); bound = calls x latency / workers; load average "
          f"{loads[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end (1 minute, {os.cpu_count()} CPUs)")
    print(f"{'checkout':40} {'workers':>7}  {'share of the bound':>22}  {'CPU ms per call':>20}")
    values_by_workers: dict[int, list[Any]] = {}
    missed = []
    for workers in args.workers:
        for checkout in checkouts:
            runs = figures[(checkout, workers)]
            bound = workers * args.rounds * args.latency / workers
            shares = [bound / run["elapsed"] for run in runs]
            cpu = [run["cpu"] / max(run["calls"], 1) for run in runs]
            retried = sum(run.get("retries", 0) for run in runs)
            print(f"{str(checkout)[-40:]:40} {workers:7}  {spread(shares, 100, ' %'):>22}  "
                  f"{spread(cpu, 1000, ' ms'):>20}" + (f"  ({retried} retries)" if retried else ""))
            for run in runs:
                if run["calls"] != workers * args.rounds or run["rerun_calls"] != 0:
                    missed.append(f"{checkout} ({workers} workers): {run['calls']} calls, "
                                  f"{run['rerun_calls']} on the rerun")
                if values_by_workers.setdefault(workers, run["values"]) != run["values"]:
                    missed.append(f"{checkout} ({workers} workers): other judged values")
            if checkout == ROOT and workers == max(args.workers) and statistics.median(shares) < TARGET_SHARE:
                missed.append(f"{statistics.median(shares):.0%} of the bound at {workers} workers "
                              f"(target {TARGET_SHARE:.0%})")
            if checkout == ROOT and statistics.median(cpu) * 1000 > TARGET_CPU_MS:
                missed.append(f"{statistics.median(cpu) * 1000:.2f} ms CPU per call at {workers} workers "
                              f"(target {TARGET_CPU_MS} ms)")
    print("targets met" if not missed else "MISSED: " + "; ".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
