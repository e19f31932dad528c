"""The `qareport` command: a thin layer over the library (its parser: `qareport.cli_parser`).

Each subcommand calls library functions and turns library errors into one line on stderr with
exit status 2. Input problems are listed on stderr and in the workbook, and the run goes on. A bug
is one line too, with exit status 3; SIGINT, SIGTERM and SIGHUP clean up and exit 130, 143 and 129
(`qareport.exit_status`). Output that the terminal's encoding cannot show is printed as escapes.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from qareport import answer_correctness_cli
from qareport.cli_parser import build_parser, did_you_mean
from qareport.console import ProgressBar, safe_streams, visible
from qareport.errors import BatchesPending, QAReportError, StrictModeError, UsageError
from qareport.exit_status import (
    HUNG_UP,
    INTERNAL_ERROR,
    INTERRUPTED,
    JUDGE_BATCHES_PENDING,
    JUDGE_FAILED,
    TERMINATED,
    USAGE_ERROR,
)
from qareport.files import remove_leftovers


def _smtp_options(args: argparse.Namespace) -> dict[str, Any]:
    options = {
        "host": args.smtp_host,
        "port": args.smtp_port,
        "security": args.smtp_security,
        "user": args.smtp_user,
        "timeout": args.smtp_timeout,
    }
    return {key: value for key, value in options.items() if value is not None}


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
        audit_size=args.audit_size,
        config_ge6=args.config_ge6,
        judge_options=_judge_options(args),
        baseline=args.baseline,
        history=tuple(args.history or ()),
        reference=args.reference,
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


def command_cache(args: argparse.Namespace) -> int:
    from qareport.caches import CACHES, cache_usage, clear_caches

    known = {cache.name: cache for cache in CACHES}
    for name in args.names:
        if name not in known:
            raise UsageError(f"no cache named {name!r}{did_you_mean(name, known)} (the caches: {', '.join(known)})")
    chosen = tuple(known[name] for name in args.names) if args.names else CACHES
    paths = {"judge": args.cache_path} if args.cache_path else None
    if args.action == "clear":
        for usage in clear_caches(chosen, paths=paths):
            done = f"removed {usage.entries} entries ({_size(usage.size_bytes)})" if usage.exists else "was empty"
            print(f"{usage.name}: {visible(str(usage.path))}: {done}")
        return 0
    for usage in cache_usage(chosen, paths=paths):
        held = f"{usage.entries} entries, {_size(usage.size_bytes)}" if usage.exists else "empty (not created yet)"
        print(f"{usage.name}: {visible(str(usage.path))}: {held}")
        print(f"  {usage.what}" + (f"; not used as it is: {visible(usage.unusable)}" if usage.unusable else ""))
    return 0


def _size(size_bytes: int) -> str:
    """Bytes as a person reads them: 512 B, 1.5 kB, 12.3 MB (powers of 1000)."""
    if size_bytes < 1000:
        return f"{size_bytes} B"
    size = size_bytes / 1000
    for unit in ("kB", "MB"):
        if size < 1000:
            return f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


COMMANDS = {"run": command_run, "validate": command_validate, "email": command_email, "cache": command_cache,
            answer_correctness_cli.PROG: answer_correctness_cli.command}


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where SIGINT raises KeyboardInterrupt: the same clean-up runs (the
    temporary workbook and the rows folder are removed), then exit status 143 (SIGHUP: 129)."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated(signum)


STOPPING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
"""What stops a run from outside: a scheduler or `docker stop` (SIGTERM), a closed terminal (SIGHUP)."""


def _say_stopped(line: str) -> None:
    """The last line of a stopped run; a closed terminal takes no more lines, and that is no error."""
    try:
        print(line, file=sys.stderr)
        sys.stderr.flush()
    except OSError:
        pass


def _internal_error(error: BaseException, what: str = "internal error") -> None:
    """One line on stderr for a bug; the traceback too with QAREPORT_DEBUG=1."""
    if os.environ.get("QAREPORT_DEBUG"):
        print(visible("".join(traceback.format_exception(error))), end="", file=sys.stderr)
    print(f"qareport: {what}: {type(error).__name__}: {visible(error)} "
          "(set QAREPORT_DEBUG=1 for the traceback, and please report it)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    safe_streams(sys.stdout, sys.stderr)
    args = build_parser().parse_args(argv)
    previous: dict[int, Any] = {}
    try:  # SIGTERM (a scheduler's timeout, `docker stop`) and SIGHUP clean up as Ctrl-C does
        for signum in STOPPING_SIGNALS:
            previous[signum] = signal.signal(signum, _raise_terminated)
    except ValueError:  # not the main thread: the caller keeps its own handlers
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
    except Terminated as stop:
        remove_leftovers()  # what a stop in the middle of the clean-up left
        if stop.signum == getattr(signal, "SIGHUP", None):
            _say_stopped("qareport: hung up (SIGHUP); nothing half-written is left")
            return HUNG_UP
        _say_stopped("qareport: terminated (SIGTERM); nothing half-written is left")
        return TERMINATED
    except KeyboardInterrupt:
        remove_leftovers()
        print("qareport: interrupted; nothing half-written is left", file=sys.stderr)
        return INTERRUPTED
    except Exception as error:  # noqa: BLE001 - a bug: say so in one line, unless asked for the traceback
        _internal_error(error)
        return INTERNAL_ERROR
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: a handler not set from Python, which cannot be put back
                signal.signal(signum, handler)
