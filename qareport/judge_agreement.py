"""The judge against the analysts: how often the people reviewing the cases found the LLM judge wrong.

Analysts mark cases in the Overview's `review` column. For the judge, three forms count (case, spaces
around words and around the colon and commas aside):

    ok                                  the judge was right on every judged metric shown on the case's
                                        Overview row
    judge wrong                         the judge was wrong on every judged metric shown on the row
    judge wrong: correctness, relevance the judge was wrong on the metrics named, right on the other
                                        judged metrics shown on the row (a review naming none of the
                                        metrics the case was judged on is not counted)

A review speaks of what the analyst saw: the row shows answer correctness, answer relevance and the
custom LLM metrics, not the retrieval metrics the judge gave a step (they are in no Overview column),
so `ok` and a plain `judge wrong` say nothing of those; `judge wrong: retrieval` names them.

The metrics are named `correctness` (answer correctness: `answer correctness`, `answer f1` also
read), `relevance` (`answer relevance`), `retrieval` (the retrieval answer metrics and the LLM-judged
context metrics: `retrieval answer`, `retrieval context` also read), and a custom LLM metric by its
evaluation's name. Other reviews (`known issue`, `fixed`, `needs a look`) say nothing of the judge.

A *judgment* is one judged metric of one case in one run (a metric the judge gave a value for). Each
stored case row keeps its judgments (`judged`: metric name -> the case's value), so the history can be
counted from earlier workbooks. Over several runs a judgment counts once: the same case, with the same
test definition and the same judged value, is the same judgment whatever the number of weeks its review
is carried; its latest review decides.

Per metric: the judgments reviewed, those found wrong, the share found wrong and its Wilson 95 %
interval. A metric with at least `MIN_REVIEWED` reviewed judgments whose interval lies wholly above
`DISAGREEMENT_THRESHOLD` is flagged: the judge disagrees with the analysts on it, do not gate on it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from qareport import kinds
from qareport.case_record import CaseRow
from qareport.clustered_statistics import wilson_interval as share_interval
from qareport.judged_metrics import JUDGED, JUDGED_METRICS, case_verdict
from qareport.records import CaseResult, Location, Problem, Review

MIN_REVIEWED = 20
"""Reviewed judgments a metric needs before it can be flagged."""
DISAGREEMENT_THRESHOLD = 0.10
"""A metric is flagged when its share found wrong is above this with 95 % confidence (the whole
Wilson interval above it)."""
CUSTOM_KIND = "custom_evaluations"
AGREEMENT_WORDS = "judge vs analysts (reviewed judgments found wrong)"


@dataclass(frozen=True, slots=True)
class AgreementMetric:
    """A judged metric as an analyst names it in a review."""

    name: str
    label: str
    keys: tuple[str, ...]  # the `judged_metrics.JUDGED_METRICS` it covers
    aliases: tuple[str, ...] = ()
    on_row: bool = True  # shown on the case's Overview row: an `ok` there speaks of it


BUILTIN_METRICS = (
    AgreementMetric("correctness", "answer correctness", ("answer_f1",), ("answer correctness", "answer f1")),
    AgreementMetric("relevance", "answer relevance", ("answer_relevance",), ("answer relevance",)),
    AgreementMetric("retrieval", "retrieval (LLM)", ("retrieval_answer_recall", "retrieval_answer_precision",
                                                     "retrieval_context_recall", "retrieval_context_precision"),
                    ("retrieval answer", "retrieval context"), on_row=False),
)


def wilson_interval(successes: int, trials: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion `successes / trials`: the proportions the
    score test does not reject at `1 - confidence` (`clustered_statistics.wilson_interval` of the
    share). ValueError when `trials` is not positive or `successes` is not in 0..trials: a share of
    nothing has no interval."""
    if trials <= 0 or not 0 <= successes <= trials or not 0 < confidence < 1:
        raise ValueError(f"wilson_interval needs 0 <= successes <= trials and trials > 0, 0 < confidence < 1 "
                         f"(got {successes} of {trials}, confidence {confidence})")
    return share_interval(successes / trials, trials, level=confidence)


# --- reading a review ----------------------------------------------------------------------------------

_JUDGE_WRONG = re.compile(r"judge\s*wrong\s*(?::(?P<names>.*))?", re.DOTALL)


def metric_word(text: str) -> str:
    """A metric's name the way an analyst means it: case, `_`, `-` and runs of spaces aside."""
    return " ".join(text.replace("_", " ").replace("-", " ").split()).casefold()


def known_names(custom: Iterable[str] = ()) -> dict[str, str]:
    """Every word that names a metric in a review -> the metric's name."""
    names = {metric_word(word): metric.name for metric in BUILTIN_METRICS for word in (metric.name, *metric.aliases)}
    for name in custom:
        names.setdefault(metric_word(name), name)
    return names


@dataclass(frozen=True, slots=True)
class JudgeReview:
    """What a review says of the judge on one case."""

    all_wrong: bool = False  # plain `judge wrong`
    wrong: frozenset[str] = frozenset()  # the metrics named wrong
    unknown: tuple[str, ...] = ()  # words after `judge wrong:` that name no metric

    def found_wrong(self, metric: str) -> bool:
        return self.all_wrong or metric in self.wrong


def read_judge_review(verdict: str | None, names: Mapping[str, str]) -> JudgeReview | None:
    """The review's word on the judge; None when it says nothing of it (`known issue`, empty, ...).
    `judge wrong:` followed only by words that name no metric says nothing either (which metric was
    meant cannot be told): those words are in `unknown`, for a problem to say so."""
    text = " ".join((verdict or "").split()).casefold()
    if text == "ok":
        return JudgeReview()
    found = _JUDGE_WRONG.fullmatch(text)
    if found is None:
        return None
    words = [metric_word(word) for word in re.split(r"[,;]", found.group("names") or "") if metric_word(word)]
    if not words:
        return JudgeReview(all_wrong=True)
    wrong = frozenset(names[word] for word in words if word in names)
    unknown = tuple(word for word in words if word not in names)
    return JudgeReview(wrong=wrong, unknown=unknown)


def review_problems(reviews: Mapping[str, Review], source: str | Path, *, custom: Iterable[str] = ()) -> list[Problem]:
    """A problem for each review whose `judge wrong:` names a metric qareport does not know (a typo):
    the other metrics it names still count; with none known, the review is not counted."""
    names = known_names(custom)
    problems = []
    for case_id, review in reviews.items():
        read = read_judge_review(review.verdict, names)
        if read is None or not read.unknown:
            continue
        words = ", ".join(repr(word) for word in read.unknown)
        counted = "the other metrics it names are counted" if read.wrong else "it is not counted"
        problems.append(Problem(Location(str(source)), (
            f"sheet 'Overview', case {case_id!r}: the review {review.verdict!r} names {words}, which is no judged "
            f"metric; {counted} against the judge. {review_form_help(custom)}"), case_id=case_id))
    return problems


def review_form_help(custom: Iterable[str] = ()) -> str:
    """How to say which judged metric was wrong."""
    names = ", ".join([metric.name for metric in BUILTIN_METRICS] + list(custom))
    return f"Write 'judge wrong: METRIC' (several separated by commas), METRIC one of: {names}."


# --- a case's judgments -----------------------------------------------------------------------------


def custom_metric_names(run: kinds.RunKinds) -> tuple[str, ...]:
    """The custom LLM metrics of the run's configuration (their evaluations' names)."""
    kind = run.named(CUSTOM_KIND)
    return tuple(evaluation.name for evaluation in getattr(kind, "evaluations", ()))


def case_judgments(result: CaseResult, run: kinds.RunKinds) -> dict[str, float | str]:
    """The judged metrics of a case (name -> its value: a metric's mean over the parts the judge gave a
    value for; a custom metric's first output). Empty for a case that was not evaluated."""
    if result.status != "success":
        return {}
    judged: dict[str, float | str] = {}
    by_key = {spec.key: spec for spec in JUDGED_METRICS}
    for metric in BUILTIN_METRICS:
        values = []
        for key in metric.keys:
            verdict, value = case_verdict(by_key[key], result)
            if verdict == JUDGED and value is not None:
                values.append(value)
        if values:
            judged[metric.name] = round(fmean(values), 9)
    kind = run.named(CUSTOM_KIND)
    for evaluation in getattr(kind, "evaluations", ()):
        outputs = [turn.qa.value(key) for turn in result.turns if turn.qa is not None for key in evaluation.output_keys]
        shown = [value for value in outputs if value is not None]
        if shown:
            first = shown[0]
            number = isinstance(first, (int, float)) and not isinstance(first, bool) and math.isfinite(first)
            judged[evaluation.name] = round(float(first), 9) if number else str(first)[:200]
    return judged


def stored_judgments(raw: Any) -> dict[str, float | str]:
    """A stored row's `judged` mapping, whatever an edit left: names to finite numbers or texts."""
    if not isinstance(raw, Mapping):
        return {}
    kept: dict[str, float | str] = {}
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            continue
        if isinstance(value, (int, float)) and not math.isfinite(value):
            continue
        kept[str(name)] = value
    return kept


# --- the figures ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Agreement:
    """One judged metric against the analysts' reviews, over this run or over the history."""

    metric: str
    label: str
    reviewed: int  # judgments reviewed (`ok` or `judge wrong`)
    wrong: int  # of those, found wrong

    @property
    def share_wrong(self) -> float | None:
        return self.wrong / self.reviewed if self.reviewed else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.wrong, self.reviewed) if self.reviewed else None

    @property
    def flagged(self) -> bool:
        """Enough reviews, and a share found wrong above the threshold with 95 % confidence."""
        interval = self.interval
        return self.reviewed >= MIN_REVIEWED and interval is not None and interval[0] > DISAGREEMENT_THRESHOLD

    def describe(self) -> str:
        """"answer correctness 3 of 25 (12 %, 95 % 4–30 %)": found wrong of reviewed."""
        if not self.reviewed:
            return f"{self.label} none reviewed"
        low, high = self.interval or (0.0, 0.0)
        return (f"{self.label} {self.wrong} of {self.reviewed} ({_percent(self.share_wrong)}, "
                f"95 % {_percent(low, sign=False)}–{_percent(high)})")

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval or (None, None)
        return {"metric": self.metric, "label": self.label, "reviewed": self.reviewed, "wrong": self.wrong,
                "share_wrong": self.share_wrong, "low": low, "high": high, "flagged": self.flagged}


def _percent(value: float | None, *, sign: bool = True) -> str:
    if value is None:
        return ""
    return f"{value * 100:.0f}" + (" %" if sign else "")


@dataclass(frozen=True, slots=True)
class JudgeAgreement:
    """The judge against the analysts, per judged metric: over this run (the reviews carried onto its
    cases) and, with a history, over every run of it (each judgment once)."""

    this_run: tuple[Agreement, ...]
    history: tuple[Agreement, ...] | None = None  # None without --history
    history_runs: int = 0

    def flagged(self) -> tuple[Agreement, ...]:
        """The metrics to flag, each once (over the history when there is one, where more is reviewed)."""
        chosen = {item.metric: item for item in self.this_run if item.flagged}
        chosen.update({item.metric: item for item in self.history or () if item.flagged})
        return tuple(chosen.values())

    def warnings(self) -> tuple[str, ...]:
        return tuple(f"the judge disagrees with the analysts on {item.label}: do not gate on it"
                     for item in self.flagged())

    def lines(self) -> tuple[str, ...]:
        """The Summary's words: this run, the history, the flags; none while nothing is reviewed."""
        def listed(items: Sequence[Agreement]) -> str:
            if not any(item.reviewed for item in items):
                return "none reviewed"
            return "; ".join(item.describe() for item in items)

        if not any(item.reviewed for item in (*self.this_run, *(self.history or ()))):
            return ()  # nothing reviewed yet: the Statistics table says how to start
        lines = [f"{AGREEMENT_WORDS}, this run: {listed(self.this_run)}"]
        if self.history is not None:
            lines.append(f"{AGREEMENT_WORDS}, {self.history_runs} runs: {listed(self.history)}")
        return (*lines, *(warning.upper()[:1] + warning[1:] for warning in self.warnings()))

    def to_dict(self) -> dict[str, Any]:
        return {"this_run": [item.to_dict() for item in self.this_run],
                "history": [item.to_dict() for item in self.history] if self.history is not None else None,
                "history_runs": self.history_runs, "min_reviewed": MIN_REVIEWED,
                "threshold": DISAGREEMENT_THRESHOLD, "flagged": [item.metric for item in self.flagged()]}


ReviewedRun = tuple[Sequence[CaseRow], Mapping[str, Review]]
"""A run's stored case rows and the reviews typed on (or carried onto) its cases."""


_HIDDEN = frozenset(metric.name for metric in BUILTIN_METRICS if not metric.on_row)


def judgment_found_wrong(read: JudgeReview, metric: str, judged: Iterable[str]) -> bool | None:
    """Whether a case's review found the judge wrong on `metric` (one of `judged`, the metrics the case
    was judged on); None when it says nothing of it: it names only unknown words, or only metrics the
    case was not judged on, or `metric` is not on the case's row and the review does not name it."""
    if read.unknown and not read.wrong:
        return None
    if read.wrong and not read.all_wrong and not read.wrong & set(judged):
        return None  # it names only metrics the case was not judged on: nothing to say of the others
    if metric not in read.wrong and metric in _HIDDEN:
        return None  # not on the row the analyst reviewed, and not named
    return read.found_wrong(metric)


def count_reviewed(runs: Iterable[ReviewedRun], *, custom: Iterable[str] = ()) -> dict[str, tuple[int, int]]:
    """Metric name -> (judgments reviewed, found wrong), over `runs` in the order given (oldest first):
    a judgment (case id, test definition, metric, value) counts once, with its latest review; `ok` and a
    plain `judge wrong` count for the metrics shown on the case's row only (see the module's docstring)."""
    names = known_names(custom)
    verdicts: dict[tuple[str, str, str, str], tuple[str, bool]] = {}
    for rows, reviews in runs:
        for row in rows:
            case_id = row.case_id
            review = reviews.get(case_id)
            read = read_judge_review(review.verdict if review else None, names)
            if read is None:
                continue
            for metric, value in row.judged.items():
                wrong = judgment_found_wrong(read, metric, row.judged.keys())
                if wrong is not None:
                    key = (case_id, row.definition_hash or "", metric, repr(value))
                    verdicts[key] = (metric, wrong)
    counts: dict[str, tuple[int, int]] = {}
    for metric, wrong in verdicts.values():
        reviewed, found = counts.get(metric, (0, 0))
        counts[metric] = (reviewed + 1, found + int(wrong))
    return counts


def _metric_order(names: Iterable[str]) -> list[str]:
    builtin = [metric.name for metric in BUILTIN_METRICS]
    found = set(names)
    return [name for name in builtin if name in found] + sorted(found - set(builtin))


def _label(name: str) -> str:
    return next((metric.label for metric in BUILTIN_METRICS if metric.name == name), name)


def judge_agreement(this_run: ReviewedRun, *, history: Sequence[ReviewedRun] | None = None,
                    custom: Iterable[str] = ()) -> JudgeAgreement | None:
    """The figures for a run (`this_run`: its rows and the reviews carried onto them) and, when a
    history is given, over `history` (earlier runs, oldest first) and this run. None when no run has
    a judged metric (a run without the judge, and no judged history)."""
    custom = tuple(custom)
    runs = [*(history or ()), this_run]
    present = {name for rows, _ in runs for row in rows for name in row.judged}
    if not present:
        return None
    order = _metric_order(present)

    def figures(counted: Mapping[str, tuple[int, int]]) -> tuple[Agreement, ...]:
        return tuple(Agreement(name, _label(name), *counted.get(name, (0, 0))) for name in order)

    over_history = figures(count_reviewed(runs, custom=custom)) if history is not None else None
    return JudgeAgreement(figures(count_reviewed([this_run], custom=custom)), over_history,
                          len(runs) if history is not None else 0)
