"""The `qareport` command: a thin layer over the library.

Each subcommand calls library functions and turns library errors into one line on stderr with
exit status 2. Input problems are listed on stderr and in the workbook, and the run goes on. A bug
is one line too, with exit status 3; SIGINT and SIGTERM clean up and exit 130 and 143
(`qareport.exit_status`). Output that the terminal's encoding cannot show is printed as escapes.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import traceback
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from qareport import __version__
from qareport.console import ProgressBar, safe_streams, visible
from qareport.errors import BatchesPending, QAReportError, StrictModeError
from qareport.exit_status import (
    INTERNAL_ERROR,
    INTERRUPTED,
    JUDGE_BATCHES_PENDING,
    JUDGE_FAILED,
    TERMINATED,
    USAGE_ERROR,
)
from qareport.files import remove_leftovers
from qareport.records import TermMatching


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2 (never a traceback)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


DECLARED = re.compile(r"\{(JudgeSettings|RunSettings|EmailSettings|RunOptions|PassRules|DEFAULT_PORTS)\.(\w+)\}")
"""How a help text says a setting's default: `{JudgeSettings.timeout}`, `{DEFAULT_PORTS.ssl}`."""


def _declared(record: str, name: str) -> str:
    """The default declared on a settings record's field (read only when the help is shown:
    importing the settings takes a moment that `--version` and a usage error need not wait for)."""
    from qareport import settings
    from qareport.evaluation_options import PassRules
    from qareport.judge.settings import JudgeSettings
    from qareport.pipeline import RunOptions
    from qareport.setting_sources import field_default

    if record == "DEFAULT_PORTS":
        return str(settings.DEFAULT_PORTS[name])
    value = field_default({"JudgeSettings": JudgeSettings, "RunSettings": settings.RunSettings,
                           "EmailSettings": settings.EmailSettings, "RunOptions": RunOptions,
                           "PassRules": PassRules}[record], name)
    return f"{value:g}" if isinstance(value, float) else str(value)


class _Help(argparse.HelpFormatter):
    """argparse's help, the settings' declared defaults filled in (`DECLARED`)."""

    def _expand_help(self, action: argparse.Action) -> str:
        return DECLARED.sub(lambda match: _declared(match[1], match[2]), super()._expand_help(action))


def _one_of(choices: type[StrEnum]) -> dict[str, Any]:
    """An option whose value is one of `choices` (an enum), None when not given: the settings
    decide its default, so that it is written once."""

    def convert(text: str) -> StrEnum:
        try:
            return choices(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"invalid choice: {text!r} (choose from {', '.join(choices)})") from None

    return {"type": convert, "default": None, "metavar": "{" + ",".join(choices) + "}"}


_MATCH_TERMS_BY = _one_of(TermMatching)


def _add_judge_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("LLM judge (answer correctness, relevance, retrieval)")
    group.add_argument("--no-llm", action="store_true",
                       help="skip the LLM-judged metrics even when an API key is configured")
    group.add_argument("--judge-model", metavar="MODEL",
                       help="chat model of the judge (default {JudgeSettings.model}; Azure: the deployment)")
    group.add_argument("--embedding-model", metavar="MODEL",
                       help="embedding model for answer relevance (default {JudgeSettings.embedding_model})")
    group.add_argument("--judge-base-url", metavar="URL",
                       help="OpenAI-compatible endpoint (vLLM, Ollama, LiteLLM...); default $OPENAI_BASE_URL")
    group.add_argument("--judge-concurrency", type=int, metavar="N",
                       help="judge calls in flight at once (default {JudgeSettings.concurrency})")
    group.add_argument("--judge-timeout", type=float, metavar="SECONDS",
                       help="timeout of one judge call (default {JudgeSettings.timeout})")
    group.add_argument("--judge-retries", type=int, metavar="N",
                       help="retries of a call by the openai SDK on 408, 409, 429, 5xx, connection errors "
                            "and timeouts (default {JudgeSettings.max_retries})")
    group.add_argument("--cache-path", metavar="FILE",
                       help="the judge cache (default ~/.cache/qareport/judge.sqlite3)")
    group.add_argument("--judge-budget", type=float, metavar="DOLLARS",
                       help="stop sending judgments before the judge's spend would pass DOLLARS; the rest are "
                            f"'not judged: budget reached' (exit status {JUDGE_FAILED}; default judge.budget, "
                            "no limit)")
    group.add_argument("--judge-batch", action="store_true", default=None,
                       help="send the judgments not in the cache through the OpenAI Batch API, at batch prices "
                            "(default judge.batch); see 'Judging in batches' in the README")
    group.add_argument("--judge-batch-wait", type=float, metavar="SECONDS",
                       help="wait at most SECONDS for the batches, then stop with exit status "
                            f"{JUDGE_BATCHES_PENDING} (0: submit and stop); the same command run again collects "
                            "them (default judge.batch_wait, until they end)")
    group.add_argument("--judge-batch-poll", type=float, metavar="SECONDS",
                       help="the longest interval between two looks at a batch; polling starts at 0.5 s and "
                            "grows by half each time up to it (default {JudgeSettings.batch_poll})")
    group.add_argument("--judge-repeats", type=int, metavar="N",
                       help="ask each judgment N times (1 to 20), each its own cache entry; a metric's value is "
                            "the mean, and Statistics splits its variance into the judge's and the system's "
                            "(default judge.repeats, 1)")
    group.add_argument("--estimate", action="store_true",
                       help="load and evaluate, then print the judgments needed, how many are cached, their tokens "
                            "and cost (direct and in batches); no API request, nothing written, exit status 0")


def _add_message_options(parser: Any, *, prefix: str, to_help: str) -> None:
    """To, cc, subject and sender: `--email-to` ... on `run`, `--to` ... on `email`."""
    parser.add_argument(f"{prefix}to", nargs="+", metavar="ADDRESS", help=to_help)
    parser.add_argument(f"{prefix}cc", nargs="+", metavar="ADDRESS", help="copy recipients (default email.cc)")
    parser.add_argument(f"{prefix}subject", metavar="TEXT",
                        help="subject line (default: the verdict, e.g. '2 regressions, macro recall 0.84 (-0.05)')")
    parser.add_argument(f"{prefix}from", dest="email_from" if prefix == "--email-" else "sender",
                        metavar="ADDRESS", help="sender (default $QAREPORT_SMTP_FROM, email.from, or the SMTP login "
                                                "when it is an address; never made up)")


def _add_smtp_options(parser: argparse.ArgumentParser, group_title: str) -> None:
    group = parser.add_argument_group(
        group_title,
        "The password comes from $QAREPORT_SMTP_PASSWORD or email.password in qareport.yaml, never "
        "from the command line. Each setting also reads email.<name> in qareport.yaml and "
        "$QAREPORT_SMTP_<NAME>.",
    )
    group.add_argument("--smtp-host", metavar="HOST",
                       help="SMTP server (default $QAREPORT_SMTP_HOST or email.host)")
    group.add_argument("--smtp-port", type=int, metavar="PORT",
                       help="SMTP port (default {DEFAULT_PORTS.starttls} for STARTTLS, {DEFAULT_PORTS.ssl} for SSL, "
                            "{DEFAULT_PORTS.none} without encryption)")
    group.add_argument("--smtp-security", choices=("starttls", "ssl", "none"),  # settings.SECURITIES
                       help="encryption: STARTTLS (default), SSL from the start, or none (a local relay)")
    group.add_argument("--smtp-user", metavar="USER",
                       help="log in as USER (default $QAREPORT_SMTP_USER or email.user; no login without one)")
    group.add_argument("--smtp-timeout", type=float, metavar="SECONDS",
                       help="give up on the SMTP server after this long (default {EmailSettings.timeout})")


def _smtp_options(args: argparse.Namespace) -> dict[str, Any]:
    options = {
        "host": args.smtp_host,
        "port": args.smtp_port,
        "security": args.smtp_security,
        "user": args.smtp_user,
        "timeout": args.smtp_timeout,
    }
    return {key: value for key, value in options.items() if value is not None}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="qareport",
        description="Evaluate a question-answering or text-to-query system and write an Excel report.",
    )
    parser.add_argument("--version", action="version", version=f"qareport {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    run = commands.add_parser(
        "run", help="evaluate responses against test cases and write the workbook",
        description="Load test cases and responses, score them, and write the Excel report.",
    )
    run.add_argument("testcases", nargs="+", metavar="TESTCASES",
                     help="test-case YAML files or directories (searched recursively)")
    run.add_argument("--responses", "-r", nargs="+", required=True, metavar="PATH",
                     help="response files (JSON, JSON Lines, YAML) or directories")
    run.add_argument("--output", "-o", default="report.xlsx", metavar="REPORT.xlsx",
                     help="the workbook to write (default report.xlsx)")
    run.add_argument("--results", metavar="FILE",
                     help="also write per-question results and aggregates (.yaml, .yml or .json)")
    run.add_argument("--match-terms-by", **_MATCH_TERMS_BY,
                     help="identify a term by id and name together (default) or by id alone, "
                          "showing label differences")
    run.add_argument("--grade-extras", type=int, metavar="N", default=None,
                     help="extra terms an 'acceptable' indicator-selection grade allows (default "
                          "{RunSettings.acceptable_extras}; more "
                          "is 'problematic')")
    run.add_argument("--answer-pass-f1", type=_unit_fraction, metavar="F1", default=None,
                     help="with attempts per case: an attempt's answer passes at this answer F1 or above "
                          "(default {PassRules.answer_f1})")
    run.add_argument("--templates", metavar="DIR",
                     help="a folder of templates that override the bundled ones")
    run.add_argument("--config", metavar="FILE",
                     help="configuration file (default ./qareport.yaml, else [tool.qareport] in ./pyproject.toml)")
    run.add_argument("--strict", action="store_true",
                     help="treat input problems as a failure: exit status 2, nothing written")
    run.add_argument("--steps-semantics", type=int, choices=(5, 6), default=None,
                     help="graphrag-eval's steps rules: 5 scores the last reference group (default, as the "
                          "seed), 6 every group, error responses too, and the time-series and IRI steps")
    run.add_argument("--config-ge6", metavar="FILE",
                     help="a graphrag-eval 6.x configuration file: its llm section configures the judge, "
                          "its custom prompt and custom_evaluations are used")
    run.add_argument("--cluster-by-tag", metavar="PREFIX", default=None,
                     help="a conversation case's tag starting with PREFIX names its cluster (cases that succeed "
                          "and fail together), for the intervals and tests; a 'cluster' key in the case wins")
    run.add_argument("--no-cache", action="store_true",
                     help="neither read nor write the judge's cache of answers")
    talk = run.add_mutually_exclusive_group()
    talk.add_argument("--quiet", "-q", action="store_true",
                      help="print only problems, errors and the result line")
    talk.add_argument("--verbose", "-v", action="store_true",
                      help="also print each stage (loading, evaluating, writing) with its time")
    run.add_argument("--baseline", metavar="LAST_RUN",
                     help="compare with an earlier run (a qareport workbook or --results file): adds the "
                          "Changes sheet and the deltas in the Summary")
    run.add_argument("--history", nargs="+", metavar="PATH",
                     help="earlier runs (workbooks, results files, or folders of them): adds the Trend sheet")
    gates = run.add_argument_group(
        "gates (exit status 1 after the workbook is written and any email sent)",
        "For a CI pipeline or a scheduled job. Exit status 2 stays for usage and input errors.")
    gates.add_argument("--fail-on-regression", action="store_true",
                       help="fail when the comparison with --baseline finds a regressed case")
    gates.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE",
                       help="fail when a headline metric is below VALUE, a share between 0 and 1 (repeatable); "
                            "METRIC is macro_precision, "
                            "macro_recall, steps_score, answer_f1, answer_relevance, or METRIC@TAG for the "
                            "cases of one tag, e.g. macro_recall@weo=0.8")
    gates.add_argument("--min-evaluated", type=float, default=None, metavar="SHARE",
                       help="below this share of cases evaluated the run is INCOMPLETE: no deltas, no email, "
                            "exit status 1 (default {RunOptions.min_evaluated_share})")
    gates.add_argument("--send-incomplete", action="store_true",
                       help="send the email (--email-to) even when the run is incomplete")
    _add_judge_options(run)
    mail = run.add_argument_group("email the report once written (see also 'qareport email')")
    _add_message_options(mail, prefix="--email-", to_help="send the workbook to these addresses, with the "
                                                           "verdict and the cases that moved in the body")
    _add_smtp_options(run, "SMTP server (for --email-to)")

    email = commands.add_parser(
        "email", help="email a report: headline metrics and regressions in the body, the workbook attached",
        description="Email a workbook qareport wrote: an HTML body with the headline metrics, the changes "
                    "against its baseline and the top regressions, a plain-text alternative, and the "
                    "workbook attached. Sends through SMTP, or writes the message with --eml.",
    )
    email.add_argument("report", metavar="REPORT.xlsx", help="a workbook written by 'qareport run'")
    _add_message_options(email, prefix="--", to_help="recipients (default email.to in qareport.yaml)")
    email.add_argument("--eml", metavar="OUT.eml",
                       help="write the message to this file instead of sending it")
    email.add_argument("--templates", metavar="DIR",
                       help="a folder whose email.html / email.txt override the bundled ones")
    email.add_argument("--config", metavar="FILE",
                       help="configuration file (default ./qareport.yaml, else [tool.qareport] in ./pyproject.toml)")
    _add_smtp_options(email, "SMTP server")

    validate = commands.add_parser(
        "validate", help="check test cases (and responses) without evaluating",
        description="Check the test cases alone, or with --responses also their pairing with the responses "
                    "and everything 'qareport run' would refuse in them (the same loading and scoring, with "
                    "the same options, no judge, nothing written); list every problem (file:line: what to "
                    "fix). Exit status 0 when all is valid, 1 when there are problems, 2 when a named path "
                    "does not exist or an option or configuration is wrong.",
    )
    validate.add_argument("testcases", nargs="+", metavar="TESTCASES",
                          help="test-case YAML files or directories (searched recursively)")
    validate.add_argument("--responses", "-r", nargs="+", default=[], metavar="PATH",
                          help="response files or directories: also check that every case has a response "
                               "and every response a case")
    validate.add_argument("--steps-semantics", type=int, choices=(5, 6), default=None,
                          help="graphrag-eval's steps rules to check by, as for 'run' (default: the configuration's, "
                               "else 5)")
    validate.add_argument("--match-terms-by", **_MATCH_TERMS_BY,
                          help="identify a term by id and name together (default) or by id alone, as for 'run'")
    validate.add_argument("--config", metavar="FILE",
                          help="configuration file (default ./qareport.yaml, else [tool.qareport] in ./pyproject.toml)")
    validate.add_argument("--config-ge6", metavar="FILE",
                          help="a graphrag-eval 6.x configuration file, checked as 'run' checks it")
    return parser


def _unit_fraction(text: str) -> float:
    """A number from 0 to 1 (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1 (got {text!r})")
    return value


def _judge_options(args: argparse.Namespace) -> dict[str, Any]:
    options = {
        "enabled": False if args.no_llm else None,
        "model": args.judge_model,
        "embedding_model": args.embedding_model,
        "base_url": args.judge_base_url,
        "concurrency": args.judge_concurrency,
        "timeout": args.judge_timeout,
        "max_retries": args.judge_retries,
        "use_cache": False if args.no_cache else None,
        "cache_path": args.cache_path,
        "budget": args.judge_budget,
        "batch": args.judge_batch,
        "batch_wait": args.judge_batch_wait,
        "batch_poll": args.judge_batch_poll,
        "repeats": args.judge_repeats,
    }
    return {key: value for key, value in options.items() if value is not None}


def _print_problems(problems: Sequence[Any]) -> None:
    for problem in problems:
        print(f"qareport: {visible(problem)}", file=sys.stderr)


def _print_warning(message: str) -> None:
    print(f"qareport: {visible(message)}", file=sys.stderr)


def command_run(args: argparse.Namespace) -> int:
    from qareport.emailing import EmailRequest
    from qareport.pipeline import RunOptions, run_pipeline

    email = None
    if args.email_to:
        email = EmailRequest(to=tuple(args.email_to), cc=tuple(args.email_cc or ()), subject=args.email_subject,
                             sender=args.email_from, smtp=_smtp_options(args))
    from qareport.gates import parse_threshold
    from qareport.pipeline import estimate_pipeline
    from qareport.report import MIN_EVALUATED_SHARE

    options = RunOptions(
        testcases=tuple(args.testcases),
        responses=tuple(args.responses),
        output=args.output,
        results_path=args.results,
        match_terms_by=args.match_terms_by,
        templates_dir=args.templates,
        config_path=args.config,
        strict=args.strict,
        steps_semantics=args.steps_semantics,
        acceptable_extras=args.grade_extras,
        answer_pass_f1=args.answer_pass_f1,
        config_ge6=args.config_ge6,
        judge_options=_judge_options(args),
        baseline=args.baseline,
        history=tuple(args.history or ()),
        email=email,
        send_incomplete=args.send_incomplete,
        min_evaluated_share=MIN_EVALUATED_SHARE if args.min_evaluated is None else args.min_evaluated,
        fail_on_regression=args.fail_on_regression,
        thresholds=tuple(parse_threshold(text) for text in args.fail_under),
        cluster_by_tag=args.cluster_by_tag,
    )
    if args.estimate:
        estimated = estimate_pipeline(options, on_problems=_print_problems)
        if estimated.estimate is None:
            print(f"qareport: nothing to estimate: {visible(estimated.skipped_reason or 'the judge has no work')}")
        else:
            for line in estimated.estimate.lines():
                print(visible(line))
        return 0
    outcome = run_pipeline(options, on_problems=_print_problems,
                           on_progress=None if args.quiet else ProgressBar(sys.stderr, verbose=args.verbose),
                           on_warning=_print_warning)
    if not args.quiet:
        for notice in outcome.notices:
            print(f"qareport: {visible(notice)}", file=sys.stderr)
    if outcome.judge_budget and outcome.judge_failure == outcome.judge_budget:
        print(f"qareport: the judge budget ended the judging: {visible(outcome.judge_budget)}; these judgments are "
              f"'not judged: budget reached' in {visible(options.output)}; a rerun with a larger budget reuses the "
              f"judge cache (exit status {JUDGE_FAILED})", file=sys.stderr)
    elif outcome.judge_failure:
        print(f"qareport: JUDGE FAILED: {visible(outcome.judge_failure)}; the judgments not obtained are marked "
              f"not evaluated in {visible(options.output)} (exit status {JUDGE_FAILED})", file=sys.stderr)
    print(visible(outcome.summary_line))
    if outcome.comparison_line:
        print(visible(outcome.comparison_line))
    if outcome.judge_line:
        print(visible(outcome.judge_line))
    if outcome.email_line and not args.quiet:
        print(visible(outcome.email_line))
    for verdict in outcome.verdicts:
        if not verdict.passed or not args.quiet:
            print(f"{'gate passed' if verdict.passed else 'GATE FAILED'}: {verdict.gate}: {visible(verdict.why)}")
    for fault in outcome.faults:
        _internal_error(fault.error, f"{args.output} was written, but {fault.left_out}: internal error in "
                                     f"{fault.stage}")
    return outcome.exit_status


def command_email(args: argparse.Namespace) -> int:
    from qareport.emailing import EmailRequest, email_options, email_report
    from qareport.preflight import check_header_text, check_templates
    from qareport.settings import resolve_settings

    check_header_text("--subject", [args.subject])
    check_header_text("--to", args.to or ())
    check_header_text("--cc", args.cc or ())
    check_header_text("--from", [args.sender])
    request = EmailRequest(
        to=tuple(args.to or ()), cc=tuple(args.cc or ()), subject=args.subject, sender=args.sender,
        eml_path=args.eml, smtp=_smtp_options(args),
    )
    settings = resolve_settings(run_options={"templates": args.templates}, email_options=email_options(request),
                                config_path=args.config, with_judge=False, with_email=True)
    assert settings.email is not None
    check_templates(settings.run.templates)
    print(visible(email_report(args.report, request, settings=settings.email, templates_dir=settings.run.templates,
                               on_problem=lambda problem: _print_problems([problem]))))
    return 0


def command_validate(args: argparse.Namespace) -> int:
    from qareport.validation import validate_inputs

    validation = validate_inputs(args.testcases, args.responses, steps_semantics=args.steps_semantics,
                                 match_terms_by=args.match_terms_by, config_path=args.config,
                                 config_ge6=args.config_ge6)
    suite = validation.suite
    for problem in validation.problems:
        print(visible(problem))
    checked = f"{len(suite.cases)} test cases" + (f", {len(suite.responses)} responses" if args.responses else "")
    if validation.problems:
        print(f"qareport: {checked}: {len(validation.problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"qareport: {checked}: valid")
    return 0


COMMANDS = {"run": command_run, "validate": command_validate, "email": command_email}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where SIGINT raises KeyboardInterrupt: the same clean-up runs (the
    temporary workbook and the rows folder are removed), then exit status 143."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def _internal_error(error: BaseException, what: str = "internal error") -> None:
    """One line on stderr for a bug; the traceback too with QAREPORT_DEBUG=1."""
    if os.environ.get("QAREPORT_DEBUG"):
        print(visible("".join(traceback.format_exception(error))), end="", file=sys.stderr)
    print(f"qareport: {what}: {type(error).__name__}: {visible(error)} "
          "(set QAREPORT_DEBUG=1 for the traceback, and please report it)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    safe_streams(sys.stdout, sys.stderr)
    args = build_parser().parse_args(argv)
    previous = None
    try:  # SIGTERM (a scheduler's timeout, `docker stop`) cleans up as Ctrl-C does
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: the caller keeps its own handler
        pass
    try:
        return COMMANDS[args.command](args)
    except StrictModeError as error:
        print(f"qareport: {visible(error)}", file=sys.stderr)
        return USAGE_ERROR
    except BatchesPending as error:
        print(f"qareport: {visible(error)} (exit status {JUDGE_BATCHES_PENDING})", file=sys.stderr)
        return JUDGE_BATCHES_PENDING
    except QAReportError as error:
        print(f"qareport: {visible(error)}", file=sys.stderr)
        return USAGE_ERROR
    except Terminated:
        remove_leftovers()  # what a stop in the middle of the clean-up left
        print("qareport: terminated (SIGTERM); nothing half-written is left", file=sys.stderr)
        return TERMINATED
    except KeyboardInterrupt:
        remove_leftovers()
        print("qareport: interrupted; nothing half-written is left", file=sys.stderr)
        return INTERRUPTED
    except Exception as error:  # noqa: BLE001 - a bug: say so in one line, unless asked for the traceback
        _internal_error(error)
        return INTERNAL_ERROR
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
