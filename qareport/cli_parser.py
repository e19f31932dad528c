"""The `qareport` command line's parser: its subcommands, their options, help and examples.

A usage error is one line on stderr and exit status 2. Long options are never abbreviated
(`--base` is not `--baseline`: an option added later would change what an old command line
means); a mistyped option or subcommand gets the nearest one offered ("did you mean ...?").
Help texts say a setting's default as `{JudgeSettings.timeout}`, filled in from where it is
declared only when the help is shown, so `--version` and a usage error stay fast.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any, NoReturn

from qareport import __version__, answer_correctness_cli
from qareport.exit_status import JUDGE_BATCHES_PENDING, JUDGE_FAILED
from qareport.records import TermMatching


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """"; did you mean X?" for the one choice `word` starts, else the closest one, else nothing."""
    choices = list(choices)
    started = [choice for choice in choices if choice.startswith(word)]
    close = started if len(started) == 1 else difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every option a parser takes, as recorded by `_Parser.add_argument` (argparse itself keeps them
    only in a private list)."""
    return list(getattr(parser, "options", ()))


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2 (never a traceback), long options
    are never abbreviated, and a mistyped one is answered with the nearest (`commands`: the
    subcommands' parsers, by name)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        kwargs.setdefault("allow_abbrev", False)
        self.options: list[str] = []
        super().__init__(*args, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.options.extend(action.option_strings)
        return action

    def add_argument_group(self, *args: Any, **kwargs: Any) -> Any:
        return self._recording(super().add_argument_group(*args, **kwargs))

    def add_mutually_exclusive_group(self, **kwargs: Any) -> Any:
        return self._recording(super().add_mutually_exclusive_group(**kwargs))

    def _recording(self, group: Any) -> Any:
        """A group whose options are recorded here too (a group adds them past `add_argument`)."""
        add = group.add_argument

        def add_and_record(*args: Any, **kwargs: Any) -> argparse.Action:
            action: argparse.Action = add(*args, **kwargs)
            self.options.extend(action.option_strings)
            return action

        group.add_argument = add_and_record
        return group

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        given = list(sys.argv[1:] if args is None else args)
        command = next((word for word in given if not word.startswith("-")), None)
        if self.commands and command is not None and command not in self.commands:
            self.error(f"unknown command {command!r}{did_you_mean(command, self.commands)}")
        parsed, extras = self.parse_known_args(given, namespace)
        if extras:
            parser = self.commands.get(getattr(parsed, "command", None) or "", self)
            unknown = next((word for word in extras if word.startswith("-")), "").split("=")[0]
            parser.error(f"unrecognized arguments: {' '.join(extras)}"
                         f"{did_you_mean(unknown, option_strings(parser)) if unknown else ''}")
        return parsed

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


DECLARED = re.compile(r"\{(JudgeSettings|RunSettings|EmailSettings|RunOptions|PassRules|DEFAULT_PORTS|CACHES)\.(\w+)\}")
"""How a help text says a setting's default: `{JudgeSettings.timeout}`, `{DEFAULT_PORTS.ssl}`
(`{CACHES.names}`: the caches `qareport cache` knows)."""


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
    if record == "CACHES":
        from qareport.caches import CACHES

        return ", ".join(cache.name for cache in CACHES)
    value = field_default({"JudgeSettings": JudgeSettings, "RunSettings": settings.RunSettings,
                           "EmailSettings": settings.EmailSettings, "RunOptions": RunOptions,
                           "PassRules": PassRules}[record], name)
    return f"{value:g}" if isinstance(value, float) else str(value)


class _Help(argparse.HelpFormatter):
    """argparse's help, the settings' declared defaults filled in (`DECLARED`); a text of several
    lines (the examples) keeps its lines."""

    def _expand_help(self, action: argparse.Action) -> str:
        return DECLARED.sub(lambda match: _declared(match[1], match[2]), super()._expand_help(action))

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="qareport",
        description="Evaluate a question-answering or text-to-query system and write an Excel report.",
        epilog="Each command's options and examples: qareport COMMAND --help",
    )
    parser.add_argument("--version", action="version", version=f"qareport {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    run = commands.add_parser(
        "run", help="evaluate responses against test cases and write the workbook",
        description="Load test cases and responses, score them, and write the Excel report.",
        epilog=RUN_EXAMPLES,
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
    run.add_argument("--audit-size", type=int, metavar="N", default=None,
                     help="judgments drawn at random for the analysts to audit; the judge's error rate, its "
                          "true-positive and true-negative rates and kappa are measured on them (default "
                          "{RunSettings.audit_size}, 0 for none)")
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
    run.add_argument("--reference", metavar="RUN",
                     help="a pinned reference run (a qareport workbook or --results file): the drift line under "
                          "the verdict measures from it instead of the first run of --history")
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
        epilog=EMAIL_EXAMPLES,
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
        epilog=VALIDATE_EXAMPLES,
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

    answer_correctness = commands.add_parser(
        answer_correctness_cli.PROG, help="judge the answer correctness of the rows of a TSV file (graphrag-eval's)",
        description=answer_correctness_cli.DESCRIPTION, epilog=answer_correctness_cli.EPILOG,
    )
    answer_correctness_cli.add_arguments(answer_correctness)

    cache = commands.add_parser(
        "cache", help="show where qareport's caches are and what they hold, or clear them",
        description="Show each cache qareport keeps between runs: where it is, its entries and its size; or "
                    "clear them. A cleared cache costs one slower run (the judge's replies are "
                    "asked again, and paid for).",
        epilog=CACHE_EXAMPLES,
    )
    cache.add_argument("action", nargs="?", choices=("show", "clear"), default="show",
                       help="show the caches (default), or clear them")
    cache.add_argument("names", nargs="*", metavar="NAME",
                       help="the caches to show or clear: {CACHES.names} (default: all of them)")
    cache.add_argument("--cache-path", metavar="FILE",
                       help="the judge cache, when runs are given another one (--cache-path, judge.cache_path)")
    parser.commands = dict(commands.choices)
    return parser


RUN_EXAMPLES = """\
examples:
  qareport run testcases --responses responses --output report.xlsx
  qareport run testcases -r responses -o report.xlsx --baseline last-week.xlsx --fail-on-regression
  qareport run testcases -r responses --fail-under macro_recall=0.8 --email-to team@example.com
  qareport run testcases -r responses --estimate
"""
EMAIL_EXAMPLES = """\
examples:
  qareport email report.xlsx --to team@example.com --cc lead@example.com
  qareport email report.xlsx --eml message.eml
"""
VALIDATE_EXAMPLES = """\
examples:
  qareport validate testcases
  qareport validate testcases --responses responses
"""
CACHE_EXAMPLES = """\
examples:
  qareport cache
  qareport cache clear
  qareport cache clear judge
"""


def _unit_fraction(text: str) -> float:
    """A number from 0 to 1 (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1 (got {text!r})")
    return value


