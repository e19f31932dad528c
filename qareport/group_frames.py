"""The pandas frames the per-group figures (per tag, per dimension) are computed from, built in one
place (`group_frames`), and the mean over evaluated cases as a frame's column gives it (`mean_of`).
pandas is imported when there are cases to group, so a run without them, and the import of the
pipeline, do not pay for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from qareport.means import mean

if TYPE_CHECKING:  # imported when first needed (`group_frames`): it is most of the pipeline's import time
    import pandas as pd

GROUP_COLUMNS = ("case", "group", "status", "precision", "recall")
DIMENSION_COLUMNS = ("case", "dimension", "precision", "recall", "tp", "fp", "fn")


@dataclass(frozen=True, slots=True)
class GroupFrames:
    """The per-group figures' rows as frames: `groups` one row per (case, group) (columns
    `GROUP_COLUMNS`); `dimensions` one row per (evaluated case, turn, dimension) (`DIMENSION_COLUMNS`)."""

    groups: pd.DataFrame
    dimensions: pd.DataFrame


def group_frames(group_rows: Sequence[Mapping[str, Any]],
                 dimension_rows: Sequence[Mapping[str, Any]]) -> GroupFrames | None:
    """The frames a kind's per-tag and per-dimension figures are computed from; None (and pandas not
    imported) when there is no case to group."""
    if not group_rows:
        return None
    import pandas as pd

    return GroupFrames(
        groups=pd.DataFrame(list(group_rows), columns=list(GROUP_COLUMNS)),
        dimensions=pd.DataFrame(list(dimension_rows), columns=list(DIMENSION_COLUMNS)),
    )


def mean_of(series: pd.Series) -> float | None:
    """The mean over the evaluated cases as every output gives it (`means.mean`: summed in case
    order), so that the Statistics sheet and the Summary show the same digits."""
    return mean([float(value) for value in series.dropna()])
