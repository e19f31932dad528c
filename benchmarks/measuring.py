"""What the benchmarks measure a run with: its peak memory, and the scope qareport's pipeline runs in."""

from __future__ import annotations

import contextlib
import resource


def peak_rss_mb() -> float:
    """This process's peak resident memory. VmHWM, not getrusage's ru_maxrss: on Linux the latter
    keeps the parent's size across fork and exec, so a child of a big parent reports the parent."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """The CPU time this process has used (user and system): on a shared machine it varies less
    than wall time, since waiting for a core another process holds does not count."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pipeline_scope() -> contextlib.AbstractContextManager:
    """The scope `run_pipeline` runs in (`qareport.collector.run_scope`: the loaded data and the
    results set aside from the garbage collector until the run ends), where the checkout has one."""
    try:
        from qareport.collector import run_scope
    except ImportError:  # an older checkout
        return contextlib.nullcontext()
    return run_scope()
