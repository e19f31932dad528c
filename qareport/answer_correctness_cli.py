"""`qareport answer-correctness -i IN.tsv -o OUT.tsv`: the seed's answer-correctness command.

It is a subcommand of `qareport`, not a console script of its own: graphrag-eval installs an
`answer-correctness` script, and two packages owning one script name overwrite each other.

Reads a TSV with the columns `Question`, `Reference answer` and `Actual answer` (others are kept),
asks the judge to count the claims of each pair, and writes one row per input row: the input
columns, then graphrag-eval's `#Reference`, `#PTarget`, `#Matching`, `Reasoning`, `Error`, then
`Recall`, `Precision`, `F1` and `Cost`.

Rows are written as they are judged. Run it again with the same output and it resumes: rows of the
existing output that were judged without error are kept (matched by question, reference and actual
answer), only the others are judged. The finished file lists the rows in input order.

Exit status: 0 when every row was judged, 1 when some rows ended in error (run again to retry
them), 2 when nothing could be done (missing file or column, no judge configured), 4 when the judge
failed (a rejected key, a server that cannot be reached, calls failing after their retries): the
rows it could not judge say "not judged: ..." in `Error` and are asked again on the next run.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from qareport.console import ProgressBar
from qareport.errors import QAReportError, UsageError
from qareport.exit_status import JUDGE_FAILED
from qareport.files import atomic_path

if TYPE_CHECKING:
    from qareport.judge.settings import JudgeSettings

PROG = "answer-correctness"
IN_FIELDS = ("Question", "Reference answer", "Actual answer")
OUT_FIELDS = ("#Reference", "#PTarget", "#Matching", "Reasoning", "Error")
"""graphrag-eval's output columns (its answer_correctness.OUT_FIELDS)."""
EXTRA_FIELDS = ("Recall", "Precision", "F1", "Cost")
RESULT_FIELDS = OUT_FIELDS + EXTRA_FIELDS

RowKey = tuple[str, str, str]

DESCRIPTION = ("Judge answer correctness (claims in the reference and the actual answer, matching claims) of the "
               "rows of a TSV file with an OpenAI-compatible LLM.")
EPILOG = """\
Environment: OPENAI_API_KEY, OPENAI_BASE_URL, AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT,
OPENAI_API_VERSION. Rerunning with the same output resumes.

examples:
  qareport answer-correctness -i questions.tsv -o judged.tsv
  qareport answer-correctness -i questions.tsv -o judged.tsv --model gpt-4o --concurrency 16
  qareport answer-correctness -i questions.tsv -o judged.tsv -c graphrag-eval.yaml
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's options (`qareport answer-correctness`); `{JudgeSettings.timeout}` in a help text is
    the declared default, filled in when the help is shown (`qareport.cli_parser`)."""
    parser.add_argument("-i", "--in-file", "--input-tsv-file-path", dest="in_file", required=True, metavar="IN.tsv",
                        help="TSV with the columns Question, Reference answer, Actual answer")
    parser.add_argument("-o", "--out-file", "--output-tsv-file-path", dest="out_file", required=True,
                        metavar="OUT.tsv", help="TSV to write; if it exists, rows judged without error are kept")
    parser.add_argument("-c", "--config-yaml-file-path", metavar="FILE",
                        help="a graphrag-eval 6.x configuration: its llm.generation is the judge, its "
                             "answer_correctness.prompt (if any) the prompt")
    judge = parser.add_argument_group("judge")
    judge.add_argument("--model", help="chat model (default {JudgeSettings.model})")
    judge.add_argument("--base-url", help="OpenAI-compatible server, e.g. http://localhost:11434/v1")
    judge.add_argument("--azure-endpoint", help="Azure OpenAI endpoint")
    judge.add_argument("--azure-deployment", help="Azure deployment (default: the model name)")
    judge.add_argument("--api-version", help="Azure OpenAI API version")
    judge.add_argument("--timeout", type=float, help="seconds per request (default {JudgeSettings.timeout})")
    judge.add_argument("--max-retries", type=int,
                       help="retries of a failed request by the openai SDK (default {JudgeSettings.max_retries})")
    judge.add_argument("--concurrency", type=int,
                       help="requests in flight at most (default {JudgeSettings.concurrency})")
    judge.add_argument("--temperature", type=float, help="sampling temperature (default {JudgeSettings.temperature})")
    judge.add_argument("--response-format", choices=("json_schema", "json_object"),
                       help="structured output mode (default {JudgeSettings.response_format})")
    judge.add_argument("--no-cache", action="store_true", help="do not read or write the reply cache")
    judge.add_argument("--cache-path", metavar="FILE",
                       help="reply cache (default ~/.cache/qareport/judge.sqlite3)")
    judge.add_argument("--templates", metavar="DIR",
                       help="folder whose judge/answer_correctness.txt replaces the packaged prompt")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")


def _raise_field_size_limit() -> None:
    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return
        except OverflowError:
            limit //= 10


def _utf8(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise UsageError(f"{path}:{line}: not UTF-8 text (byte 0x{data[error.start]:02x}); "
                         "save the file as UTF-8") from None


def read_input(path: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of the input TSV."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read ({error.strerror})") from None
    with io.StringIO(_utf8(data, path), newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        header = list(reader.fieldnames or [])
        missing = [name for name in IN_FIELDS if name not in header]
        if missing:
            found = ", ".join(repr(h) for h in header) or "nothing"
            raise UsageError(
                f"{path}: missing column {missing[0]!r} (found {found}); the header must name "
                + ", ".join(repr(f) for f in IN_FIELDS)
            )
        try:
            rows = [{k: (v if v is not None else "") for k, v in row.items() if k is not None}
                    for row in reader]
        except csv.Error as error:
            raise UsageError(f"{path}: line {reader.line_num}: {error}") from None
    return header, rows


def row_key(row: dict[str, str]) -> RowKey:
    return (row.get("Question", ""), row.get("Reference answer", ""), row.get("Actual answer", ""))


def read_previous(path: str, header: list[str]) -> dict[RowKey, dict[str, str]]:
    """Rows of an earlier output judged without error, by key. An unfinished last row is ignored."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise UsageError(f"{path}: cannot read the existing output ({error.strerror})") from None
    kept: dict[RowKey, dict[str, str]] = {}
    with io.StringIO(_utf8(data, path), newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        fields = list(reader.fieldnames or [])
        if not fields:
            return {}
        missing = [name for name in IN_FIELDS + OUT_FIELDS if name not in fields]
        if missing:
            raise UsageError(
                f"{path} exists and is not an answer-correctness output (no column {missing[0]!r}); "
                "remove it or choose another output file"
            )
        try:
            for row in reader:
                if None in row or any(value is None for value in row.values()):
                    continue  # wrong number of fields: an unfinished row
                if row.get("Error") or not row.get("#Reference", "").strip().isdigit():
                    continue
                kept[row_key(row)] = row
        except csv.Error:
            pass  # an unfinished last row (cut inside a quoted field)
    return kept


def output_header(input_header: list[str]) -> list[str]:
    return [name for name in input_header if name not in RESULT_FIELDS] + list(RESULT_FIELDS)


def _number(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _cost(value: Any) -> str:
    """US dollars, fixed-point (spreadsheets misread 6.5e-05 less often than 0.0000650)."""
    return "" if value is None else f"{value:.7f}"


def judged_fields(result: dict[str, Any]) -> dict[str, str]:
    """The result columns of one judged row."""
    error = result.get("answer_eval_error")
    if error:
        return {
            "#Reference": "", "#PTarget": "", "#Matching": "", "Reasoning": "",
            "Error": " ".join(str(error).split()),
            "Recall": "", "Precision": "", "F1": "",
            "Cost": _cost(result.get("answer_correctness_cost")),
        }
    return {
        "#Reference": _number(result.get("answer_reference_claims_count")),
        "#PTarget": _number(result.get("answer_actual_claims_count")),
        "#Matching": _number(result.get("answer_matching_claims_count")),
        "Reasoning": result.get("answer_correctness_reason") or "",
        "Error": "",
        "Recall": _number(result.get("answer_recall")),
        "Precision": _number(result.get("answer_precision")),
        "F1": _number(result.get("answer_f1")),
        "Cost": _cost(result.get("answer_correctness_cost")),
    }


def _writer(handle: TextIO, header: list[str]) -> csv.DictWriter[str]:
    return csv.DictWriter(handle, fieldnames=header, delimiter="\t", extrasaction="ignore",
                          lineterminator="\n")


def write_output(path: str, header: list[str], rows: Sequence[dict[str, str]]) -> None:
    """The whole output file, written atomically: an interrupted run leaves the previous one."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target, what="the output file") as temporary, \
            open(temporary, "w", encoding="utf-8", newline="") as handle:
        writer = _writer(handle, header)
        writer.writeheader()
        writer.writerows(rows)


def judge_settings(args: argparse.Namespace, environ: dict[str, str]) -> tuple[JudgeSettings | None, str | None]:
    from qareport.settings import resolve_judge_settings

    options = {
        "model": args.model,
        "base_url": args.base_url,
        "azure_endpoint": args.azure_endpoint,
        "azure_deployment": args.azure_deployment,
        "api_version": args.api_version,
        "timeout": args.timeout,
        "max_retries": args.max_retries,
        "concurrency": args.concurrency,
        "temperature": args.temperature,
        "response_format": args.response_format,
        "no_cache": args.no_cache or None,
        "cache_path": args.cache_path,
        "metrics": ["answer_correctness"],
    }
    if args.config_yaml_file_path:
        return _ge6_judge_settings(args.config_yaml_file_path, options, environ)
    return resolve_judge_settings(options=options, config={}, environ=environ)


def _ge6_judge_settings(path: str, options: dict[str, Any],
                        environ: dict[str, str]) -> tuple[JudgeSettings | None, str | None]:
    """The judge of a graphrag-eval 6.x configuration file, which must configure answer correctness."""
    from qareport.ge6_config import read_ge6_config
    from qareport.settings import resolve_ge6_judge_settings

    if not Path(path).is_file():
        raise UsageError(f"{path}: no such configuration file (--config-yaml-file-path)")
    config = read_ge6_config(path)
    if config.generation is None:
        raise UsageError(f"{path}: configures no LLM; add 'llm: {{generation: {{provider, model}}}}', which "
                         "judges answer correctness")
    if not config.answer_correctness:
        raise UsageError(f"{path}: answer correctness is disabled ('answer_correctness.enabled: false'), and this "
                         "command computes only it; enable it or use another configuration")
    given = {key: value for key, value in options.items() if key not in ("model", "base_url", "temperature", "metrics")}
    return resolve_ge6_judge_settings(config, options=given, config={}, environ=environ)


def run(args: argparse.Namespace, *, environ: dict[str, str], stderr: TextIO) -> int:
    from qareport.judge import Judge

    input_header, rows = read_input(args.in_file)
    header = output_header(input_header)
    previous = read_previous(args.out_file, header)
    settings, reason = judge_settings(args, environ)

    done: dict[int, dict[str, str]] = {}
    to_judge: dict[RowKey, list[int]] = {}
    for index, row in enumerate(rows):
        key = row_key(row)
        if key in previous:
            done[index] = {**row, **{f: previous[key].get(f, "") for f in RESULT_FIELDS}}
        else:
            to_judge.setdefault(key, []).append(index)
    reused = len(done)
    if to_judge and settings is None:
        raise UsageError(reason or "no LLM judge configured")

    # Start from a clean file holding the rows already judged, then append as rows are judged.
    write_output(args.out_file, header, [done[i] for i in sorted(done)])
    errors = 0
    judge_failure: str | None = None
    if to_judge:
        assert settings is not None
        cases = [
            {"question_id": str(n), "question_text": key[0], "reference_answer": key[1],
             "actual_answer": key[2], "status": "success", "_key": key}
            for n, key in enumerate(to_judge)
        ]
        with open(args.out_file, "a", encoding="utf-8", newline="") as handle:
            writer = _writer(handle, header)

            def write(result: dict[str, Any]) -> None:
                nonlocal errors
                fields = judged_fields(result)
                for index in to_judge[result["_key"]]:
                    done[index] = {**rows[index], **fields}
                    writer.writerow(done[index])
                    if fields["Error"]:
                        errors += 1
                handle.flush()

            with Judge(settings, templates_dir=args.templates,
                       on_warning=lambda message: print(f"{PROG}: {message}", file=stderr)) as judge:
                judge_failure = judge.judge_results(  # the rows are written as they are judged (on_result)
                    cases, on_progress=None if args.quiet else ProgressBar(stderr),
                    metrics=("answer_correctness",), on_result=write).failure
    write_output(args.out_file, header, [done[i] for i in range(len(rows)) if i in done])
    if not args.quiet:
        judged = len(rows) - reused
        message = f"{PROG}: {len(rows)} rows: {judged} judged, {reused} kept from {args.out_file}"
        if errors:
            message += f", {errors} with an error (run again to retry them)"
        stderr.write(message + "\n")
    if judge_failure:  # the rows it could not judge say "not judged: ..." and are asked again next time
        stderr.write(f"{PROG}: JUDGE FAILED: {judge_failure}\n")
        return JUDGE_FAILED
    return 1 if errors else 0


def command(args: argparse.Namespace) -> int:
    """Run the parsed command: its errors are one line on stderr, as the command's own."""
    _raise_field_size_limit()
    try:
        return run(args, environ=dict(os.environ), stderr=sys.stderr)
    except QAReportError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; run again with the same output to resume", file=sys.stderr)
        return 130

