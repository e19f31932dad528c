"""A random sample of judgments to audit, and the judge's calibration measured on it.

The reviews analysts write are on the cases they chose to look at: the odd ones, the failures, the
ones a colleague asked about. They find bugs, but the share of them the judge got wrong says little
about the judge: for a planted judge wrong 8 % of the time, reviews of the cases it failed read 12 %
(tests/test_judge_audit.py). An estimate needs a sample the analysts did not choose.

`draw_audit_sample` picks the judgments to audit: each judgment of the run (a judged metric of a case,
as `judge_agreement.case_judgments` records it, of the metrics shown on the case's Overview row) gets
a rank, the SHA-256 of the seed, its case id and its metric, and the `size` of lowest rank are the
sample. The hash makes it a uniform random sample without replacement that is the same for the same
seed and suite whatever the order the cases were read in, and a case added or dropped leaves the rest
of the sample as it was. The analysts review the sampled cases in the Overview's review column as
they review any case (`ok`, `judge wrong`, `judge wrong: METRIC`, read by `judge_agreement`).

`calibrate` then counts, per judged metric and per judge (its identity, where the run recorded it),
on the audited sample apart from the chosen reviews:

- the judge's *error rate*: judgments the analysts found wrong / judgments audited, with its Wilson
  95 % interval (`judge_agreement.wilson_interval`);
- its *true-positive rate* (of the judgments the analysts would pass, the share the judge passed:
  low = too harsh) and *true-negative rate* (of those they would fail, the share it failed: low = too
  lenient), each with its Wilson interval. A judgment passes when its value is at least `PASS_AT`;
  the analysts' side is the judge's, turned over where they found it wrong. A judgment with a text
  value (a custom metric) counts in the error rate only;
- Cohen's kappa between the judge's pass/fail and the analysts', with a 95 % percentile bootstrap
  interval (the four cells of the table redrawn `significance.RESAMPLES` times from
  `significance.SEED`).

The other judgments of a case with a drawn judgment are left out of both: not drawn, and not chosen
by the analysts either.

A judgment is the same judgment however many runs carry it (case id, test definition, metric and
value, as `judge_agreement.count_reviewed` counts it, and the judge), its latest review deciding; it is *audited*
when any run it was in drew it into that run's sample.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qareport.case_record import CaseRow
from qareport.judge_agreement import (
    BUILTIN_METRICS,
    judgment_found_wrong,
    known_names,
    read_judge_review,
    wilson_interval,
)
from qareport.records import Review
from qareport.significance import RESAMPLES, SEED

AUDIT_SIZE = 20
"""Judgments drawn for the analysts to audit, unless configured otherwise."""
PASS_AT = 0.5
"""A judged value at least this passes (the judge says the answer is good), below it fails."""
AUDITED = "random audit"
CHOSEN = "chosen by the analysts"


@dataclass(frozen=True, slots=True)
class Judgment:
    """One judged metric of one case in one run, and the judge's value."""

    case_id: str
    metric: str
    value: float | str


def audit_rank(case_id: str, metric: str, *, seed: int = SEED) -> str:
    """A judgment's place in the draw: the lower, the sooner it is drawn."""
    return hashlib.sha256(f"{seed}\x1f{case_id}\x1f{metric}".encode()).hexdigest()


def _auditable(metric: str) -> bool:
    """Shown on the case's Overview row, where an analyst reviews it (a custom metric is)."""
    return all(metric != item.name or item.on_row for item in BUILTIN_METRICS)


def run_judgments(rows: Iterable[CaseRow]) -> list[Judgment]:
    """The judgments of a run that can be audited on the Overview (see `_auditable`)."""
    return [Judgment(row.case_id, metric, value) for row in rows for metric, value in row.judged.items()
            if _auditable(metric)]


def draw_audit_sample(rows: Iterable[CaseRow], *, size: int = AUDIT_SIZE, seed: int = SEED) -> tuple[Judgment, ...]:
    """The `size` judgments to audit (all of them when the run has fewer), in the order drawn. ValueError
    for a negative size."""
    if size < 0:
        raise ValueError(f"the audit sample's size must be 0 or more (got {size})")
    ranked = sorted(run_judgments(rows), key=lambda judgment: audit_rank(judgment.case_id, judgment.metric, seed=seed))
    return tuple(ranked[:size])


# --- the figures ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Confusion:
    """The judge's pass / fail against the analysts' on a set of reviewed judgments.

    Passed by the judge: `true_positives` (the analysts agree), `false_positives` (they would fail it:
    the judge was too lenient). Failed by the judge: `true_negatives`, `false_negatives` (too harsh).
    Text judgments have no pass / fail: `text_right`, `text_wrong`."""

    true_positives: int = 0
    false_positives: int = 0
    true_negatives: int = 0
    false_negatives: int = 0
    text_right: int = 0
    text_wrong: int = 0

    @property
    def audited(self) -> int:
        return (self.true_positives + self.false_positives + self.true_negatives + self.false_negatives
                + self.text_right + self.text_wrong)

    @property
    def wrong(self) -> int:
        return self.false_positives + self.false_negatives + self.text_wrong

    def added(self, *, passed: bool | None, wrong: bool) -> Confusion:
        """With one more judgment: the judge passed it (None: a text value), the analysts found it wrong."""
        if passed is None:
            return _replace(self, text_wrong=self.text_wrong + wrong, text_right=self.text_right + (not wrong))
        if passed:
            return _replace(self, false_positives=self.false_positives + wrong,
                            true_positives=self.true_positives + (not wrong))
        return _replace(self, false_negatives=self.false_negatives + wrong,
                        true_negatives=self.true_negatives + (not wrong))


def _replace(confusion: Confusion, **changes: int) -> Confusion:
    return dataclasses.replace(confusion, **changes)


Rate = tuple[float, float, float]  # the share, its 95 % low and high


def _rate(part: int, whole: int) -> Rate | None:
    if whole <= 0:
        return None
    low, high = wilson_interval(part, whole)
    return part / whole, low, high


def cohen_kappa(true_positives: int, false_positives: int, true_negatives: int, false_negatives: int) -> float | None:
    """Cohen's kappa of the judge's and the analysts' pass / fail: (observed agreement - agreement by
    chance) / (1 - agreement by chance); None when chance agreement is 1 (both said the same of all)."""
    total = true_positives + false_positives + true_negatives + false_negatives
    if total == 0:
        return None
    observed = (true_positives + true_negatives) / total
    judge_pass = (true_positives + false_positives) / total
    analysts_pass = (true_positives + false_negatives) / total
    chance = judge_pass * analysts_pass + (1 - judge_pass) * (1 - analysts_pass)
    if chance >= 1:
        return None
    return (observed - chance) / (1 - chance)


def kappa_interval(true_positives: int, false_positives: int, true_negatives: int, false_negatives: int, *,
                   resamples: int = RESAMPLES, seed: int = SEED, level: float = 0.95) -> tuple[float, float] | None:
    """The 95 % percentile bootstrap interval of Cohen's kappa: the table's four cells redrawn from
    their observed shares (a multinomial of the same total), draws whose kappa is undefined left out.
    None without a kappa, or when most draws have none."""
    cells = np.array([true_positives, false_positives, true_negatives, false_negatives], dtype=float)
    total = int(cells.sum())
    if cohen_kappa(true_positives, false_positives, true_negatives, false_negatives) is None:
        return None
    draws = np.random.default_rng(seed).multinomial(total, cells / total, size=resamples).astype(float)
    tp, fp, tn, fn = (draws[:, column] for column in range(4))
    judge_pass, analysts_pass = (tp + fp) / total, (tp + fn) / total
    chance = judge_pass * analysts_pass + (1 - judge_pass) * (1 - analysts_pass)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappas = ((tp + tn) / total - chance) / (1 - chance)
    kappas = kappas[np.isfinite(kappas) & (chance < 1)]
    if kappas.size < resamples / 2:
        return None
    tail = (1 - level) / 2
    low, high = np.quantile(kappas, [tail, 1 - tail])
    return float(low), float(high)


@dataclass(frozen=True, slots=True)
class Calibration:
    """The judge on one judged metric, against the analysts, on one kind of sample."""

    metric: str
    label: str
    judge: str | None  # the judge's identity where the run recorded it
    sample: str  # `AUDITED` or `CHOSEN`
    confusion: Confusion
    drawn: int = 0  # judgments drawn for the audit (AUDITED only): `confusion.audited` of them were reviewed

    @property
    def error_rate(self) -> Rate | None:
        return _rate(self.confusion.wrong, self.confusion.audited)

    @property
    def true_positive_rate(self) -> Rate | None:
        """Of the judgments the analysts pass, the share the judge passed (low: the judge is too harsh)."""
        c = self.confusion
        return _rate(c.true_positives, c.true_positives + c.false_negatives)

    @property
    def true_negative_rate(self) -> Rate | None:
        """Of the judgments the analysts fail, the share the judge failed (low: the judge is too lenient)."""
        c = self.confusion
        return _rate(c.true_negatives, c.true_negatives + c.false_positives)

    @property
    def kappa(self) -> float | None:
        c = self.confusion
        return cohen_kappa(c.true_positives, c.false_positives, c.true_negatives, c.false_negatives)

    @property
    def kappa_interval(self) -> tuple[float, float] | None:
        c = self.confusion
        return kappa_interval(c.true_positives, c.false_positives, c.true_negatives, c.false_negatives)

    def to_dict(self) -> dict[str, Any]:
        def rate(value: Rate | None) -> dict[str, float] | None:
            return None if value is None else {"share": value[0], "low": value[1], "high": value[2]}

        interval = self.kappa_interval
        c = self.confusion
        return {"metric": self.metric, "label": self.label, "judge": self.judge, "sample": self.sample,
                "drawn": self.drawn, "audited": c.audited, "wrong": c.wrong,
                "true_positives": c.true_positives, "false_positives": c.false_positives,
                "true_negatives": c.true_negatives, "false_negatives": c.false_negatives,
                "error_rate": rate(self.error_rate), "true_positive_rate": rate(self.true_positive_rate),
                "true_negative_rate": rate(self.true_negative_rate), "kappa": self.kappa,
                "kappa_low": interval[0] if interval else None, "kappa_high": interval[1] if interval else None}


@dataclass(frozen=True, slots=True)
class AuditedRun:
    """A run as calibration sees it: its case rows, the reviews on them, its judge (None: not recorded)."""

    rows: Sequence[CaseRow]
    reviews: Mapping[str, Review]
    judge: str | None = None


def _passed(value: float | str) -> bool | None:
    if isinstance(value, (str, bool)) or not math.isfinite(value):
        return None
    return value >= PASS_AT


def calibrate(runs: Sequence[AuditedRun], *, size: int = AUDIT_SIZE, seed: int = SEED,
              custom: Iterable[str] = ()) -> tuple[Calibration, ...]:
    """The judge's calibration per judged metric and judge, on the random audit and, apart, on the
    reviews the analysts chose, over `runs` (oldest first, each run once; see the module's docstring).
    A metric and judge with nothing drawn and nothing reviewed is left out."""
    names = known_names(custom)
    verdicts: dict[_JudgmentKey, tuple[str, str | None, bool | None, bool]] = {}
    audited: set[_JudgmentKey] = set()
    audited_cases: set[tuple[str, str, str]] = set()  # case id, test definition, judge
    drawn: dict[tuple[str, str | None], set[_JudgmentKey]] = {}
    for run in runs:
        by_case = {row.case_id: row for row in run.rows}
        sample = draw_audit_sample(run.rows, size=size, seed=seed)
        for judgment in sample:
            key = _key(by_case[judgment.case_id], judgment.metric, judgment.value, run.judge)
            audited.add(key)
            audited_cases.add((key[0], key[1], key[4]))
            drawn.setdefault((judgment.metric, run.judge), set()).add(key)
        for row in run.rows:
            review = run.reviews.get(row.case_id)
            read = read_judge_review(review.verdict if review else None, names)
            if read is None:
                continue
            for metric, value in row.judged.items():
                wrong = judgment_found_wrong(read, metric, row.judged.keys())
                if wrong is not None:
                    verdicts[_key(row, metric, value, run.judge)] = (metric, run.judge, _passed(value), wrong)
    tables: dict[tuple[str, str | None, str], Confusion] = {}
    for key, (metric, judge, passed, wrong) in verdicts.items():
        if key not in audited and (key[0], key[1], key[4]) in audited_cases:
            continue  # reviewed because another judgment of its case was drawn: neither drawn nor chosen
        where = (metric, judge, AUDITED if key in audited else CHOSEN)
        tables[where] = tables.get(where, Confusion()).added(passed=passed, wrong=wrong)
    for metric, judge in drawn:
        tables.setdefault((metric, judge, AUDITED), Confusion())
    labels = {item.name: item.label for item in BUILTIN_METRICS}
    order = {item.name: index for index, item in enumerate(BUILTIN_METRICS)}
    return tuple(
        Calibration(metric, labels.get(metric, metric), judge, sample, confusion,
                    len(drawn.get((metric, judge), ())) if sample == AUDITED else 0)
        for (metric, judge, sample), confusion in sorted(
            tables.items(), key=lambda item: (order.get(item[0][0], len(order)), item[0][0], item[0][1] or "",
                                              item[0][2] != AUDITED)))


_JudgmentKey = tuple[str, str, str, str, str]


def _key(row: CaseRow, metric: str, value: float | str, judge: str | None) -> _JudgmentKey:
    """A judgment's identity over runs: another judge's value is another judgment, even when equal."""
    return row.case_id, row.definition_hash or "", metric, repr(value), judge or ""


# --- the run's audit ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuditItem:
    """A judgment drawn for this run's audit, and what its case's review says of it so far."""

    judgment: Judgment
    label: str  # the metric as the Statistics sheet names it
    found_wrong: bool | None  # None: not reviewed yet (or the review says nothing of this metric)


@dataclass(frozen=True, slots=True)
class JudgeAudit:
    """This run's audit sample and the judge's calibration over this run (and its history)."""

    size: int  # judgments asked for
    seed: int
    sample: tuple[AuditItem, ...]
    calibration: tuple[Calibration, ...]
    runs: int = 1  # runs the calibration counts (this run and each earlier one once)

    @property
    def reviewed(self) -> int:
        return sum(item.found_wrong is not None for item in self.sample)

    def to_dict(self) -> dict[str, Any]:
        return {"size": self.size, "seed": self.seed, "runs": self.runs,
                "sample": [{"case_id": item.judgment.case_id, "metric": item.judgment.metric,
                            "value": item.judgment.value, "found_wrong": item.found_wrong} for item in self.sample],
                "calibration": [item.to_dict() for item in self.calibration]}


def audit_judge(this_run: AuditedRun, *, history: Sequence[AuditedRun] = (), size: int = AUDIT_SIZE,
                seed: int = SEED, custom: Iterable[str] = ()) -> JudgeAudit | None:
    """The run's audit: the judgments drawn from it (each with its review's word so far) and the
    calibration over `history` (earlier runs, oldest first, each once) and this run. None when the run
    has no judgment to audit."""
    custom = tuple(custom)
    drawn = draw_audit_sample(this_run.rows, size=size, seed=seed)
    if not drawn:
        return None
    names = known_names(custom)
    by_case = {row.case_id: row for row in this_run.rows}
    labels = {item.name: item.label for item in BUILTIN_METRICS}
    items = []
    for judgment in drawn:
        review = this_run.reviews.get(judgment.case_id)
        read = read_judge_review(review.verdict if review else None, names)
        wrong = (judgment_found_wrong(read, judgment.metric, by_case[judgment.case_id].judged.keys())
                 if read is not None else None)
        items.append(AuditItem(judgment, labels.get(judgment.metric, judgment.metric), wrong))
    calibration = calibrate([*history, this_run], size=size, seed=seed, custom=custom)
    return JudgeAudit(size, seed, tuple(items), calibration, runs=len(history) + 1)
