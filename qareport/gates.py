"""Gates: what makes a run fail a CI pipeline or a scheduled job (exit status 1), decided from the
report model after the workbook is written and any email sent.

- `--fail-on-regression`: the comparison with `--baseline` found a regressed case: one that lost its
  status or moved in its single run, or cases whose attempts all moved down in more numbers than
  luck explains (`regression_gate`).
- `--fail-under METRIC=VALUE`: a headline metric is below VALUE. METRIC is a headline metric's key
  (`macro_recall`, `steps_score`, ...) or a tag-qualified one (`macro_recall@weo`: the mean over the
  evaluated cases with that tag). VALUE is a share between 0 and 1, as every metric is (80 % is
  0.8). A tag that no test case has is a usage error as soon as the suite is loaded; a metric that
  no evaluated case has fails its gate: a gate never passes on nothing.
- an incomplete run (fewer than `--min-evaluated` of the cases evaluated) always fails.

Exit status 2 stays for usage and input errors.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from qareport import kinds
from qareport.case_record import CaseRow
from qareport.comparison import Comparison
from qareport.errors import UsageError
from qareport.means import mean_over_evaluated
from qareport.report import Report


@dataclass(frozen=True, slots=True)
class Threshold:
    """`--fail-under METRIC[@TAG]=VALUE`."""

    metric: str
    minimum: float
    tag: str | None = None

    @property
    def name(self) -> str:
        return f"{self.metric}@{self.tag}" if self.tag else self.metric


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """One gate's outcome, with the sentence the console prints."""

    gate: str
    passed: bool
    why: str


def parse_threshold(text: str) -> Threshold:
    """`macro_recall=0.8` or `macro_recall@weo=0.8`; a `UsageError` says what is wrong."""
    name, equals, value = text.partition("=")
    metric, _, tag = name.strip().partition("@")
    known = kinds.catalogue().headline_metric_keys()
    if not equals or not metric:
        raise UsageError(f"--fail-under {text!r}: write METRIC=VALUE, e.g. macro_recall=0.8")
    if metric not in known:
        raise UsageError(f"--fail-under {text!r}: unknown metric '{metric}'; use one of {', '.join(known)}")
    try:
        minimum = float(value)
    except ValueError:
        raise UsageError(f"--fail-under {text!r}: the value must be a number (got {value!r})") from None
    if not math.isfinite(minimum):
        raise UsageError(f"--fail-under {text!r}: the value must be a finite number")
    if not 0 <= minimum <= 1:
        hint = f"; for {minimum:g} % write {name.strip()}={minimum / 100:g}" if 1 < minimum <= 100 else ""
        raise UsageError(f"--fail-under {text!r}: the value is a share between 0 and 1, as the metric is{hint}")
    if "@" in name and not tag.strip():
        raise UsageError(f"--fail-under {text!r}: name a tag after '@', e.g. {metric}@weo")
    return Threshold(metric, minimum, tag.strip() or None)


def check_gate_tags(thresholds: Sequence[Threshold], tags: Iterable[str]) -> None:
    """Every tag a gate names is a tag of some test case: a misspelt tag is a usage error, found as
    soon as the suite is loaded, not a gate that fails on nothing after the run."""
    known = set(tags)
    for threshold in thresholds:
        if threshold.tag is not None and threshold.tag not in known:
            shown = ", ".join(sorted(known)[:20]) + (", ..." if len(known) > 20 else "")
            raise UsageError(f"--fail-under {threshold.name}={threshold.minimum:g}: no test case has the tag "
                             f"'{threshold.tag}' (tags: {shown or 'none'}); check the spelling")


def metric_mean(rows: Iterable[CaseRow], metric: str, *, tag: str | None = None) -> tuple[float | None, int]:
    """The mean of a metric over the evaluated cases (with `tag`, only those in that tag), and how
    many cases it is over (`means.mean_over_evaluated`, as the Summary's headline)."""
    return mean_over_evaluated(rows, metric, tag=tag)


def regression_gate(comparison: Comparison | None) -> GateVerdict:
    """`--fail-on-regression`: fails on a case that lost its status or moved in a single run (one run
    per case cannot tell a change from a flip, which the verdict says), and on cases whose attempts
    separated downwards when there are more of them than luck alone explains at the 5 % level; fewer
    pass, with how many luck would give, so that a suite of unchanged flaky cases fails rarely."""
    gate = "--fail-on-regression"
    if comparison is None or not comparison.cases_with("regression"):
        return GateVerdict(gate, True, "no case regressed since the baseline")
    regressed, counted, chance = (comparison.cases_with("regression"), comparison.regressions_beyond_chance,
                                  comparison.chance)
    why = f"{regressed} case(s) regressed since the baseline"
    if chance is None:
        why += " (one run per case cannot tell a change from a flip)"
    elif chance.regressed:
        why += (f"; {chance.regressed} of them on every attempt, about {chance.expected:.2g} expected by chance among "
                f"the {chance.cases} cases with attempts (chance of {chance.regressed} or more {chance.p_value:.2g})"
                + ("" if chance.beyond_chance() else ": no more than luck explains"))
    return GateVerdict(gate, counted == 0, why)


def check_gates(report: Report, *, fail_on_regression: bool = False,
                thresholds: Sequence[Threshold] = ()) -> tuple[GateVerdict, ...]:
    """Every gate asked for, in the order given; an incomplete run is a failed gate of its own."""
    verdicts = []
    if report.incomplete:
        verdicts.append(GateVerdict("complete run", False, report.incomplete))
    if fail_on_regression:
        verdicts.append(regression_gate(report.comparison))
    for threshold in thresholds:
        mean, cases = metric_mean(report.rows, threshold.metric, tag=threshold.tag)
        gate = f"--fail-under {threshold.name}={threshold.minimum:g}"
        if mean is None:
            scope = f"tag '{threshold.tag}'" if threshold.tag else "the run"
            verdicts.append(GateVerdict(gate, False, f"no evaluated case of {scope} has {threshold.metric}"))
        else:
            passed = mean >= threshold.minimum
            verdicts.append(GateVerdict(
                gate, passed,
                f"{threshold.name} is {mean:.4f} over {cases} case(s), "
                f"{'at least' if passed else 'below'} {threshold.minimum:g}",
            ))
    return tuple(verdicts)
