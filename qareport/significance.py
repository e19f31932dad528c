"""Is a headline metric's value, or its change since the baseline, larger than noise?

Pure functions over per-case values; every random draw comes from a generator seeded with a fixed
number, so the same run gives the same interval and the same workbook bytes.

- `confidence_interval`: a 95 % percentile bootstrap interval of the mean over cases (the cases are
  resampled with replacement `resamples` times).
- `paired_change`: the change of the mean over the cases both runs share (unchanged tests only,
  paired case by case), with a two-sided sign-flip permutation test of "no change": under that
  hypothesis each case's difference is as likely to have had the other sign. Exact (every one of
  the 2^n sign patterns) for up to `EXACT_UP_TO` cases with a nonzero difference, Monte Carlo above.
  The change is *larger than noise* when p < `alpha`.

Above `LARGE` cases both use the normal approximation the central limit theorem gives them (the
interval mean ± 1.96 standard errors; the sign-flip sum, whose variance under "no change" is the sum
of the squared differences): resampling 50,000 cases 2,000 times would hold 10^8 numbers for a
result the approximation gives to the third decimal.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

SEED = 20240508
RESAMPLES = 2000
PERMUTATIONS = 10_000
EXACT_UP_TO = 16
ALPHA = 0.05
LARGE = 5_000
CHUNK = 250  # resamples or sign patterns drawn at a time: memory stays at CHUNK x cases numbers


@dataclass(frozen=True, slots=True)
class Interval:
    """A mean over cases and its 95 % bootstrap interval."""

    mean: float
    low: float
    high: float
    cases: int


@dataclass(frozen=True, slots=True)
class PairedChange:
    """The change of a metric over the cases both runs share, and whether it is larger than noise."""

    delta: float  # mean(new - old) over the paired cases
    p_value: float
    cases: int  # the paired cases it rests on
    exact: bool  # every sign pattern enumerated (no Monte Carlo)

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA


def confidence_interval(values: Sequence[float], *, resamples: int = RESAMPLES, seed: int = SEED,
                        level: float = 0.95) -> Interval | None:
    """The mean and its percentile bootstrap interval; None without any value. One case gives a
    zero-width interval (nothing to resample)."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return None
    mean = float(data.mean())
    if data.size == 1 or np.all(data == data[0]):
        return Interval(mean, mean, mean, int(data.size))
    if data.size > LARGE:
        margin = float(NormalDist().inv_cdf(1 - (1 - level) / 2) * data.std(ddof=1) / math.sqrt(data.size))
        return Interval(mean, mean - margin, mean + margin, int(data.size))
    generator = np.random.default_rng(seed)
    means = np.concatenate([
        data[generator.integers(0, data.size, size=(min(CHUNK, resamples - done), data.size))].mean(axis=1)
        for done in range(0, resamples, CHUNK)
    ])
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return Interval(mean, float(low), float(high), int(data.size))


def paired_change(old: Sequence[float], new: Sequence[float], *, permutations: int = PERMUTATIONS,
                  seed: int = SEED) -> PairedChange | None:
    """The paired change from `old` to `new` (same cases, same order); None without any pair."""
    if len(old) != len(new):
        raise ValueError(f"paired values must be as many before as after (got {len(old)} and {len(new)})")
    differences = np.asarray(new, dtype=float) - np.asarray(old, dtype=float)
    if differences.size == 0:
        return None
    delta = float(differences.mean())
    moved = differences[differences != 0]  # a zero difference has the same mean under either sign
    if moved.size == 0:
        return PairedChange(delta, 1.0, int(differences.size), True)
    observed = abs(moved.sum())
    if moved.size > LARGE:
        spread = math.sqrt(float(np.sum(moved ** 2)))
        p_value = 2 * (1 - NormalDist().cdf(observed / spread)) if spread else 1.0
        return PairedChange(delta, float(p_value), int(differences.size), False)
    if moved.size <= EXACT_UP_TO:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=int(moved.size))))
        sums = np.abs(signs @ moved)
        p_value = float(np.mean(sums >= observed - 1e-12))
        return PairedChange(delta, p_value, int(differences.size), True)
    generator = np.random.default_rng(seed)
    at_least = 0
    for done in range(0, permutations, CHUNK):
        signs = generator.choice((1.0, -1.0), size=(min(CHUNK, permutations - done), moved.size))
        at_least += int(np.sum(np.abs(signs @ moved) >= observed - 1e-12))
    # the observed pattern counts as one of the draws, so p is never 0
    p_value = float((at_least + 1) / (permutations + 1))
    return PairedChange(delta, p_value, int(differences.size), False)
