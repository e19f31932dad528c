"""The `qareport` command: a thin layer over the library.

Each subcommand calls library functions and turns library errors into one line on stderr with
exit status 2. Input problems are listed on stderr and in the workbook, and the run goes on.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from qareport import __version__
from qareport.errors import QAReportError, StrictModeError


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2 (never a traceback)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _add_judge_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("LLM judge (answer correctness, relevance, retrieval)")
    group.add_argument("--no-llm", action="store_true",
                       help="skip the LLM-judged metrics even when an API key is configured")
    group.add_argument("--judge-model", metavar="MODEL",
                       help="chat model of the judge (default gpt-4o-mini; Azure: the deployment)")
    group.add_argument("--embedding-model", metavar="MODEL",
                       help="embedding model for answer relevance (default text-embedding-3-small)")
    group.add_argument("--judge-base-url", metavar="URL",
                       help="OpenAI-compatible endpoint (vLLM, Ollama, LiteLLM...); default $OPENAI_BASE_URL")
    group.add_argument("--judge-concurrency", type=int, metavar="N",
                       help="judge calls in flight at once (default 8)")
    group.add_argument("--judge-timeout", type=float, metavar="SECONDS",
                       help="timeout of one judge call (default 60)")
    group.add_argument("--judge-retries", type=int, metavar="N",
                       help="retries of a call on 429, 5xx and timeouts (default 4)")
    group.add_argument("--no-cache", action="store_true",
                       help="neither read nor write the judge cache")
    group.add_argument("--cache-path", metavar="FILE",
                       help="the judge cache (default ~/.cache/qareport/judge.sqlite3)")


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
    run.add_argument("--match-terms-by", choices=("id_and_name", "id"), default=None,
                     help="identify a term by id and name together (default) or by id alone, "
                          "showing label differences")
    run.add_argument("--templates", metavar="DIR",
                     help="a folder of templates that override the bundled ones")
    run.add_argument("--config", metavar="FILE",
                     help="configuration file (default ./qareport.yaml when present)")
    run.add_argument("--strict", action="store_true",
                     help="treat input problems as a failure: exit status 2, nothing written")
    run.add_argument("--quiet", "-q", action="store_true",
                     help="print only problems and errors, not the closing summary")
    _add_judge_options(run)

    validate = commands.add_parser(
        "validate", help="check test cases (and responses) without evaluating",
        description="Load the inputs and list every problem; exit status 1 when there is any.",
    )
    validate.add_argument("testcases", nargs="+", metavar="TESTCASES")
    validate.add_argument("--responses", "-r", nargs="*", default=[], metavar="PATH")
    return parser


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
    }
    return {key: value for key, value in options.items() if value is not None}


def _print_problems(problems: Sequence[Any]) -> None:
    for problem in problems:
        print(f"qareport: {problem}", file=sys.stderr)


def command_run(args: argparse.Namespace) -> int:
    from qareport.pipeline import RunOptions, run_pipeline

    options = RunOptions(
        testcases=tuple(args.testcases),
        responses=tuple(args.responses),
        output=args.output,
        results_path=args.results,
        match_terms_by=args.match_terms_by,
        templates_dir=args.templates,
        config_path=args.config,
        strict=args.strict,
        judge_options=_judge_options(args),
    )
    outcome = run_pipeline(options, on_problems=_print_problems, progress=sys.stderr)
    if not args.quiet:
        print(outcome.summary_line)
    return 0


def command_validate(args: argparse.Namespace) -> int:
    from qareport.loading import load_suite

    suite = load_suite(args.testcases, args.responses)
    _print_problems(suite.problems)
    print(f"{len(suite.cases)} test cases, {len(suite.responses)} responses, {len(suite.problems)} problems")
    return 1 if suite.problems else 0


COMMANDS = {"run": command_run, "validate": command_validate}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except StrictModeError as error:
        print(f"qareport: {error}", file=sys.stderr)
        return 2
    except QAReportError as error:
        print(f"qareport: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("qareport: interrupted; nothing was written", file=sys.stderr)
        return 130
    except Exception as error:  # a bug: say so in one line, unless asked for the traceback
        if os.environ.get("QAREPORT_DEBUG"):
            raise
        print(
            f"qareport: internal error: {type(error).__name__}: {error} "
            "(set QAREPORT_DEBUG=1 for the traceback, and please report it)",
            file=sys.stderr,
        )
        return 1
