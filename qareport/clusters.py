"""Which cluster each test case belongs to, for the statistics that resample and flip whole clusters.

A *cluster* is a set of cases that succeed and fail together (`clustered_statistics`): the template a
graphrag-eval question was generated from, or a group a conversation case declares, with a `cluster`
key in the test case or with a tag that starts with the prefix given to `--cluster-by-tag` (the
whole tag names the cluster; the `cluster` key wins over a tag). A case without one is a cluster of
its own. The cluster is set once on the case (`TestCase.cluster`), kept in its stored row
(`case_rows.case_row`, field `cluster`), and read back from there (`row_cluster`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace

from qareport.case_record import CaseRow
from qareport.records import Problem, TestCase


def cluster_by_tag(cases: Sequence[TestCase], prefix: str) -> tuple[tuple[TestCase, ...], tuple[Problem, ...]]:
    """The cases with each conversation case that declares no `cluster` put in the cluster its tag
    starting with `prefix` names; a case with several such tags goes in the first one's, with a
    problem saying so."""
    if not prefix:
        return tuple(cases), ()
    placed: list[TestCase] = []
    problems: list[Problem] = []
    for case in cases:
        if case.kind != "conversation" or case.cluster is not None:
            placed.append(case)
            continue
        tags = [tag for tag in case.groups if tag.startswith(prefix)]
        if len(tags) > 1:
            problems.append(Problem(case.location, f"case '{case.id}' has {len(tags)} tags starting with "
                                    f"--cluster-by-tag '{prefix}' ({', '.join(repr(t) for t in tags)}): a case "
                                    f"belongs to one cluster, so it is put in '{tags[0]}'; keep one such tag, or "
                                    "give the case a 'cluster' key", case.id))
        placed.append(replace(case, cluster=tags[0]) if tags else case)
    return tuple(placed), tuple(problems)


def row_cluster(row: CaseRow) -> str | None:
    """The cluster of a case row; a row stored before runs kept it falls back to the template of a
    Q&A question. None: the case is a cluster of its own."""
    if row.cluster:
        return row.cluster
    if row.kind == "qa" and row.groups:
        return row.groups[0]
    return None


def count_clusters(labels: Sequence[Hashable | None]) -> int:
    """How many clusters the cases with these labels come in (a case without one is its own): what a
    reader is told, also when the statistics take the cases as units (all in one cluster)."""
    return len({label for label in labels if label is not None}) + sum(label is None for label in labels)
