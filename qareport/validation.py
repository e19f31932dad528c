"""`qareport validate`: what `qareport run` would refuse, found without scoring anything for the report.

Validation goes the run's own way: the same settings (options, qareport.yaml, a graphrag-eval 6.x
configuration), the same loading (`load_suite`) and the same evaluation (`evaluate_suite`, without
the judge), so every input problem a run lists, validation lists, under the same steps rules. Given
test cases alone, it also checks their reference steps as any response would find them (an empty
group under 6.x, a 6.x-only step under 5.x): the problems a run would report for every case.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qareport.evaluation import evaluate_suite, reference_problems
from qareport.ge6_config import read_ge6_config
from qareport.kinds.custom_evaluations import kinds_for_run
from qareport.loading import load_suite
from qareport.preflight import check_inputs_exist
from qareport.records import Problem, Suite, TermMatching
from qareport.settings import resolve_settings


@dataclass(frozen=True, slots=True)
class Validation:
    suite: Suite
    problems: tuple[Problem, ...]  # loading's, then evaluation's (or the reference steps')
    steps_semantics: int


def validate_inputs(
    testcases: Sequence[str],
    responses: Sequence[str] = (),
    *,
    steps_semantics: int | None = None,
    match_terms_by: TermMatching | None = None,
    config_path: str | None = None,
    config_ge6: str | None = None,
) -> Validation:
    """Every problem `qareport run` would report for these inputs and options (never calls a judge,
    writes nothing). Raises what `run` raises before any work: a missing path, a bad configuration."""
    check_inputs_exist("TESTCASES", testcases)
    check_inputs_exist("--responses", responses)
    settings = resolve_settings(
        run_options={"match_terms_by": match_terms_by, "steps_semantics": steps_semantics, "config_ge6": config_ge6},
        config_path=config_path, with_judge=False,
    )
    # a run stops on a configuration it cannot use; its custom LLM metrics are among the run's kinds
    ge6 = read_ge6_config(settings.run.config_ge6) if settings.run.config_ge6 else None
    run_kinds = kinds_for_run(ge6.custom_evaluations if ge6 is not None else ())
    semantics = settings.run.steps_semantics
    suite = load_suite(testcases, responses, kinds=run_kinds)
    if responses:
        found = evaluate_suite(suite, options=settings.run.evaluation, kinds=run_kinds).problems
    else:
        found = tuple(problem for case in suite.cases
                      for problem in reference_problems(case, semantics, kinds=run_kinds))
    return Validation(suite, (*suite.problems, *found), semantics)
