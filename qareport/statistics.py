"""Suite-level figures from case results: each kind's own (`Kind.suite_figures`), and the cases by status.

Every kind computes its figures over the run in its own module (indicator selection: Data Query
Metrics; the reference steps and answer: graphrag-eval's aggregates, in its own arithmetic, through
the evaluation they share), once, here; the Statistics sheet, the results file and the console
summary read them. Averages are over *evaluated* cases only, and always travel with the counts of
error, missing and invalid cases beside them, so a run that fails more never looks better.

The per-group figures (per tag and per dimension) are computed from pandas frames built in one
place, `group_frames.py`; pandas is imported when a kind has cases to group, so a run without them,
and the import of the pipeline, do not pay for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from qareport import kinds
from qareport.kinds import SharedEvaluation, SuiteFigures, SuiteOptions, Table
from qareport.records import CaseResult

STATUSES = ("success", "error", "missing", "invalid")

F = TypeVar("F", bound=SuiteFigures)


@dataclass(frozen=True, slots=True)
class SuiteStatistics:
    """The run's suite figures: each kind's (and each shared evaluation's, once), in kind order."""

    figures: tuple[SuiteFigures, ...] = ()
    status_counts: dict[str, int] = field(default_factory=dict)

    def figures_of(self, kind: type[F]) -> F | None:
        """The figures of one type (a kind's own `SuiteFigures` subclass); None when the run has none."""
        return next((figures for figures in self.figures if isinstance(figures, kind)), None)

    def tables(self) -> tuple[Table, ...]:
        """The kinds' Statistics tables: every kind's leading tables (its suite figures) first, in
        kind order, then the others."""
        every = [table for figures in self.figures for table in figures.tables()]
        return tuple(sorted(every, key=lambda table: not table.leading))  # stable: kind order kept


def summarize(results: Sequence[CaseResult], *, steps_semantics: int | None = None,
              custom_metrics: Sequence[str] = (), kind_set: kinds.RunKinds | None = None) -> SuiteStatistics:
    """The suite's figures: each of the run's kinds' (`kind_set`; None: the catalogue's;
    `Kind.suite_figures`; an evaluation several kinds share, at the first of them); graphrag-eval's
    aggregates by `steps_semantics`' rules (5 or 6; None: the default), with the custom LLM metrics'
    outputs among them."""
    kind_set = kind_set if kind_set is not None else kinds.catalogue()
    options = SuiteOptions(steps_semantics=steps_semantics, custom_metrics=tuple(custom_metrics),
                           metric_label=kind_set.metric_label)
    figures: list[SuiteFigures] = []
    shared: list[SharedEvaluation] = []
    for kind in kind_set:
        if kind.shared is not None and not any(done is kind.shared for done in shared):
            shared.append(kind.shared)
            figures.extend(found for found in (kind.shared.suite_figures(results, options),) if found is not None)
        own = kind.suite_figures(results, options)
        if own is not None:
            figures.append(own)
    return SuiteStatistics(
        figures=tuple(figures),
        status_counts={status: sum(r.status == status for r in results) for status in STATUSES},
    )
