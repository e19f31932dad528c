"""The domain, as frozen records: what is loaded, and what evaluation makes of it.

A suite has test cases; a test case has turns; a turn has a target that may hold several kinds of
expectation (indicator selection, reference answer, reference steps). Each kind has one evaluator.
Q&A questions of a reference dataset are single-turn test cases whose group is their template.

Reference and actual *steps* stay in the graphrag-eval JSON shape (lists of dicts): that shape is
the interchange format users already have, and the results file must reproduce it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from qareport.case_record import CaseRow
from qareport.question_scores import QuestionScores

if TYPE_CHECKING:  # the judge's records, named here only as types: the judge imports this module
    from qareport.judge.identity import JudgeIdentity
    from qareport.judge.settings import JudgeSettings
    from qareport.judge.usage import JudgeUsage

CaseKind = Literal["conversation", "qa"]
USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec")
"""What a response may say about its cost: token counts and seconds (graphrag-eval's keys)."""
CaseStatus = Literal["success", "error", "missing", "invalid"]
"""success: evaluated; error: the system answered with an error record; missing: no response;
invalid: the response could not be evaluated (a per-case error says why)."""


@dataclass(frozen=True, slots=True)
class Location:
    """Where something was read: a file and, when known, a 1-based line."""

    path: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line is not None else self.path


@dataclass(frozen=True, slots=True)
class Problem:
    """An input problem: reported, listed in the workbook, and never fatal unless --strict."""

    location: Location
    message: str
    case_id: str | None = None

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


# --- indicator selection ---------------------------------------------------------------------


class TermMatching(StrEnum):
    """When a selected term is a target's term (`--match-terms-by`): by id and name together (the
    methodology's rule, the default: `DEFAULT_TERM_MATCHING`) or by id alone, the label may differ."""

    ID_AND_NAME = "id_and_name"
    ID = "id"


DEFAULT_TERM_MATCHING = TermMatching.ID_AND_NAME


@dataclass(frozen=True, slots=True)
class Term:
    """A codelist option: an id and its label. A value may give only one of them (statgpt's own
    documentation writes name-only values): the other is then ''."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class DimensionTerms:
    dimension_name: str
    values: tuple[Term, ...]


@dataclass(frozen=True, slots=True)
class DatasetSelection:
    """One `{dataset_id, dimensions}` entry of an `indicator_selection` list."""

    dataset_id: str
    dimensions: tuple[DimensionTerms, ...]


# --- test cases --------------------------------------------------------------------------------


QA_RECORD = "qa"
"""The key of `TurnResult.scores` that holds a turn's `QuestionScores`: graphrag-eval's result of
the question evaluation it runs for the reference answer and the reference steps together, to which
the judge's keys are added (as a new record); its dict is built only at the library boundary
(`QuestionScores.as_graphrag_eval`)."""


@dataclass(frozen=True, slots=True)
class Target:
    """What one user turn is expected to produce: each kind's parsed part, by kind name (any subset
    of the kinds may be present), and the line each part is written at."""

    parts: dict[str, object] = field(default_factory=dict)  # each kind reads its own, typed, in its module
    lines: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Turn:
    """A user message that has a target (messages without one are context only)."""

    number: int  # 1-based, counting only turns with a target
    user_message: str
    target: Target


@dataclass(frozen=True, slots=True)
class TestCase:
    __test__ = False  # not a pytest class, despite the name

    id: str
    kind: CaseKind
    name: str  # conversation: `name`; Q&A: the question text
    groups: tuple[str, ...]  # conversation: tags; Q&A: (template_id,)
    turns: tuple[Turn, ...]
    location: Location
    comments: str = ""
    definition_hash: str = ""  # of the target(s): tells an edited test from a regression
    # the kinds of target a case too broken to read declares (its targets' keys): it counts among the
    # cases that could have had those kinds' metrics, as an invalid one
    declared_targets: tuple[str, ...] = ()
    # the cluster its statistics resample and flip it with: a Q&A question's template, a conversation
    # case's `cluster` key (or its tag named by --cluster-by-tag); None: the case is a cluster of its own
    cluster: str | None = None


# --- responses ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnOutput:
    """What the system produced for one turn: each kind's parsed part of it, by kind name."""

    parts: dict[str, object] = field(default_factory=dict)  # each kind reads its own, typed, in its module


@dataclass(frozen=True, slots=True)
class Response:
    case_id: str
    location: Location
    status: Literal["success", "error", "invalid"] = "success"  # invalid: unusable record
    error: str | None = None
    turns: tuple[TurnOutput, ...] = ()
    input_tokens: int | float | None = None
    output_tokens: int | float | None = None
    total_tokens: int | float | None = None
    elapsed_sec: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # other top-level keys, kept verbatim
    attempt: int | None = None  # its `attempt` (1, 2, ...); None: the record gave none (attempt 1)


@dataclass(frozen=True, slots=True)
class InputSummary:
    """One input path as given: what it held, for the run's provenance."""

    path: str
    role: Literal["testcases", "responses"]
    files: int
    records: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Unloaded:
    """Test cases that could not be read: one item of a file (its id when it could be made out), or
    a whole file. A baseline's case found here is "not loaded", never "removed"."""

    path: str
    line: int | None
    case_id: str | None = None  # None: every case of the file, or an item whose id is unreadable
    whole_file: bool = False

    def describe(self) -> str:
        if self.whole_file:
            return f"file {self.path} could not be read"
        return f"{self.path}:{self.line} could not be read" if self.line else f"a part of {self.path} could not be read"


@dataclass(frozen=True, slots=True)
class Suite:
    """Everything loaded: cases in input order, responses by case id, and the problems found.

    A case answered several times (records with distinct `attempt`s) has all its responses in
    `attempts`, by attempt number; `responses` holds its lowest-numbered one."""

    cases: tuple[TestCase, ...]
    responses: dict[str, Response]
    problems: tuple[Problem, ...]
    inputs: tuple[InputSummary, ...] = ()
    unloaded: tuple[Unloaded, ...] = ()  # test cases lost to unreadable files or broken items
    attempts: dict[str, tuple[Response, ...]] = field(default_factory=dict)  # only cases with 2 or more


# --- results -----------------------------------------------------------------------------------

Verdict = Literal["TP", "FP", "FN", "not in target"]


@dataclass(frozen=True, slots=True)
class TermVerdict:
    """A term of one dimension with its verdict. With matching by id, `selected_name` keeps the
    system's label when it differs from the target's. `matched_by` says how a true positive was
    matched when a side gave only a name or only an id ("name only", "id only"; None otherwise)."""

    term: Term
    verdict: Verdict
    selected_name: str | None = None
    matched_by: str | None = None

    @property
    def label_differs(self) -> bool:
        return self.selected_name is not None and self.selected_name != self.term.name


@dataclass(frozen=True, slots=True)
class DimensionScore:
    """Overlap of target and selected terms for one dimension of one turn (counts kept)."""

    dimension_name: str
    true_positives: tuple[TermVerdict, ...]
    false_positives: tuple[TermVerdict, ...]
    false_negatives: tuple[TermVerdict, ...]
    precision: float
    recall: float
    in_target: bool = True


@dataclass(frozen=True, slots=True)
class IndicatorScore:
    """Indicator selection of one turn."""

    dimensions: tuple[DimensionScore, ...]  # target dimensions, in target order
    not_in_target: tuple[DimensionScore, ...]  # selected dimensions absent from the target
    macro_precision: float
    macro_recall: float
    target_datasets: tuple[str, ...]
    selected_datasets: tuple[str, ...]
    grade: str | None = None  # statgpt's grade of the turn (`kinds.selection_grades.grade_turn`)

    @property
    def dataset_mismatch(self) -> bool:
        return set(self.target_datasets) != set(self.selected_datasets)


@dataclass(frozen=True, slots=True)
class TurnResult:
    """One turn scored: each kind's score by kind name (and graphrag-eval's result, a
    `QuestionScores`, under `QA_RECORD`), and why the turn could not be evaluated, if it could not."""

    number: int
    user_message: str
    error: str | None = None  # this turn could not be evaluated
    scores: dict[str, object] = field(default_factory=dict)

    @property
    def qa(self) -> QuestionScores | None:
        """graphrag-eval's result of the turn (steps, answer metrics, ...), see `QA_RECORD`."""
        qa = self.scores.get(QA_RECORD)
        return qa if isinstance(qa, QuestionScores) else None


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: TestCase
    status: CaseStatus
    turns: tuple[TurnResult, ...] = ()
    error: str | None = None
    response: Response | None = None
    passed: bool | None = None  # of an attempt (in `attempts`): whether it passed (`kinds.attempt_passed`)
    attempts: tuple[CaseResult, ...] = ()
    """Every attempt's own result, by attempt number, when the case was answered several times
    (empty when it was answered once); see `evaluation.combine_attempts` for what the case's own
    fields then hold."""

    @property
    def attempt(self) -> int:
        """The attempt this result scores (1 for a response without `attempt`)."""
        return (self.response.attempt if self.response is not None else None) or 1


@dataclass(frozen=True, slots=True)
class OptionsUsed:
    """The settings a run was made with, resolved (`qareport.settings.Settings`: nothing is left to
    a default here), for the Summary sheet and the stored run (`run_sheets.stored_options` names them
    `option.<name>`)."""

    match_terms_by: TermMatching
    templates: str | None
    config: str | None  # the configuration file read, if any
    strict: bool
    steps_semantics: int
    acceptable_extras: int
    cluster_by_tag: str | None
    config_ge6: str | None
    judge: JudgeSettings | None  # None: no judge; shown and stored by `JudgeSettings.describe()` (no key)
    answer_pass_f1: float | None = None  # given: an attempt's answer passes at this F1 or above (`PassRules`)


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What was run, for the Summary sheet and for comparing runs later."""

    created: str  # ISO 8601, UTC
    qareport_version: str
    inputs: tuple[InputSummary, ...] = ()
    options: OptionsUsed | None = None  # None: not known (a run made again from an older workbook, a test)
    judge_model: str | None = None
    judge_usage: JudgeUsage | None = None  # None: the judge did not run
    not_evaluated: dict[str, str] = field(default_factory=dict)  # metric family -> why not
    judge_identity: JudgeIdentity | None = None  # which judge gave the judged values; None: no judge ran

    @property
    def steps_semantics(self) -> int | None:
        """The graphrag-eval steps rules the run was scored by, when known."""
        return None if self.options is None else self.options.steps_semantics


REVIEW_CHOICES = ("ok", "judge wrong", "known issue", "fixed", "needs a look")
"""What an analyst may say of a case in the Overview's `review` column (its drop-down)."""


@dataclass(frozen=True, slots=True)
class Review:
    """An analyst's verdict on a case and their note, as typed into the Overview."""

    verdict: str | None = None  # one of REVIEW_CHOICES, or whatever was typed
    note: str | None = None
    last_seen: CaseRow | None = field(default=None, compare=False, repr=False)
    """For a case absent from the run the review was read from: its row (`case_rows.case_row`, read
    back from the stored run) when it was last evaluated, so the review comes back as it was if
    nothing changed meanwhile."""

    def __bool__(self) -> bool:
        return bool(self.verdict or self.note)


@dataclass(frozen=True, slots=True)
class CarriedCase:
    """A case this run could not load (its test file or item was broken), kept with its row from the
    last run that evaluated it, so the next run compares the case with that result instead of
    calling it new. It is in no statistic of the run that carries it."""

    row: CaseRow  # as the last run that evaluated it stored it
    last_seen: str  # when that run was created (ISO 8601)
    not_loaded: str  # when the first run that could not load it was created (ISO 8601)

    def describe(self) -> str:
        """How a comparison with this row is said beside the case's change."""
        return f"compared with its result of {_day(self.last_seen)} (not loaded on {_day(self.not_loaded)})"


def _day(created: str) -> str:
    return created[:10] if created else "an earlier run"


@dataclass(frozen=True, slots=True)
class RunSnapshot:
    """A run as a later run sees it: when, which version, and one `CaseRow` per case.

    `cases` are `case_rows.case_rows()` rows; their stored form (`runs.stored_case_values`) is what
    the workbook's hidden `qareport_results` sheet and the results file's `cases` list hold, so either
    can be a baseline or a point of a trend.
    """

    source: str  # the file it was read from, or the output path of the current run
    created: str  # ISO 8601
    qareport_version: str
    cases: tuple[CaseRow, ...] = ()
    steps_semantics: int | None = None  # graphrag-eval's steps rules the run used (None: not said, 5)
    acceptable_extras: int | None = None  # the extra terms its `acceptable` grade allowed (None: not said, the default)
    judge_identity: JudgeIdentity | None = None  # the judge of its judged values (None: none, or not recorded)
    partly_judged: tuple[tuple[str, str], ...] = ()
    """(metric key, "answer F1: partial, 40 of 60 cases judged (budget reached)") for each judged mean
    over only some of its cases (`JudgedMetric.partial_words`): a Trend shows the run's point as partial."""
    carried: tuple[CarriedCase, ...] = ()
    """Cases the run could not load, with their last seen rows (`CarriedCase`); never among `cases`."""
    overview_headers: tuple[str, ...] = ()
    """The header row of its workbook's Overview, `more` columns left out: a later run keeps these
    columns (empty: a results file, which has no Overview)."""
