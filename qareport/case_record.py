"""A case as a later run sees it (`CaseRow`): who the case is, how it went, and its figures, typed.

Built once from the report model (`case_rows.case_row`) or read back from a stored run
(`runs.case_row_from_stored`); the stored format (hidden-sheet cells, a results file's case rows) is
derived from it (`runs.stored_case_values`). Comparison, trend, gates, digest and the workbook's
Changes, Trend and Summary read its attributes. A field a stored run lacks is None (or empty for the
mappings), never a default that would change a number.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar, Generic, TypeVar

Source = TypeVar("Source")
Value = TypeVar("Value", covariant=True)

Facts = Mapping[str, Mapping[str, Sequence[str]]]
"""Each kind's facts of a case, by kind name: named lists of short items (`kinds.case_facts`)."""


class Derived(Mapping[str, Value], Generic[Source, Value]):
    """A case row's mapping worked out from its source each time it is read, instead of held. In a
    run's own rows the source is the case's result: the rows are read once each for the stored run,
    and once more where a baseline is compared, while holding every case's outputs and dimension
    scores ahead of that cost about 2 KB a case (100 MB at 50,000 cases); facts stay held (they are
    the kinds' to say, and a kind is asked once). In a stored run read back, the outputs' source is
    their stored JSON text, parsed for the few cases shown side by side. The source is immutable,
    so every reading gives the same mapping.

    One reading of a mapping asks for it several times (`dict(row.outputs)` takes its keys, then
    each value): the mapping last worked out, of whichever `Derived`, is kept until another is read,
    so such a reading works it out once, and at most one mapping is held at any time."""

    __slots__ = ("_derive", "_source")
    _last: ClassVar[tuple[object, Mapping[str, Any]]] = (None, {})  # (whose, its mapping): one, for all

    def __init__(self, derive: Callable[[Source], Mapping[str, Value]], source: Source) -> None:
        self._derive = derive
        self._source = source

    def _mapping(self) -> Mapping[str, Value]:
        whose, mapping = Derived._last  # one read of a tuple: safe beside another thread's write
        if whose is not self:
            mapping = self._derive(self._source)
            Derived._last = (self, mapping)
        return mapping

    def __getitem__(self, key: str) -> Value:
        return self._mapping()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())

    def get(self, key: str, default: Any = None) -> Any:
        return self._mapping().get(key, default)

    def items(self) -> ItemsView[str, Value]:
        return self._mapping().items()

    def values(self) -> ValuesView[Value]:
        return self._mapping().values()

    def __repr__(self) -> str:
        return repr(dict(self._mapping()))


class Figures(Mapping[str, float | None]):
    """A case's figures by key (its metrics, its usage), held as one tuple beside an index its run's
    cases share: every case of a run has the same keys, and a dict each would cost twice the memory."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: Mapping[str, float | None]) -> None:
        self._index = _key_index(tuple(values))
        self._values = tuple(values.values())

    def __getitem__(self, key: str) -> float | None:
        return self._values[self._index[key]]

    def get(self, key: str, default: Any = None) -> Any:  # the metric lookups' hot path
        position = self._index.get(key)
        return default if position is None else self._values[position]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


@lru_cache(maxsize=64)
def _key_index(keys: tuple[str, ...]) -> dict[str, int]:
    return {key: position for position, key in enumerate(keys)}


@dataclass(frozen=True, slots=True)
class CaseRow:
    """One case of a run, flat. Its mappings are not to be changed (they are typed read-only); in a
    run's own rows, `outputs` and `dimensions` are `Derived` from the case's result."""

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

