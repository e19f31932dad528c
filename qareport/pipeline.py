"""One run, start to end: load → evaluate → aggregate → write. The CLI's `run` and nothing else.

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
from qareport.evaluation import evaluate_suite, judged_evaluation, qa_results
from qareport.exit_status import GATE_FAILED, INTERNAL_ERROR, JUDGE_FAILED, REPORT_WRITTEN
from qareport.files import cache_home, home_folder
from qareport.gates import GateVerdict, Threshold, check_gate_tags, check_gates
from qareport.judge_agreement import review_problems
from qareport.judged_metrics import count_judged_metrics
from qareport.kinds.custom_evaluations import kinds_for_run
from qareport.loading import load_suite
from qareport.parse_cache import ParseCache, default_folder
from qareport.progress import OnProgress, Stages
from qareport.records import CaseResult, Location, OptionsUsed, Problem, RunInfo, RunSnapshot, TermMatching
from qareport.report import MIN_EVALUATED_SHARE, Report, build_report
from qareport.results_file import results_document, write_results_file
from qareport.run_reading import read_history, read_run
from qareport.run_reviews import read_history_reviews, read_reviews
from qareport.run_sheets import listed_problems
from qareport.settings import RunSettings, Settings, resolve_settings
from qareport.statistics import summarize
from qareport.workbook import write_workbook

if TYPE_CHECKING:
    from qareport.judge import Judge, JudgeRun
    from qareport.judge.estimate import JudgeEstimate

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
    email: EmailRequest | None = None  # send the workbook once written
    send_incomplete: bool = False  # send the email even when the run is incomplete
    min_evaluated_share: float = MIN_EVALUATED_SHARE  # below it the run is incomplete
    fail_on_regression: bool = False  # a gate: needs `baseline`
    thresholds: tuple[Threshold, ...] = ()  # gates: --fail-under METRIC[@TAG]=VALUE
    testcase_cache: bool | None = None  # keep large test-case files parsed between runs (default: yes)
    estimate: bool = False  # load and evaluate, estimate the judge's work and cost; no request, nothing written
    acceptable_extras: int | None = None  # extra terms an `acceptable` grade allows (default: configuration, else 2)
    cluster_by_tag: str | None = None  # a conversation case's tag with this prefix names its cluster (`clusters`)
    answer_pass_f1: float | None = None  # an attempt's answer passes at this F1 or above (default 0.8)


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

    @property
    def exit_status(self) -> int:
        """INTERNAL_ERROR when an optional stage had a bug (it wins: the gates saw a part of the run),
        else GATE_FAILED when a gate failed (an incomplete run fails one of its own), else JUDGE_FAILED
        when judgments could not be obtained, else REPORT_WRITTEN."""
        if self.faults:
            return INTERNAL_ERROR
        if any(not verdict.passed for verdict in self.verdicts):
            return GATE_FAILED
        return JUDGE_FAILED if self.judge_failure else REPORT_WRITTEN


@dataclass(frozen=True, slots=True)
class RunEstimate:
    """What `estimate_pipeline` found: the judge's estimate, or why there is none."""

    estimate: JudgeEstimate | None
    skipped_reason: str | None = None


def _optional_stage(stage: str, left_out: str, faults: list[StageFault], call: Callable[[], Any], *,
                    source: str | None = None) -> Any:
    """`call()`, or None when it fails with a bug (recorded in `faults`). A `QAReportError` (a
    usage or input error, a refusal by a server) is not a bug and goes on up."""
    try:
        return call()
    except QAReportError:
        raise
    except Exception as error:  # noqa: BLE001 - a bug in an optional stage never costs the workbook
        faults.append(StageFault(stage, error, left_out, source))
        return None


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

    return Judge(settings.judge, templates_dir=settings.run.templates, on_warning=on_warning)


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
        outcome = _run(options, on_problems=on_problems, on_progress=on_progress, on_stage=on_stage,
                       on_warning=on_warning)
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
        outcome = _run(options, on_problems=on_problems, on_progress=on_progress,
                       on_stage=lambda stage: None, on_warning=on_warning)
    assert isinstance(outcome, RunEstimate)
    return outcome


def _run(
    options: RunOptions,
    *,
    on_problems: Callable[[Sequence[Problem]], None],
    on_progress: OnProgress | None,
    on_stage: Callable[[str], None],
    on_warning: Callable[[str], None],
) -> RunOutcome | RunEstimate:
    settings = resolve_settings(
        run_options=given_run_settings(options),
        judge_options=options.judge_options,
        email_options=email_options(options.email) if options.email is not None else None,
        config_path=options.config_path,
        with_email=options.email is not None,
    )
    templates_dir = settings.run.templates
    match_by = settings.run.match_terms_by
    strict = settings.run.strict
    semantics = settings.run.steps_semantics
    check_before_any_work(options, templates_dir=templates_dir)
    for ignored in settings.ge6.ignored:
        on_warning(ignored)
    run_kinds = kinds_for_run(settings.ge6.custom_evaluations)  # this run's, made once and passed down

    # earlier runs are read first: a wrong --baseline fails in a second, not after the judge ran
    faults: list[StageFault] = []
    stored: list[Problem] = []  # values of earlier runs an edit made unreadable, review columns not found
    baseline = baseline_reviews = history = None
    history_reviews: Any = ()
    if (baseline_path := options.baseline) is not None:
        def read_baseline() -> tuple[RunSnapshot, Any]:
            on_stage("baseline")
            return (read_run(baseline_path, on_problem=stored.append, kinds=run_kinds),
                    read_reviews(baseline_path, on_problem=stored.append, kinds=run_kinds))

        baseline, baseline_reviews = _optional_stage(
            f"reading the baseline {baseline_path}", "the workbook has no comparison with it", faults,
            read_baseline, source=baseline_path) or (None, None)
    if options.history:
        def read_earlier() -> Any:
            on_stage("history")
            earlier = read_history(options.history, exclude=(options.output,), on_problem=stored.append,
                                   kinds=run_kinds)
            return earlier, read_history_reviews(earlier.runs, run_kinds)

        history, history_reviews = _optional_stage(
            "reading the history", "the workbook has no Trend sheet", faults, read_earlier,
            source=options.history[0]) or (None, ())
    if baseline_reviews and baseline_path is not None:  # `judge wrong: <metric>` naming no metric
        custom = (evaluation.name for evaluation in settings.ge6.custom_evaluations)
        stored += review_problems(baseline_reviews, baseline_path, custom=custom)
    stored = list(dict.fromkeys(stored))  # the baseline in the history too: said once
    on_problems(stored)
    for skipped in history.skipped if history else ():
        on_warning(f"history: skipped {skipped}")
    if options.email is not None and settings.email is not None:
        check_email_request(options.email, settings.email)

    stages = Stages(on_progress)
    on_stage("loading")
    stages.start("loading test cases and responses")
    cache = (ParseCache(default_folder(os.environ), on_warning=on_warning, known=run_kinds)
             if settings.run.testcase_cache else None)
    if (settings.run.testcase_cache or (settings.judge is not None and settings.judge.use_cache)) and (
            not os.environ.get("XDG_CACHE_HOME") and home_folder(os.environ) is None):
        on_warning(f"no home folder (HOME is unset and the user has no passwd entry): the caches are in "
              f"{cache_home(os.environ)}; set XDG_CACHE_HOME to keep them elsewhere")
    suite = load_suite(options.testcases, options.responses, cache=cache, kinds=run_kinds)
    if options.cluster_by_tag:
        clustered, cluster_problems = cluster_by_tag(suite.cases, options.cluster_by_tag)
        suite = replace(suite, cases=clustered, problems=(*suite.problems, *cluster_problems))
    reused = ""
    if cache is not None and cache.hits:
        reused = f" ({cache.hits} file{'s' if cache.hits > 1 else ''} read back from the parse cache)"
    stages.finish(f"loaded {len(suite.cases):,} test cases{reused} and {len(suite.responses):,} responses")
    on_problems(suite.problems)
    if not suite.cases:
        raise QAReportError("no test cases could be loaded; nothing to evaluate (see the problems above)")

    if not suite.unloaded:  # a tag may belong to cases of a file that could not be read
        check_gate_tags(options.thresholds, (tag for case in suite.cases for tag in case.groups))
    if strict and suite.problems:
        raise StrictModeError(f"{len(suite.problems)} input problem(s) and --strict: nothing written")
    if options.estimate and settings.judge is not None and settings.judge.use_cache and (
            not settings.judge.cache_path or not os.path.exists(settings.judge.cache_path)):
        settings = settings.model_copy(update={"judge": replace(settings.judge, use_cache=False, batch=False)})
    judge = _make_judge(settings, on_warning)
    skipped_reason = settings.judge_off_reason
    estimate: JudgeEstimate | None = None
    judged: JudgeRun | None = None
    try:
        on_stage("evaluating")
        stages.start(f"evaluating {len(suite.cases):,} test cases")
        evaluation = evaluate_suite(suite, options=settings.run.evaluation, kinds=run_kinds)
        if judge is not None and options.estimate:  # an estimate judges nothing
            estimate = judge.estimate_results(list(qa_results(evaluation.results)))
        elif judge is not None:
            judged = judge.judge_results(list(qa_results(evaluation.results)), on_progress=on_progress)
            evaluation = judged_evaluation(evaluation, judged.judgments, options=settings.run.evaluation,
                                           kinds=run_kinds)
        stages.finish(f"evaluated {len(evaluation.results):,} test cases")
    finally:
        if judge is not None:
            judge.close()
    usage = judged.usage if judged is not None else None
    judge_failure = judged.failure if judged is not None else None
    judge_budget = judged.budget_reached if judged is not None else None
    on_problems(evaluation.problems)
    problems = (*suite.problems, *evaluation.problems, *stored)
    if strict and evaluation.problems:
        raise StrictModeError(f"{len(evaluation.problems)} evaluation problem(s) and --strict: nothing written")
    if options.estimate:
        return RunEstimate(estimate, skipped_reason)

    statistics = summarize(evaluation.results, steps_semantics=semantics,
                           custom_metrics=settings.ge6.custom_metric_keys, kind_set=run_kinds)
    baseline_warnings: tuple[str, ...] = ()
    if baseline is not None:
        rules = rules_difference(baseline, semantics)
        if rules is not None:
            warning = Problem(Location(baseline.source), f"{rules}. Run both with the same --steps-semantics "
                                                         "to compare like with like")
            problems = (*problems, warning)
            on_problems((warning,))
            baseline_warnings = (rules,)  # what the Summary and the email say beside the comparison
    not_evaluated = {}
    notices: list[str] = []
    if skipped_reason and _has_answers(evaluation.results):
        not_evaluated[LLM_METRICS] = skipped_reason
        notices.append(f"LLM metrics skipped: {skipped_reason}")
    if judge_failure:
        lost = [metric.label for metric in count_judged_metrics(evaluation.results) if metric.not_judged]
        what = ", ".join(lost) if lost else LLM_METRICS
        why = judge_failure if judge_failure == judge_budget else f"{JUDGE_FAILED_WORDS}: {judge_failure}"
        not_evaluated[f"{what} ({judged.not_judged if judged else 0} judgment(s) not obtained)"] = why
    run = RunInfo(
        created=run_created_time().isoformat(),
        qareport_version=__version__,
        inputs=suite.inputs,
        options=OptionsUsed(
            match_terms_by=match_by,
            templates=templates_dir,
            config=settings.config_file,
            strict=strict,
            steps_semantics=semantics,
            acceptable_extras=settings.run.acceptable_extras,
            cluster_by_tag=options.cluster_by_tag,
            config_ge6=settings.ge6.path,
            answer_pass_f1=settings.run.answer_pass_f1,
            judge=judge.settings if judge is not None else None,
        ),
        judge_model=getattr(usage, "model", None),
        judge_usage=usage,
        not_evaluated=not_evaluated,
    )
    def build_and_write(with_earlier: bool, notes: tuple[Problem, ...] = ()) -> Report:
        report = build_report(evaluation.results, (*problems, *notes), run, statistics=statistics,
                              baseline=baseline if with_earlier else None,
                              history=history.runs if history and with_earlier else (), source=options.output,
                              min_evaluated_share=options.min_evaluated_share, unloaded=suite.unloaded,
                              baseline_reviews=baseline_reviews if with_earlier else None,
                              baseline_warnings=baseline_warnings if with_earlier else (),
                              history_reviews=history_reviews if with_earlier else (), templates_dir=templates_dir,
                              kinds=run_kinds)
        on_stage("writing")
        stages.start(f"writing {options.output}")
        write_workbook(report, options.output)
        stages.finish(f"wrote {options.output}")
        return report

    def noted(found: Sequence[StageFault]) -> tuple[Problem, ...]:  # the Problems sheet says what was left out
        return tuple(Problem(Location(fault.source), f"{fault} (please report it)") for fault in found if fault.source)

    earlier = baseline is not None or bool(history and history.runs)
    try:
        report = build_and_write(earlier, noted(faults))
    except QAReportError:
        raise
    except Exception as error:  # a bug in the comparison or the trend: the workbook without them
        if not earlier:
            raise
        faults.append(StageFault("the comparison with the baseline and the trend", error,
                                 "the workbook has no Changes or Trend sheet and no deltas",
                                 options.baseline or options.history[0]))
        report = build_and_write(False, noted(faults))
    if options.results_path:
        results_path = options.results_path

        def write_results() -> None:
            on_stage("results")
            write_results_file(results_document(report), results_path)

        _optional_stage("writing the results file", f"{results_path} was not written", faults, write_results)
    email_line = None
    if options.email is not None and report.incomplete and not options.send_incomplete:
        email_line = f"email not sent: {report.incomplete} (--send-incomplete sends it all the same)"
    elif options.email is not None and settings.email is not None:
        request, email_settings = options.email, settings.email

        def send() -> str:
            on_stage("email")
            return email_report(options.output, request, settings=email_settings, templates_dir=templates_dir,
                                digest=report.digest)
        try:
            email_line = _optional_stage("the email", "the email was not sent", faults, send)
        except QAReportError as error:
            raise type(error)(f"{options.output} was written, but the email was not sent: {error}") from error
    verdicts = check_gates(report, fail_on_regression=options.fail_on_regression, thresholds=options.thresholds)
    return RunOutcome(report, _summary_line(options.output, report), email_line, comparison_line(report.digest),
                      _judge_line(report), verdicts, judge_failure=judge_failure, notices=tuple(notices),
                      faults=tuple(faults), judge_budget=judge_budget)


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
