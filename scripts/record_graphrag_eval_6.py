"""Record what graphrag-eval 6.6.1 itself gives on qareport's differential datasets, for the tests.

    python scripts/record_graphrag_eval_6.py [--download] [--out tests/data/graphrag_eval_6_6_1.json]

Runs the real graphrag-eval 6.6.1 (imported from its wheel in ~/.cache/qareport/wheels, where
`.ci/run` downloads it, see `benchmarks/graphrag_eval_wheels.py`) on:

* the traps of `benchmarks/ge6_suite.py` (one question per rule that is easy to get wrong);
* two generated suites (multi-group questions, error responses with and without steps, the name
  rules, the new step kinds), 200 questions each;
* aggregates with custom metrics: the results of a generated suite with custom outputs (numbers,
  booleans, text, nulls) added, aggregated under a configuration that declares them.

It writes 6.6.1's results (each reference step reduced to its `matches`) and aggregates, with a
fingerprint of each dataset's inputs, into one JSON file, so that `tests/test_graphrag_eval_6.py`
compares qareport with 6.6.1 even where the wheel is absent; the datasets come from the
generators, so a changed generator shows as a changed fingerprint (record again). No
LLM is called (the configurations have no effect on the steps; answers are not judged).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from ge6_suite import (  # noqa: E402
    CUSTOM_CONFIG,
    compact_result,
    ge6_inputs,
    generate_ge6_suite,
    inputs_digest,
    trap_suite,
    with_custom_outputs,
)
from graphrag_eval_wheels import import_graphrag_eval  # noqa: E402

DEFAULT_OUT = ROOT / "tests" / "data" / "graphrag_eval_6_6_1.json"
GENERATED = ((101, 150), (202, 150))  # (seed, questions)


def datasets() -> list[tuple[str, list[dict], dict[str, dict]]]:
    """(name, qa_dataset, responses) of every dataset recorded, from the generators."""
    return [("traps", *trap_suite())] + [
        (f"generated seed {seed}", *generate_ge6_suite(questions, seed)) for seed, questions in GENERATED]


def record(graphrag_eval: Any) -> dict[str, Any]:
    recorded = []
    for name, qa_dataset, responses in datasets():
        results = asyncio.run(graphrag_eval.run_evaluation(*ge6_inputs(qa_dataset, responses)))
        recorded.append({"name": name, "inputs_sha256": inputs_digest(qa_dataset, responses),
                         "results": [compact_result(result) for result in results],
                         "aggregates": graphrag_eval.compute_aggregates(results)})
        if name == "generated seed 101":
            samples = with_custom_outputs(results, 7)
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "config.yaml"
        config.write_text(CUSTOM_CONFIG, encoding="utf-8")
        custom_aggregates = graphrag_eval.compute_aggregates(samples, config)
    return {
        "recorded_with": "graphrag-eval 6.6.1",
        "datasets": recorded,
        "custom_metrics": {"from": "generated seed 101", "seed": 7, "aggregates": custom_aggregates},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--download", action="store_true", help="pip download the wheel when it is absent")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    graphrag_eval = import_graphrag_eval("6.6.1", download=args.download)
    if graphrag_eval is None:
        raise SystemExit("graphrag-eval 6.6.1's wheel is not in ~/.cache/qareport/wheels ($QAREPORT_WHEELS); "
                         "give --download")
    logging.disable(logging.CRITICAL)  # 6.6.1 logs every output it cannot parse
    document = record(graphrag_eval)
    args.out.write_text(json.dumps(document, ensure_ascii=False, indent=None, separators=(",", ":")) + "\n",
                        encoding="utf-8")
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
