"""How consistent a case is over its attempts, and the suite's pass@k and pass^k.

A case answered several times (`CaseResult.attempts`) has, per attempt, a pass verdict
(`kinds.attempt_passed`: every kind's rule, `Kind.passes`, said by `Kind.pass_rule`). From them:

- per case: how many attempts passed ("2/3"), the spread of its main metric over its attempts (the
  highest value less the lowest), and whether it is *flaky* (some attempts passed, some did not);
- per suite: pass@k (at least one of k attempts passes) and pass^k (all k pass, as tau-bench defines
  it), each the mean over cases of the unbiased estimator from the case's n attempts of which c
  passed (`attempt_statistics.suite_pass_rates`). k is the number of attempts most cases have
  (the larger on a tie); a case with more attempts is estimated from all of them, a case with fewer
  is left out and counted (`too_few_attempts`). Cases without a pass verdict (no kind with a rule
  has a value for them) are left out too. When the kinds of case (conversation cases, Q&A questions)
  were run a different number of times, each kind gets its own pass@k with its own k: one k for the
  whole suite would cover only the kind that has it and leave the other out.

Runs without attempts have none of this: every function returns None, an empty mapping or an empty tuple.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from qareport import kinds
from qareport.attempt_statistics import PassRates, suite_pass_rates
from qareport.evaluation_options import PassRules
from qareport.records import CaseKind, CaseResult


@dataclass(frozen=True, slots=True)
class CaseConsistency:
    """One case's attempts at a glance."""

    attempts: int
    passed: int | None  # None: no attempt has a pass verdict
    metric: str | None  # the main metric (`kinds.main_metric`), None without a value
    low: float | None  # its lowest and highest value over the attempts
    high: float | None

    @property
    def spread(self) -> float | None:
        # to the digits a score shows and beyond: attempts that agree spread 0, not a residue like 8e-17
        return None if self.low is None or self.high is None else round(self.high - self.low, 9) + 0.0

    @property
    def flaky(self) -> bool:
        """Some attempts passed and some did not."""
        return self.passed is not None and 0 < self.passed < self.attempts

    @property
    def passed_text(self) -> str | None:
        return None if self.passed is None else f"{self.passed}/{self.attempts}"


@dataclass(frozen=True, slots=True)
class SuiteConsistency:
    """The suite's pass@k and pass^k, with what they rest on."""

    rates: PassRates
    cases_with_attempts: int  # cases answered more than once
    flaky: int  # cases whose attempts disagree
    uneven: bool  # the cases do not all have the same number of attempts
    cases_of: str | None = None  # None: every case of the run; else the kind of case covered ("Q&A questions")

    def describe(self) -> str:
        """One sentence for the Summary and the Statistics sheet."""
        rates = self.rates
        text = (f"{self.cases_of}: " if self.cases_of else "") + (
                f"pass@{rates.k} {rates.pass_at_k:.2f}, pass^{rates.k} {rates.pass_hat_k:.2f} over {rates.cases} "
                f"case(s) with {rates.k} or more attempts; {self.flaky} flaky")
        if rates.too_few_attempts:
            text += f"; {rates.too_few_attempts} case(s) with fewer than {rates.k} attempts or no verdict left out"
        elif self.uneven:
            text += f"; cases with more than {rates.k} attempts estimated from all of theirs"
        return text


def case_consistency(result: CaseResult, run: kinds.RunKinds) -> CaseConsistency | None:
    """A case's attempts at a glance, its main metric as the run's kinds say it; None for a case
    answered once."""
    if not result.attempts:
        return None
    verdicts = [attempt.passed for attempt in result.attempts if attempt.passed is not None]
    metric = run.main_metric(result)
    values = [] if metric is None else [
        value for attempt in result.attempts if (value := run.case_metrics(attempt).get(metric)) is not None]
    return CaseConsistency(
        attempts=len(result.attempts),
        passed=sum(verdicts) if verdicts else None,
        metric=metric,
        low=min(values, default=None),
        high=max(values, default=None),
    )


CASES_OF: dict[CaseKind, str] = {"conversation": "conversation cases", "qa": "Q&A questions"}


def suite_consistency(results: Sequence[CaseResult], run: kinds.RunKinds) -> tuple[SuiteConsistency, ...]:
    """The suite's pass@k and pass^k: one line over every case when its kinds of case share k (the
    number of attempts most of each kind's cases have), else one line per kind of case, each with its
    own k (`SuiteConsistency.cases_of`). Empty when no case has attempts, or none has a pass verdict."""
    whole = _consistency(results, run)
    if whole is None:
        return ()
    parts = {kind: part for kind, label in CASES_OF.items()
             if (part := _consistency([r for r in results if r.case.kind == kind], run, label)) is not None}
    if len({part.rates.k for part in parts.values()}) <= 1:
        return (whole,)
    return tuple(parts.values())


def _consistency(results: Sequence[CaseResult], run: kinds.RunKinds,
                 cases_of: str | None = None) -> SuiteConsistency | None:
    """None when no case has attempts, or none has a pass verdict."""
    with_attempts = [c for r in results if (c := case_consistency(r, run)) is not None]
    if not with_attempts:
        return None
    counts = [(c.attempts, c.passed) for c in with_attempts if c.passed is not None]
    if not counts:
        return None
    sizes = Counter(n for n, _ in counts)
    k = max(sizes, key=lambda n: (sizes[n], n))
    rates = suite_pass_rates(counts, k=k)
    assert rates is not None  # k is one of the counts' sizes
    rates = PassRates(rates.k, rates.pass_at_k, rates.pass_hat_k, rates.cases,
                      rates.too_few_attempts + len(with_attempts) - len(counts))
    return SuiteConsistency(rates, len(with_attempts), sum(c.flaky for c in with_attempts), len(sizes) > 1,
                            cases_of)


def pass_rules_text(present: kinds.RunKinds, rules: PassRules) -> str:
    """The pass rules of the kinds `present` in a run, with the thresholds it used (`rules`), in one line."""
    return "; ".join(f"{kind.label}: {rule}" for kind in present if (rule := kind.pass_rule(rules)))
