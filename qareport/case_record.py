"""A case as a later run sees it (`CaseRow`): who the case is, how it went, and its figures, typed.

Built once from the report model (`case_rows.case_row`) or read back from a stored run
(`runs.case_row_from_stored`); the stored format (hidden-sheet cells, a results file's case rows) is
derived from it (`runs.stored_case_values`). Comparison, trend, gates, digest and the workbook's
Changes, Trend and Summary read its attributes. A field a stored run lacks is None (or empty for the
mappings), never a default that would change a number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Facts = Mapping[str, Mapping[str, Sequence[str]]]
"""Each kind's facts of a case, by kind name: named lists of short items (`kinds.case_facts`)."""


@dataclass(frozen=True, slots=True)
class CaseRow:
    """One case of a run, flat. Its mappings are not to be changed (they are typed read-only)."""

    case_id: str
    kind: str | None = None  # the kind of test case ("qa" for a Q&A question)
    name: str | None = None
    groups: tuple[str, ...] = ()  # tags; a Q&A question's template
    cluster: str | None = None  # None: a cluster of its own (`clusters`)
    status: str | None = None  # a `records.CaseStatus`; None where a stored run lacks it
    error: str | None = None
    definition_hash: str | None = None  # None where a stored run lacks it: then its test never counts as changed
    file: str | None = None  # the test-case file it was read from
    reason: str | None = None  # why it lost points, one line
    targets: tuple[str, ...] | None = None  # its kinds of target; None: stored before runs kept them
    facts: Facts = field(default_factory=dict)
    outputs: Mapping[str, Any] = field(default_factory=dict)  # `side_by_side.case_outputs`
    judged: Mapping[str, float | str] = field(default_factory=dict)  # `judge_agreement.case_judgments`
    dimensions: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # precision, recall per dimension
    metrics: Mapping[str, float | None] = field(default_factory=dict)  # every registered kind's metrics
    usage: Mapping[str, float | None] = field(default_factory=dict)  # `records.USAGE_FIELDS`
    attempts: Mapping[str, Sequence[float | None]] | None = None
    """Each metric's values over the case's attempts, in attempt order; None: answered once."""

    def metric(self, key: str) -> float | None:
        """The case's value of a metric (None: it has none, or the metric is not one of its run)."""
        return self.metrics.get(key)

