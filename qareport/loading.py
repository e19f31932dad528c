"""Test cases and responses from files into records, paired by case id (the loading modules,
`input_files`, `testcase_loading` and `response_loading`, are the only ones that read input files).

Nothing here raises on bad input. Every problem becomes a `Problem` (file, line where known, what
is wrong and how to fix it), and whatever is still valid is kept, so one bad file or record never
loses the rest of a run.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from qareport.collector import collector_paused
from qareport.input_problems import ProblemCollector
from qareport.kinds import RunKinds, catalogue
from qareport.records import Response, Suite
from qareport.response_loading import load_responses
from qareport.testcase_loading import load_test_cases


def load_suite(
    testcase_paths: Iterable[str | Path], response_paths: Iterable[str | Path], *,
    kinds: RunKinds | None = None,
) -> Suite:
    """Test cases and responses, cross-checked: unknown ids and missing responses are problems.
    Without any response path the test cases are checked alone (`qareport validate TESTCASES`).
    `kinds`: the run's kinds, which read the targets and outputs (None: the catalogue's)."""
    kinds = kinds if kinds is not None else catalogue()
    response_paths = list(response_paths)
    problems = ProblemCollector(known=kinds)
    with collector_paused():  # everything loaded lives on: see `collector`
        cases, case_inputs = load_test_cases(testcase_paths, problems, kinds=kinds)
        attempts: dict[str, tuple[Response, ...]] = {}
        responses, response_inputs = load_responses(response_paths, problems, attempts)
    known = {case.id for case in cases}
    lost_ids = {u.case_id: u for u in problems.unloaded if u.case_id}
    lost_files = [u for u in problems.unloaded if u.case_id is None]
    for case_id, response in responses.items():
        if case_id in known:
            continue
        if case_id in lost_ids:
            message = (f"response for case id '{case_id}', whose test case is in the part of "
                       f"{lost_ids[case_id].path} that could not be read (line {lost_ids[case_id].line}); "
                       "fix that file")
        elif lost_files:
            message = (f"response for case id '{case_id}', which no loaded test case has; its test case may be in "
                       f"{', '.join(sorted({u.path for u in lost_files}))}, which could not be read")
        else:
            message = f"response for unknown case id '{case_id}'; check the id or add the test case"
        problems.add(response.location.path, response.location.line, message, case_id)
    for case in cases:
        if response_paths and case.id not in responses and case.turns:
            problems.add(
                case.location.path,
                case.location.line,
                f"case '{case.id}' has no response; it is reported as missing",
                case.id,
            )
    return Suite(
        cases=tuple(cases),
        responses={k: v for k, v in responses.items() if k in known},
        problems=tuple(problems.problems),
        inputs=(*case_inputs, *response_inputs),
        unloaded=tuple(problems.unloaded),
        attempts={k: v for k, v in attempts.items() if k in known},
    )
