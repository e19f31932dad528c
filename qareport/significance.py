"""The numbers every test of noise in qareport shares: the seed of its random draws, how many it
draws, and from how many cases on it uses the normal approximation.

Every random draw comes from a generator seeded with `SEED`, so the same run gives the same interval
and the same workbook bytes. The interval of a mean (a percentile bootstrap, `RESAMPLES` draws) and
the paired test of "no change" (a two-sided sign flip: exact, every one of the 2^n sign patterns, for
up to `EXACT_UP_TO` moved cases, else `PERMUTATIONS` Monte Carlo draws) resample whole clusters
(`clustered_statistics`; without clusters every case is its own). A change is beyond noise when its
p-value is at most `ALPHA`.

Above `LARGE` cases both use the normal approximation the central limit theorem gives them (the
interval mean ± 1.96 standard errors; the sign-flip sum, whose variance under "no change" is the sum
of the squared differences): resampling 50,000 cases 2,000 times would hold 10^8 numbers for a
result the approximation gives to the third decimal. Draws are made `CHUNK` at a time, so memory
stays at CHUNK x cases numbers.
"""

from __future__ import annotations

SEED = 20240508
RESAMPLES = 2000
PERMUTATIONS = 10_000
EXACT_UP_TO = 16
ALPHA = 0.05
LARGE = 5_000
CHUNK = 250  # resamples or sign patterns drawn at a time: memory stays at CHUNK x cases numbers
