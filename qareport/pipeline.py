"""One run, start to end: load → evaluate → aggregate → write. The CLI's `run` and nothing else.

It is one concept, the order of a run: `_run` names the stages (prepare, read the earlier runs, load,
evaluate, write the workbook, the results file, the email, check the gates), each a short function
that reads one record of the run (`_Run`: the options, the settings whole, the kinds, the caller's
hooks, the faults so far) and hands its result to the next.

The workbook is the point of a run; the rest is optional: the comparison with a baseline, the
trend over a history, the results file, the email. A bug in an optional stage (an exception that is
not a `QAReportError`) does not lose the workbook: the stage is left out, the workbook says so in
its Problems sheet where it is still to be written, and the outcome carries the fault
(`RunOutcome.faults`), which makes the exit status INTERNAL_ERROR. `on_stage` (a callback given the
name of each stage as it starts: see `STAGES`) lets a caller follow the run, and a test put a fault
into a stage.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from qareport import __version__, preflight
from qareport.clusters import cluster_by_tag
from qareport.collector import run_scope
from qareport.digest import comparison_line, summary_line
from qareport.emailing import EmailRequest, check_email_request, email_options, email_report
from qareport.errors import QAReportError, StrictModeError, UsageError
from qareport.evaluation import Evaluation, evaluate_suite, judged_evaluation, qa_results
from qareport.exit_status import EMAIL_NOT_SENT, GATE_FAILED, INTERNAL_ERROR, JUDGE_FAILED, REPORT_WRITTEN
from qareport.files import cache_home, home_folder
from qareport.gates import GateVerdict, Threshold, check_gate_tags, check_gates
from qareport.grading_rules import rules_warning as grading_rules_warning
from qareport.judge_agreement import review_problems
from qareport.judged_metrics import count_judged_metrics
from qareport.kinds import RunKinds
from qareport.kinds.custom_evaluations import kinds_for_run
from qareport.loading import load_suite
from qareport.progress import OnProgress, Stages
from qareport.records import (
    CaseResult,
    Location,
    OptionsUsed,
    Problem,
    Review,
    RunInfo,
    RunSnapshot,
    Suite,
    TermMatching,
    Unloaded,
)
from qareport.report import MIN_EVALUATED_SHARE, Report, build_report
from qareport.results_file import results_document, write_results_file
from qareport.run_reading import History, read_history, read_run
from qareport.run_reviews import read_history_reviews, read_reviews
from qareport.run_sheets import listed_problems
from qareport.settings import RunSettings, Settings, resolve_settings
from qareport.statistics import SuiteStatistics, summarize
from qareport.workbook import write_workbook

if TYPE_CHECKING:
    from qareport.judge import Judge, JudgeRun
    from qareport.judge.estimate import JudgeEstimate
    from qareport.judge.identity import JudgeIdentity
    from qareport.judge.settings import JudgeSettings

STAGES = ("loading", "evaluating", "baseline", "history", "writing", "results", "email")
"""The stages `on_stage` is told of, in order; baseline, history, results and email are optional (each
only when asked for)."""

LLM_METRICS = "answer correctness, answer relevance, retrieval answer metrics"
"""The metrics only an LLM judges (retrieval context metrics compare strings and always run)."""
JUDGE_FAILED_WORDS = "the judge failed"
"""How a judge failure starts wherever it is told (Summary, Statistics, console)."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    testcases: tuple[str, ...]
    responses: tuple[str, ...]
    output: str = "report.xlsx"
    results_path: str | None = None
    match_terms_by: TermMatching | None = None  # default: the configuration's, else DEFAULT_TERM_MATCHING
    templates_dir: str | None = None
    config_path: str | None = None
    strict: bool = False
    steps_semantics: int | None = None  # graphrag-eval's steps rules, 5 or 6 (default: the configuration's, else 5)
    config_ge6: str | None = None  # a graphrag-eval 6.x configuration file: the judge's LLM, custom metrics
    judge_options: dict[str, Any] = field(default_factory=dict)
    baseline: str | None = None  # an earlier workbook or results file: adds the Changes sheet
    history: tuple[str, ...] = ()  # earlier workbooks / results files or folders: adds the Trend sheet
    reference: str | None = None  # a pinned earlier run: slow drift is measured from it, not the history's first
    email: EmailRequest | None = None  # send the workbook once written
    send_incomplete: bool = False  # send the email even when the run is incomplete
    min_evaluated_share: float = MIN_EVALUATED_SHARE  # below it the run is incomplete
    fail_on_regression: bool = False  # a gate: needs `baseline`
    thresholds: tuple[Threshold, ...] = ()  # gates: --fail-under METRIC[@TAG]=VALUE
    estimate: bool = False  # load and evaluate, estimate the judge's work and cost; no request, nothing written
    acceptable_extras: int | None = None  # extra terms an `acceptable` grade allows (default: configuration, else 2)
    cluster_by_tag: str | None = None  # a conversation case's tag with this prefix names its cluster (`clusters`)
    answer_pass_f1: float | None = None  # an attempt's answer passes at this F1 or above (default 0.8)
    audit_size: int | None = None  # judgments drawn for the analysts to audit (default: configuration, else 20)


@dataclass(frozen=True, slots=True)
class StageFault:
    """A bug in an optional stage: the run went on without it. `left_out` says what is missing."""

    stage: str
    error: BaseException
    left_out: str
    source: str | None = None  # the input the stage read, when there was one: where the Problems sheet puts it

    def __str__(self) -> str:
        return f"internal error in {self.stage}: {type(self.error).__name__}: {self.error}; {self.left_out}"


@dataclass(frozen=True, slots=True)
class RunOutcome:
    report: Report
    summary_line: str
    email_line: str | None = None  # what was done with the email, when one was asked for
    comparison_line: str | None = None  # the deltas against the baseline, or the incomplete-run warning
    judge_line: str | None = None  # how far the judge got, per judged metric
    verdicts: tuple[GateVerdict, ...] = ()
    judge_failure: str | None = None  # why judgments could not be obtained (`JudgeRun.failure`)
    notices: tuple[str, ...] = ()  # routine notes for the console ("LLM metrics skipped: ..."), not problems
    faults: tuple[StageFault, ...] = ()  # bugs in optional stages, which were left out
    judge_budget: str | None = None  # how the judge budget ended the judging, when it did
    email_failure: str | None = None  # why the email asked for was not sent

    @property
    def exit_status(self) -> int:
        """INTERNAL_ERROR when an optional stage had a bug (it wins: the gates saw a part of the run),
        else GATE_FAILED when a gate failed (an incomplete run fails one of its own), else EMAIL_NOT_SENT
        when the email could not be sent, else JUDGE_FAILED
        when judgments could not be obtained, else REPORT_WRITTEN."""
        if self.faults:
            return INTERNAL_ERROR
        if any(not verdict.passed for verdict in self.verdicts):
            return GATE_FAILED
        if self.email_failure:
            return EMAIL_NOT_SENT
        return JUDGE_FAILED if self.judge_failure else REPORT_WRITTEN


@dataclass(frozen=True, slots=True)
class RunEstimate:
    """What `estimate_pipeline` found: the judge's estimate, or why there is none."""

    estimate: JudgeEstimate | None
    skipped_reason: str | None = None


def given_run_settings(options: RunOptions) -> dict[str, Any]:
    """The run settings `options` gives, by the names of `RunSettings`' fields (None: not given,
    the environment, the configuration or the default decide). A field of `RunOptions` named as a
    setting is passed on as it is."""
    given = {name: getattr(options, name, None) for name in RunSettings.model_fields}
    given["templates"] = options.templates_dir
    given["strict"] = options.strict or None  # not asked for: the configuration may ask
    return given


def check_before_any_work(options: RunOptions, *, templates_dir: str | None) -> None:
    """Stop at once, writing nothing, when the run could not end well (see `qareport.preflight`)."""
    if options.fail_on_regression and not options.baseline:
        raise UsageError("--fail-on-regression needs --baseline: there is nothing to regress from")
    if not 0 <= options.min_evaluated_share <= 1:
        raise UsageError(f"--min-evaluated {options.min_evaluated_share}: give a share between 0 and 1")
    preflight.check_inputs_exist("TESTCASES", options.testcases)
    preflight.check_inputs_exist("--responses", options.responses)
    preflight.check_inputs_exist("--history", options.history)
    if options.reference is not None:
        preflight.check_inputs_exist("--reference", (options.reference,))
    inputs = (*options.testcases, *options.responses)
    preflight.check_output("--output", options.output, suffixes=(preflight.WORKBOOK_SUFFIX,), inputs=inputs)
    if options.results_path:
        preflight.check_output("--results", options.results_path, suffixes=preflight.RESULTS_SUFFIXES,
                               inputs=inputs)
    preflight.check_templates(templates_dir)
    if options.email is not None:
        preflight.check_header_text("--email-subject", [options.email.subject])
        preflight.check_header_text("--email-to", options.email.to)
        preflight.check_header_text("--email-cc", options.email.cc)
        preflight.check_header_text("--email-from", [options.email.sender])
    preflight.remove_stale_temporaries(os.path.dirname(options.output) or ".", now=time.time())


def run_created_time() -> datetime:
    """Now, or SOURCE_DATE_EPOCH when set (reproducible reports)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.strip().isdigit():
        return datetime.fromtimestamp(int(epoch), tz=UTC)
    return datetime.now(tz=UTC).replace(microsecond=0)


def _log_warning(message: str) -> None:
    """Where a note that does not stop the run goes when the caller passes no `on_warning`: the
    "qareport" logger, which is silent unless the application configures logging."""
    logging.getLogger("qareport").warning("%s", message)


def _make_judge(settings: Settings, on_warning: Callable[[str], None]) -> Judge | None:
    """The judge, or None when the LLM metrics are skipped (`settings.judge_off_reason` says why)."""
    if settings.judge is None:
        return None
    from qareport.judge import Judge
    from qareport.judge.models import retirement_note

    if note := retirement_note(settings.judge.model, today=datetime.now(UTC).date()):
        on_warning(note)
    return Judge(settings.judge, templates_dir=settings.run.templates, on_warning=on_warning)


@dataclass(frozen=True, slots=True)
class RunHooks:
    """How a caller follows a run (see `run_pipeline`)."""

    on_problems: Callable[[Sequence[Problem]], None] = lambda problems: None
    on_progress: OnProgress | None = None
    on_stage: Callable[[str], None] = lambda stage: None
    on_warning: Callable[[str], None] = _log_warning


@dataclass(frozen=True, slots=True)
class _Run:
    """What every stage of one run reads: the options as given, the settings resolved from them
    (whole), the run's kinds, the caller's hooks; and the faults of optional stages so far."""

    options: RunOptions
    settings: Settings
    kinds: RunKinds
    hooks: RunHooks
    stages: Stages
    faults: list[StageFault] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Earlier:
    """The earlier runs a run compares with, read before any work (a wrong --baseline fails in a
    second, not after the judge ran), and the problems found in them."""

    baseline: RunSnapshot | None = None
    baseline_reviews: dict[str, Review] | None = None
    history: History | None = None
    history_reviews: tuple[dict[str, Review], ...] = ()
    reference: RunSnapshot | None = None  # --reference: the run a slow drift is measured from
    problems: tuple[Problem, ...] = ()  # values an edit made unreadable, review columns not found
    warnings: tuple[str, ...] = ()  # what the Summary and the email say beside the comparison


@dataclass(frozen=True, slots=True)
class _Evaluated:
    evaluation: Evaluation
    judge: JudgeSettings | None = None  # the judge's settings, when there was a judge
    judged: JudgeRun | None = None
    estimate: JudgeEstimate | None = None
    identity: JudgeIdentity | None = None  # who judged: recorded with the run (`judge.identity`)


def run_pipeline(
    options: RunOptions,
    *,
    on_problems: Callable[[Sequence[Problem]], None] = lambda problems: None,
    on_progress: OnProgress | None = None,
    on_stage: Callable[[str], None] = lambda stage: None,
    on_warning: Callable[[str], None] = _log_warning,
) -> RunOutcome:
    """Run `options`; `on_problems` gets the input problems as they are found, `on_stage` the name
    of each stage (`STAGES`) as it starts, `on_warning` each note that does not stop the run (an
    option of the graphrag-eval 6.x configuration that is ignored, an earlier run the history
    skipped, a cache that is not used; by default the "qareport" logger), `on_progress` how far each
    stage is (`qareport.progress`). The library itself never writes to the terminal."""
    with run_scope():  # the loaded data and the results stay out of the collector's way: see `collector`
        outcome = _run(options, RunHooks(on_problems, on_progress, on_stage, on_warning))
    assert isinstance(outcome, RunOutcome)
    return outcome


def estimate_pipeline(
    options: RunOptions,
    *,
    on_problems: Callable[[Sequence[Problem]], None] = lambda problems: None,
    on_progress: OnProgress | None = None,
    on_warning: Callable[[str], None] = _log_warning,
) -> RunEstimate:
    """Load and evaluate `options` as `run_pipeline` does, then estimate what judging would take
    (`Judge.estimate_results`) without sending a request or writing anything (a judge cache that
    does not exist yet is not made; no API key is needed)."""
    from qareport.judge.settings import PLACEHOLDER_API_KEY

    options = replace(options, estimate=True,
                      judge_options={"api_key": PLACEHOLDER_API_KEY, **options.judge_options})
    with run_scope():
        outcome = _run(options, RunHooks(on_problems, on_progress, on_warning=on_warning))
    assert isinstance(outcome, RunEstimate)
    return outcome


def _run(options: RunOptions, hooks: RunHooks) -> RunOutcome | RunEstimate:
    """The stages of a run, in order (each says what it does)."""
    run = _prepare(options, hooks)
    earlier = _read_earlier_runs(run)
    if options.email is not None and run.settings.email is not None:
        check_email_request(options.email, run.settings.email)
    suite = _load(run)
    evaluated = _evaluate(run, suite)
    if options.estimate:
        return RunEstimate(evaluated.estimate, run.settings.judge_off_reason)
    report = _write_workbook(run, suite, evaluated, earlier)
    if options.results_path:
        _optional_stage(run, "results", "writing the results file", f"{options.results_path} was not written",
                        lambda: write_results_file(results_document(report), options.results_path or ""))
    email_line, email_failure = _send_email(run, report)
    verdicts = check_gates(report, fail_on_regression=options.fail_on_regression, thresholds=options.thresholds)
    judged = evaluated.judged
    return RunOutcome(report, _summary_line(options.output, report), email_line, comparison_line(report.digest),
                      _judge_line(report), verdicts, judge_failure=(judged.failure if judged else None)
                      or _judge_unavailable(run, evaluated),
                      notices=_notices(run, evaluated), faults=tuple(run.faults),
                      judge_budget=judged.budget_reached if judged else None, email_failure=email_failure)


def _prepare(options: RunOptions, hooks: RunHooks) -> _Run:
    """The settings resolved from the options, the environment and the configuration; what must
    hold before any work checked (`check_before_any_work`); the run's kinds, made once."""
    settings = resolve_settings(
        run_options=given_run_settings(options),
        judge_options=options.judge_options,
        email_options=email_options(options.email) if options.email is not None else None,
        config_path=options.config_path,
        with_email=options.email is not None,
    )
    check_before_any_work(options, templates_dir=settings.run.templates)
    if (open_note := preflight.open_elsewhere(options.output)) is not None:
        hooks.on_warning(open_note)
    for ignored in (*settings.warnings, *settings.ge6.ignored):
        hooks.on_warning(ignored)
    return _Run(options, settings, kinds_for_run(settings.ge6.custom_evaluations), hooks, Stages(hooks.on_progress))


def _optional_stage(run: _Run, stage: str, doing: str, left_out: str, call: Callable[[], Any], *,
                    source: str | None = None) -> Any:
    """`call()` as the stage `stage` (told to `on_stage` first), or None when it fails with a bug,
    recorded in the run's faults as `doing`, with what is `left_out`. A `QAReportError` (a usage or
    input error, a refusal by a server) is not a bug and goes on up."""
    try:
        run.hooks.on_stage(stage)
        return call()
    except QAReportError:
        raise
    except Exception as error:  # noqa: BLE001 - a bug in an optional stage never costs the workbook
        run.faults.append(StageFault(doing, error, left_out, source))
        return None


def _read_earlier_runs(run: _Run) -> _Earlier:
    """The baseline and the history, each an optional stage; their problems told at once."""
    options = run.options
    problems: list[Problem] = []
    baseline = baseline_reviews = history = None
    history_reviews: tuple[dict[str, Review], ...] = ()
    if (path := options.baseline) is not None:
        baseline, baseline_reviews = _optional_stage(
            run, "baseline", f"reading the baseline {path}", "the workbook has no comparison with it",
            lambda: (read_run(path, on_problem=problems.append, kinds=run.kinds),
                     read_reviews(path, on_problem=problems.append, kinds=run.kinds)),
            source=path) or (None, None)
    reference = None
    if (pinned := options.reference) is not None:
        reference = _optional_stage(
            run, "history", f"reading the reference run {pinned}", "the drift line measures from the history",
            lambda: read_run(pinned, on_problem=problems.append, kinds=run.kinds), source=pinned)
    if options.history:
        history, history_reviews = _optional_stage(
            run, "history", "reading the history", "the workbook has no Trend sheet",
            lambda: _history_with_reviews(run, problems.append), source=options.history[0]) or (None, ())
    if baseline_reviews and path is not None:  # `judge wrong: <metric>` naming no metric
        custom = (evaluation.name for evaluation in run.settings.ge6.custom_evaluations)
        problems += review_problems(baseline_reviews, path, custom=custom)
    stored = tuple(dict.fromkeys(problems))  # the baseline in the history too: said once
    run.hooks.on_problems(stored)
    for skipped in history.skipped if history else ():
        run.hooks.on_warning(f"history: skipped {skipped}")
    return _Earlier(baseline, baseline_reviews, history, history_reviews, reference, stored)


def _history_with_reviews(run: _Run, on_problem: Callable[[Problem], None],
                          ) -> tuple[History, tuple[dict[str, Review], ...]]:
    history = read_history(run.options.history, exclude=(run.options.output,), on_problem=on_problem, kinds=run.kinds)
    return history, read_history_reviews(history.runs, run.kinds)


def _load(run: _Run) -> Suite:
    """The test cases and responses, clustered as asked; the input problems told, and the run
    stopped when nothing can be evaluated, a gate names an unknown tag, or --strict meets a problem."""
    options, settings, hooks = run.options, run.settings, run.hooks
    hooks.on_stage("loading")
    run.stages.start("loading test cases and responses")
    if settings.judge is not None and settings.judge.use_cache and (
            not os.environ.get("XDG_CACHE_HOME") and home_folder(os.environ) is None):
        hooks.on_warning(f"no home folder (HOME is unset and the user has no passwd entry): the judge cache is in "
                         f"{cache_home(os.environ)}; set XDG_CACHE_HOME to keep it elsewhere")
    suite = load_suite(options.testcases, options.responses, kinds=run.kinds)
    if options.cluster_by_tag:
        clustered, cluster_problems = cluster_by_tag(suite.cases, options.cluster_by_tag)
        suite = replace(suite, cases=clustered, problems=(*suite.problems, *cluster_problems))
    run.stages.finish(f"loaded {len(suite.cases):,} test cases and {len(suite.responses):,} responses")
    hooks.on_problems(suite.problems)
    if not suite.cases:
        raise QAReportError("no test cases could be loaded; nothing to evaluate (see the problems above)")
    if not suite.unloaded:  # a tag may belong to cases of a file that could not be read
        check_gate_tags(options.thresholds, (tag for case in suite.cases for tag in case.groups))
    if settings.run.strict and suite.problems:
        raise StrictModeError(f"{len(suite.problems)} input problem(s) and --strict: nothing written")
    return suite


def _evaluate(run: _Run, suite: Suite) -> _Evaluated:
    """Every case scored, then judged (or, for an estimate, the judge's work estimated); the
    evaluation's problems told, and the run stopped when --strict meets one."""
    judge = _make_judge(_judge_settings(run), run.hooks.on_warning)
    try:
        run.hooks.on_stage("evaluating")
        run.stages.start(f"evaluating {len(suite.cases):,} test cases")
        evaluated = _Evaluated(evaluate_suite(suite, options=run.settings.run.evaluation, kinds=run.kinds))
        if judge is not None:
            evaluated = _judged(run, judge, evaluated.evaluation)
        run.stages.finish(f"evaluated {len(evaluated.evaluation.results):,} test cases")
    finally:
        if judge is not None:
            judge.close()
    problems = evaluated.evaluation.problems
    run.hooks.on_problems(problems)
    if run.settings.run.strict and problems:
        raise StrictModeError(f"{len(problems)} evaluation problem(s) and --strict: nothing written")
    return evaluated


def _judge_settings(run: _Run) -> Settings:
    """The run's settings, except that an estimate neither makes a judge cache nor batches."""
    settings = run.settings
    if run.options.estimate and settings.judge is not None and settings.judge.use_cache and (
            not settings.judge.cache_path or not os.path.exists(settings.judge.cache_path)):
        return settings.model_copy(update={"judge": replace(settings.judge, use_cache=False, batch=False)})
    return settings


def _judged(run: _Run, judge: Judge, evaluation: Evaluation) -> _Evaluated:
    """The LLM metrics judged into the evaluation; for an estimate, the judging estimated instead."""
    if run.options.estimate:  # an estimate judges nothing
        estimate = judge.estimate_results(list(qa_results(evaluation.results)))
        return _Evaluated(evaluation, judge.settings, estimate=estimate)
    judged = judge.judge_results(list(qa_results(evaluation.results)), on_progress=run.hooks.on_progress)
    evaluation = judged_evaluation(evaluation, judged.judgments, options=run.settings.run.evaluation, kinds=run.kinds)
    return _Evaluated(evaluation, judge.settings, judged, identity=judge.identity())


def _notices(run: _Run, evaluated: _Evaluated) -> tuple[str, ...]:
    """Routine notes for the console: the LLM metrics skipped, and why."""
    skipped_reason = run.settings.judge_off_reason
    if skipped_reason and _has_answers(evaluated.evaluation.results):
        return (f"LLM metrics skipped: {skipped_reason}",)
    return ()


def _not_evaluated(run: _Run, evaluated: _Evaluated) -> dict[str, str]:
    """What the workbook lists as not evaluated (metric or metrics -> why)."""
    skipped_reason, judged = run.settings.judge_off_reason, evaluated.judged
    results = evaluated.evaluation.results
    not_evaluated = {}
    if skipped_reason and _has_answers(results):
        not_evaluated[LLM_METRICS] = skipped_reason
    if judged is not None and judged.failure:
        lost = [metric.label for metric in count_judged_metrics(results) if metric.not_judged]
        what = ", ".join(lost) if lost else LLM_METRICS
        why = judged.failure if judged.failure == judged.budget_reached else f"{JUDGE_FAILED_WORDS}: {judged.failure}"
        not_evaluated[f"{what} ({judged.not_judged} judgment(s) not obtained)"] = why
    return not_evaluated


def _run_info(run: _Run, suite: Suite, evaluated: _Evaluated) -> RunInfo:
    """What the report says of the run itself: when, which version, its inputs, the options used."""
    settings, usage = run.settings, evaluated.judged.usage if evaluated.judged is not None else None
    used = OptionsUsed(
        match_terms_by=settings.run.match_terms_by,
        templates=settings.run.templates,
        config=settings.config_file,
        strict=settings.run.strict,
        steps_semantics=settings.run.steps_semantics,
        acceptable_extras=settings.run.acceptable_extras,
        cluster_by_tag=run.options.cluster_by_tag,
        config_ge6=settings.ge6.path,
        answer_pass_f1=settings.run.answer_pass_f1,
        judge=evaluated.judge,
    )
    return RunInfo(created=run_created_time().isoformat(), qareport_version=__version__, inputs=suite.inputs,
                   options=used, judge_model=getattr(usage, "model", None), judge_usage=usage,
                   not_evaluated=_not_evaluated(run, evaluated), judge_identity=evaluated.identity)


def _rules_warnings(run: _Run, earlier: _Earlier) -> tuple[tuple[Problem, ...], tuple[str, ...]]:
    """A baseline scored by other steps rules, or graded by another --grade-extras: a problem each, and
    what the Summary and the email say beside the comparison (nothing when both runs follow the same rules)."""
    if earlier.baseline is None:
        return (), ()
    problems, said = [], []
    rules = rules_difference(earlier.baseline, run.settings.run.steps_semantics)
    if rules is not None:
        problems.append(Problem(Location(earlier.baseline.source),
                                f"{rules}. Run both with the same --steps-semantics to compare like with like"))
        said.append(rules)
    grading = grading_rules_warning(earlier.baseline, run.settings.run.acceptable_extras)
    if grading is not None:
        problems.append(Problem(Location(earlier.baseline.source), grading))
        said.append(grading)
    if problems:
        run.hooks.on_problems(tuple(problems))
    return tuple(problems), tuple(said)


def _write_workbook(run: _Run, suite: Suite, evaluated: _Evaluated, earlier: _Earlier) -> Report:
    """The report model built and the workbook written; a bug in the comparison or the trend costs
    them (a fault), not the workbook."""
    results = evaluated.evaluation.results
    statistics = summarize(results, steps_semantics=run.settings.run.steps_semantics,
                           custom_metrics=run.settings.ge6.custom_metric_keys, kind_set=run.kinds)
    rules_problems, warnings = _rules_warnings(run, earlier)
    problems = (*suite.problems, *evaluated.evaluation.problems, *earlier.problems, *rules_problems)
    parts = _ReportParts(results, problems, _run_info(run, suite, evaluated), statistics, suite.unloaded)
    with_earlier = earlier.baseline is not None or bool(earlier.history and earlier.history.runs)
    try:
        return _build_and_write(run, parts, replace(earlier, warnings=warnings) if warnings else earlier)
    except QAReportError:
        raise
    except Exception as error:  # a bug in the comparison or the trend: the workbook without them
        if not with_earlier:
            raise
        run.faults.append(StageFault("the comparison with the baseline and the trend", error,
                                     "the workbook has no Changes or Trend sheet and no deltas",
                                     run.options.baseline or run.options.history[0]))
        return _build_and_write(run, parts, _Earlier())


@dataclass(frozen=True, slots=True)
class _ReportParts:
    results: Sequence[CaseResult]
    problems: tuple[Problem, ...]
    info: RunInfo
    statistics: SuiteStatistics
    unloaded: tuple[Unloaded, ...]


def _build_and_write(run: _Run, parts: _ReportParts, earlier: _Earlier) -> Report:
    """The report, compared with the `earlier` runs (none: `_Earlier()`), written; the Problems sheet
    says which optional stages were left out so far."""
    noted = tuple(Problem(Location(fault.source), f"{fault} (please report it)")
                  for fault in run.faults if fault.source)
    report = build_report(
        parts.results, (*parts.problems, *noted), parts.info, statistics=parts.statistics,
        baseline=earlier.baseline, history=earlier.history.runs if earlier.history else (),
        source=run.options.output, min_evaluated_share=run.options.min_evaluated_share, unloaded=parts.unloaded,
        baseline_reviews=earlier.baseline_reviews, baseline_warnings=earlier.warnings,
        history_reviews=earlier.history_reviews, reference=earlier.reference,
        templates_dir=run.settings.run.templates,
        kinds=run.kinds, audit_size=run.settings.run.audit_size)
    run.hooks.on_stage("writing")
    run.stages.start(f"writing {run.options.output}")
    write_workbook(report, run.options.output)
    run.stages.finish(f"wrote {run.options.output}")
    return report


def _send_email(run: _Run, report: Report) -> tuple[str | None, str | None]:
    """The workbook sent, when asked (an optional stage): what was done with the email, and why it
    was not sent when sending failed (the report stands: said at once, and in the exit status)."""
    options, email_settings = run.options, run.settings.email
    if options.email is None:
        return None, None
    if report.incomplete and not options.send_incomplete:
        return f"email not sent: {report.incomplete} (--send-incomplete sends it all the same)", None
    if email_settings is None:
        return None, None
    request = options.email
    try:
        line: str | None = _optional_stage(
            run, "email", "the email", "the email was not sent",
            lambda: email_report(options.output, request, settings=email_settings,
                                 templates_dir=run.settings.run.templates, digest=report.digest))
    except QAReportError as error:
        failure = f"{options.output} was written, but the email was not sent: {error}"
        run.hooks.on_warning(f"{failure} (exit status {EMAIL_NOT_SENT})")
        return None, failure
    return line, None


def _judge_unavailable(run: _Run, evaluated: _Evaluated) -> str | None:
    """Why a judge that was asked for (a judge option given) could not run at all, when it was."""
    if run.settings.judge_off_reason and _has_answers(evaluated.evaluation.results):
        return run.settings.judge_unavailable
    return None


def rules_difference(baseline: RunSnapshot, semantics: int) -> str | None:
    """What differs when the baseline was scored by other steps rules: it is compared all the same,
    but never silently. None when both runs follow the same rules."""
    stated = baseline.steps_semantics or 5  # runs that do not say were scored by 5.x's rules
    if stated == semantics:
        return None
    return (f"the baseline's steps scores follow graphrag-eval {stated}.x's rules and this run's {semantics}.x's "
            f"({'every reference group' if semantics == 6 else 'the last reference group'} scored); steps "
            "score changes may come from the rules, not the system")


def _judge_line(report: Report) -> str | None:
    """"judge: answer F1: 20 judged, 20 failed; answer relevance: 0 judged, 0 failed, 40 not judged (FAILED ...)":
    the same figures as the Summary's judge line and the Statistics sheet (`report.judged`)."""
    shown = [metric.describe() for metric in report.judged if metric.judged or metric.not_scored]
    shown += report.agreement.warnings() if report.agreement is not None else ()
    batches = " (in batches)" if report.run.judge_usage is not None and report.run.judge_usage.batch else ""
    return f"judge{batches}: " + "; ".join(shown) if shown else None


def _has_answers(results: Sequence[CaseResult]) -> bool:
    return any(turn.qa is not None and turn.qa.actual_answer for r in results for turn in r.turns)


def _summary_line(output: str, report: Report) -> str:
    """The digest's closing line; under graphrag-eval 6.x rules with error responses, the 6.x library's
    own steps mean (errors counted as 0) follows, named as such."""
    notes = [note for figures in report.statistics.figures
             for note in figures.console_notes(report.digest.status_counts)]
    return summary_line(report.digest, output=output, notes=notes, listed=listed_problems(report))
